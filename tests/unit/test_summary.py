"""The capability summary: sentences from known numbers only."""

from rtqual.answers.summary import capability


def result(label, count, p999, p9999, mx, ioc=False):
    r = {
        "label": label,
        "verdict": "pass",
        "params": {"interval_ns": 1_000_000},
        "stats": {"count": count, "p999_ns": p999, "p9999_ns": p9999, "max_ns": mx},
    }
    if ioc:
        r["ioc"] = {"preset": "kek"}
    return r


def test_sentences_follow_the_numbers():
    idle = result("idle", 200_000, 40_000, 60_000, 80_000)
    hack = result("hackbench", 200_000, 90_000, 400_000, 3_000_000)
    lines = capability([idle, hack])
    assert lines[0] == "idle: 99.9 % within 40us, 99.99 % within 60us; worst 80us in 200,000 samples."
    ten_k, one_k, kek = lines[2], lines[3], lines[4]
    assert "every sample within the period under idle" in ten_k and "over the period under hackbench" in ten_k
    assert "99.99 % within it but not every sample under hackbench" in one_k  # p99.99 400us < 1ms < max 3ms
    assert kek.startswith(
        "For the KEK 50 Hz injection cycle (20ms period): every sample within the period under idle, hackbench"
    )
    assert not any("short runs" in s for s in lines)
    mid = capability([result("mid", 20_000, 40_000, 60_000, 80_000)])[0]
    assert mid == "mid: 99.9 % within 40us; worst 80us in 20,000 samples (99.99 % needs 100,000)."


def test_rates_only_for_periodic_wakeups():
    r = result("pio 8 read", 200_000, 1, 1, 2)
    del r["params"]
    assert not any(s.startswith("For ") for s in capability([r]))


def test_short_runs_and_ioc_budget_are_said_honestly():
    lines = capability([result("ioc kek", 500, 300_000, 300_000, 310_000, ioc=True)])
    assert lines[0] == "ioc kek: worst 310us in 500 events answered (too few for 99.9 %: 10,000 needed)."
    assert lines[1] == (
        "IOC input -> output (ioc kek): worst 310us in 500 events (a short run); no budget judged "
        "(give one with --require 'max <= BUDGET' or --profile)."
    )  # a budget is given (profile, requirement), never the maximum seen
    judged = result("ioc kek", 500, 300_000, 300_000, 310_000, ioc=True)
    judged["requirement_verdicts"] = [
        {"requirement": "max < 20ms", "stat": "max", "op": "<", "unit": "ns", "verdict": "pass", "profile": "kek-50hz"},
        {"requirement": "over(100us) <= 1%", "stat": "over", "op": "<=", "unit": "%", "verdict": "fail"},
    ]
    assert capability([judged])[1] == "IOC input -> output (ioc kek): budget max < 20ms (profile kek-50hz) met."
    assert "short runs" in lines[-1]
    assert capability([]) == [] and capability([{"label": "x", "verdict": "error", "stats": {"count": 0}}]) == []

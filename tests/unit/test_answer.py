"""The answer first (rtqual.answers.answer): one line per question, yes / no / undecided from the verdicts,
with the evidence (numbers, load, conditions) and the seconds more a case needs to decide."""

import json

from rtqual.answers import verdict as vd
from rtqual.answers.answer import answer_lines, answers
from rtqual.answers.requirements import gather
from rtqual.results.hist import Histogram
from rtqual.results.stream import read_stream

MS = 1_000_000


def timer_case(
    values_ns, interval_ns=MS, loads=(), require=(), profile=None, degraded=False, conditions=None, overruns=0
):
    """A timer case through the one verdict route, its histogram beside it (overruns: the probe's own)."""
    h = Histogram()
    for v in values_ns:
        h.record(v)
    rt = {"degraded": degraded, "policy": "other" if degraded else "fifo", "mlockall": not degraded}
    params = {"interval_ns": interval_ns, "duration_ns": len(values_ns) * interval_ns}
    recs = [
        {"type": "header", "probe": "timer", "params": params, "rt": {**rt, "dma_latency": True}},
        {"type": "hist", "cpu": 0, **h.to_record()},
        {"type": "summary", "cpus": [{"cpu": 0, "overruns": overruns, "over_threshold": 0}]},
        {"type": "end", "status": 0, "reason": "completed"},
    ]
    label = "timer " + ("+".join(loads) or "idle")
    case = {"id": label.replace(" ", "-"), "label": label, "probe": "timer", "args": [], "params": {}}
    case.update(requirements={}, require=gather(list(require), None), profile=profile)
    lds = [{"name": n, "dead_reason": None, "shortfall": None} for n in loads]
    r = vd.summarize(case, read_stream(json.dumps(x) + "\n" for x in recs), 0, "", loads=lds, conditions=conditions)
    return r, h


def test_unjudged_periodic_cases_answer_the_standard_rates():
    idle, hi = timer_case([20_000] * 3000)
    hack, hh = timer_case([30_000] * 2984 + [2 * MS] * 16, loads=["hackbench"])
    assert idle["verdict"] == hack["verdict"] == "completed"
    got = answers([idle, hack], {idle["id"]: hi, hack["id"]: hh})
    by_q = {a["question"]: a for a in got}
    assert list(by_q) == ["10 kHz loop (100us)", "1 kHz loop (1ms)", "50 Hz KEK cycle (20ms)"]
    assert by_q["1 kHz loop (1ms)"]["answer"] == "no"
    assert by_q["1 kHz loop (1ms)"]["evidence"].startswith("16 of 3,000 wake-ups over 1ms under hackbench")
    kek = by_q["50 Hz KEK cycle (20ms)"]
    assert kek["answer"] == "yes" and kek["needs_s"] is None
    assert kek["evidence"] == "worst 2ms in 3,000 wake-ups under hackbench (worst of 2 cases)"
    lines = answer_lines(got, ["measured in a KVM guest: maxima include the hypervisor's"])
    assert lines[0].startswith("10 kHz loop (100us): no — 16 of 3,000 wake-ups over 100us under hackbench")
    assert lines[-1] == "measured in a KVM guest: maxima include the hypervisor's"


def test_kek_profile_on_a_1ms_timer_judges_the_20ms_cycle():
    """A 5 ms wake-up misses the probe's own 1 ms periods (36 overruns), not the 50 Hz cycle."""
    values = [20_000] * 200_000 + [5 * MS] * 3
    r, h = timer_case(values, profile="kek-50hz", require=vd_profile("kek-50hz"), overruns=36)
    overruns = next(v for v in r["requirement_verdicts"] if v["stat"] == "overruns")
    assert overruns["verdict"] == "pass" and overruns["value"] == 0 and overruns["cycle_ns"] == 20 * MS
    assert "later than one 20ms cycle (this case sampled every 1ms)" in overruns["note"]
    assert r["verdict"] == "pass" and r["profile"] == "kek-50hz"
    (a,) = answers([r], {r["id"]: h})
    assert a["question"] == "50 Hz KEK cycle, 20ms (profile kek-50hz)" and a["answer"] == "yes"
    # the same probe's overruns asked for by the user (no profile) count its own 1 ms periods
    r, _ = timer_case(values, require=["overruns == 0"], overruns=36)
    assert r["verdict"] == "fail" and r["requirement_verdicts"][0]["value"] == 36
    # without a histogram the cycle cannot be counted: it says what it needs
    from rtqual.answers.requirements import evaluate, parse

    v = evaluate(parse("overruns == 0"), r["stats"], None, None, 20 * MS, MS)
    assert v["verdict"] == "inconclusive"
    assert v["note"] == "needs a probe interval of 20ms; this case sampled every 1ms"


def vd_profile(name):
    from rtqual.answers.requirements import profile

    return profile(name)


def test_profile_cycle_passes_when_every_wakeup_fits():
    r, h = timer_case([20_000] * 200_000 + [5 * MS] * 2, profile="kek-50hz", require=vd_profile("kek-50hz"))
    assert [v["verdict"] for v in r["requirement_verdicts"]] == ["pass", "pass", "pass"]
    assert r["verdict"] == "pass" and vd.exit_code(r["verdict"]) == 0
    (a,) = answers([r], {r["id"]: h})
    assert a["answer"] == "yes" and a["evidence"].startswith("worst 5ms in 200,002 wake-ups under no load")
    # sampled every 10 ms, judged at the 1 kHz profile: every 5 ms wake-up misses a 1 ms cycle
    values = [20_000] * 200_000 + [5 * MS] * 2
    r, h = timer_case(values, 10 * MS, profile="1khz-loop", require=vd_profile("1khz-loop"))
    over = next(v for v in r["requirement_verdicts"] if v["stat"] == "overruns")
    assert over["verdict"] == "fail" and over["value"] == 2 and "sampled every 10ms" in over["note"]
    # sampled at the profile's own period: the probe's own overruns count
    r, h = timer_case(values, MS, profile="1khz-loop", require=vd_profile("1khz-loop"), overruns=7)
    over = next(v for v in r["requirement_verdicts"] if v["stat"] == "overruns")
    assert over["value"] == 7 and "cycle_ns" not in over


def test_a_user_overruns_requirement_keeps_the_probe_period():
    r, _ = timer_case([20_000] * 2000, require=["overruns == 0"])
    (v,) = r["requirement_verdicts"]
    assert v["verdict"] == "pass" and "cycle_ns" not in v and r["verdict"] == "pass"


def test_too_few_samples_is_undecided_with_the_seconds_more():
    r, h = timer_case([20_000] * 45_000, require=["p99.99 <= 2ms"])
    assert r["verdict"] == "inconclusive"
    (a,) = answers([r], {r["id"]: h})
    assert a["question"] == "p99.99 ≤ 2ms" and a["answer"] == "undecided"
    assert a["needs_s"] == 55.0  # 55,000 more samples at 1 ms each
    assert a["evidence"].startswith("needs 100,000 samples, about 55s more per case")


def test_a_degraded_case_cannot_pass_a_requirement():
    r, h = timer_case([20_000] * 2000, require=["max <= 1ms"], degraded=True)
    (v,) = r["requirement_verdicts"]
    assert v["verdict"] == "inconclusive" and v["value"] == 20_000 and "DEGRADED" in v["note"]
    assert r["verdict"] == "inconclusive" and vd.exit_code(r["verdict"]) == 4
    assert r["reason"].startswith("requirements not judged: DEGRADED: ran without SCHED_FIFO/RR")
    (a,) = answers([r], {r["id"]: h})
    assert a["answer"] == "undecided" and a["needs_s"] is None and "DEGRADED" in a["evidence"]
    # unjudged, it is only completed, and says why
    r, _ = timer_case([20_000] * 2000, degraded=True)
    assert r["verdict"] == "completed" and vd.headline(r["verdict"], r["reason"]).startswith(
        "COMPLETED — not judged (add --profile or --require); DEGRADED"
    )


def test_a_condition_not_applied_leaves_requirements_undecided_and_is_named():
    cond = {
        "changes": [{"condition": "governor", "after": "performance", "applied": False, "reason": "no cpufreq"}],
        "applied": False,
    }
    r, h = timer_case([20_000] * 2000, require=["max <= 1ms"], conditions=cond)
    assert r["verdict"] == "inconclusive" and r["requirement_verdicts"][0]["verdict"] == "inconclusive"
    assert "condition governor (performance) not applied: no cpufreq" in r["reason"]
    r, h = timer_case([20_000] * 2000, conditions=cond)
    rates = answers([r], {r["id"]: h})
    assert {a["answer"] for a in rates} == {"undecided"}
    assert "governor (performance) not applied" in rates[0]["evidence"]


def test_a_load_that_did_not_hold_makes_requirements_inconclusive():
    case = {
        "id": "1",
        "label": "t",
        "probe": "timer",
        "args": [],
        "params": {},
        "require": gather(["max <= 1ms"], None),
    }
    r, _ = timer_case([20_000] * 10)
    dead = [{"name": "hackbench", "dead_reason": "exited (1)", "shortfall": None}]
    out = vd.decide_case({**r, "loads": dead}, _stream(), 0, require=case["require"])
    assert out["verdict"] == "inconclusive" and out["reason"].startswith("load not running")
    assert out["requirement_verdicts"][0]["verdict"] == "inconclusive"


def _stream():
    recs = [{"type": "header", "probe": "timer", "params": {}}, {"type": "end", "status": 0, "reason": "completed"}]
    return read_stream(json.dumps(x) + "\n" for x in recs)


def test_nothing_measured_gives_no_answer():
    assert answers([]) == [] and answer_lines([]) == []
    assert answers([{"id": "x", "label": "x", "verdict": "error", "stats": {"count": 0}}]) == []


# ---- answers quote the requirement that decides them (issue 35 item 5)


def ioc_case(values_ns, **kw):
    """An IOC case (input -> output events) through the same route."""
    r, h = timer_case(values_ns, **kw)
    r.update(id="ioc-" + r["id"], label="ioc " + r["label"], probe="iocresp", ioc={"preset": "aps"})
    return r, h


def test_a_median_requirement_quotes_the_median_of_the_ioc_cases_not_the_baselines_maximum():
    """APS: 'p50 ≤ 100us: yes — worst 4.74ms in 23,978 wake-ups' quoted the timer baseline's maximum."""
    base, bh = timer_case([20_000] * 23_977 + [4_740_000], require=["p50 <= 100us"])
    ioc, ih = ioc_case([40_000] * 5000 + [90_000] * 10, require=["p50 <= 100us"])
    (a,) = answers([base, ioc], {base["id"]: bh, ioc["id"]: ih})
    assert a["question"] == "p50 ≤ 100us" and a["answer"] == "yes"
    assert a["evidence"].startswith("p50 40") and "events" in a["evidence"]
    assert "4.74ms" not in a["evidence"] and "wake-ups" not in a["evidence"] and "worst" not in a["evidence"]


def test_an_ioc_run_is_not_asked_about_loop_rates_of_its_timer_baseline():
    """An IOC run judged on a budget answers the budget, on the IOC case: not a "10 kHz loop" or the "KEK cycle"
    of its timer baseline (an unjudged IOC run keeps the baseline's rates: the frozen bundles' text)."""
    base, bh = timer_case([20_000] * 3000 + [200_000])
    ioc, ih = ioc_case([40_000] * 3000, require=["max <= 5ms"])
    lines = answer_lines(answers([base, ioc], {base["id"]: bh, ioc["id"]: ih}))
    assert lines[0].startswith("max ≤ 5ms: yes — worst 40us in 3,000 events") and len(lines) == 1, lines
    from rtqual.answers.summary import capability

    assert not any(line.startswith("For ") for line in capability([base, ioc]))
    assert any(line.startswith("For a 10 kHz loop") for line in capability([base]))  # a timer run still is
    unjudged = dict(ioc, requirement_verdicts=None)
    assert any("10 kHz loop" in a["question"] for a in answers([base, unjudged], {base["id"]: bh}))


def test_a_failed_profile_names_the_requirement_that_failed():
    """--profile kek-50hz: every sample inside the 20 ms cycle, the 'no' from p99.99 ≤ 2 ms."""
    r, h = timer_case([20_000] * 199_000 + [3 * MS] * 1000, profile="kek-50hz", require=vd_profile("kek-50hz"))
    (a,) = answers([r], {r["id"]: h})
    assert a["answer"] == "no" and a["question"].startswith("50 Hz KEK cycle")
    assert a["evidence"].startswith("p99.99 ≤ 2ms not met: p99.99 3ms, 1,000 of 200,000 wake-ups over 2ms")
    assert "max" not in a["evidence"] and "overruns" not in a["evidence"]


def test_a_passed_profile_quotes_each_statistic_it_constrains():
    r, h = timer_case([20_000] * 200_000 + [5 * MS] * 2, profile="kek-50hz", require=vd_profile("kek-50hz"))
    (a,) = answers([r], {r["id"]: h})
    assert a["answer"] == "yes"
    worst, p9999, cycles = a["evidence"].split("; ")
    assert worst == "worst 5ms in 200,002 wake-ups under no load"
    assert p9999 == "p99.99 20us" and cycles == "0 wake-ups later than one 20ms cycle"


def test_a_share_requirement_quotes_the_share_over_its_threshold():
    r, h = timer_case([20_000] * 9_990 + [200_000] * 10, require=["over(100us) <= 1%"])
    (a,) = answers([r], {r["id"]: h})
    assert a["answer"] == "yes" and a["evidence"].startswith("0.1 % over 100us in 10,000 wake-ups")

"""The selftest's pure checks on synthetic samples: stalls matched by time, the lie caught, natural spikes
tolerated up to the measured rate, histograms and percentiles against their recomputation."""

from rtqual.answers.evidence import selftest as judged
from rtqual.answers.verdict import exit_code
from rtqual.results.hist import Histogram
from rtqual.selftest import run as selftest

MS, US = 1_000_000, 1_000


def stalls(n, d, claimed=None, start=10 * MS, gap=200 * MS):
    """n stall records of length d, `gap` apart, claiming `claimed` (default d)."""
    out = []
    for k in range(n):
        s = start + k * (d + gap)
        out.append({"cpu": 1, "start_ns": s, "end_ns": s + d, "claimed_ns": claimed or d, "index": k})
    return out


def timer_samples(recs, period=200 * US, until=None, phase=50 * US):
    """A 200 us timer on CPU 1: 10 us latencies, and one sample of the stall's rest after each stall."""
    end = until or recs[-1]["end_ns"] + 300 * MS
    out, t = [], 0
    for r in recs:
        while t + period < r["start_ns"]:
            t += period
            out.append((1, t + 10 * US, 10 * US))
        deadline = r["start_ns"] + phase
        out.append((1, r["end_ns"] + 20 * US, r["end_ns"] + 20 * US - deadline))
        t = deadline + ((r["end_ns"] - deadline) // period + 1) * period
    while t < end:
        out.append((1, t + 10 * US, 10 * US))
        t += period
    return out


def test_honest_stalls_pass():
    recs = stalls(5, 10 * MS)
    row = judged.judge_stalls(timer_samples(recs), recs, 10 * MS, 5, 200 * US)
    assert row["ok"] and row["caught"] == 5 and row["above"] == 5 and row["natural_spikes"] == 0, row
    assert row["window_ns"][0] <= row["seen_min_ns"] <= row["seen_max_ns"] <= row["window_ns"][1]


def test_an_injector_that_lies_fails_both_ways():
    for claimed, real in ((30 * MS, 10 * MS), (10 * MS, 40 * MS)):
        recs = stalls(3, real, claimed=claimed)
        row = judged.judge_stalls(timer_samples(recs), recs, claimed, 3, 200 * US)
        assert not row["ok"] and row["caught"] == 0, row
        assert any("not seen" in p for p in row["problems"])


def test_a_missing_stall_and_one_outside_the_measurement_fail():
    recs = stalls(5, 10 * MS)
    samples = timer_samples(recs[:4], until=recs[3]["end_ns"] + 10 * MS)  # the probe stopped before stall 5
    row = judged.judge_stalls(samples, recs, 10 * MS, 5, 200 * US)
    assert not row["ok"] and row["covered"] == 4 and row["caught"] == 4, row
    row = judged.judge_stalls(timer_samples(recs[:3]), recs[:3], 10 * MS, 5, 200 * US)
    assert not row["ok"] and "the injector made 3 of 5 stalls" in row["problems"]


def test_natural_spikes_are_tolerated_up_to_the_measured_rate():
    recs = stalls(5, 2 * MS)
    base = timer_samples(recs)
    between = [(1, r["end_ns"] + 100 * MS, 3 * MS) for r in recs[:-1]]  # one spike between each two stalls
    row = judged.judge_stalls(base + between, recs, 2 * MS, 5, 200 * US)
    assert not row["ok"] and row["natural_spikes"] == 4 and row["natural_allowed"] == 2, row
    row = judged.judge_stalls(base + between, recs, 2 * MS, 5, 200 * US, natural_rate=lambda thr: 5.0)
    assert row["ok"] and row["natural_allowed"] >= 4, row
    assert judged.spikes_allowed(5) == 2 and judged.spikes_allowed(10, 4.0) == 1 + 2 + 4 + 4


def test_hist_identity_finds_a_changed_bucket():
    samples = [(1, i, 1000 + 37 * i) for i in range(1000)] + [(0, 5, 20_000)]
    mine = judged.raw_hists(samples)
    stored = {str(cpu): h.to_record() for cpu, h in mine.items()}
    assert judged.hist_identity(mine, stored) == []
    wrong = dict(
        stored["1"], counts=[[i, c + 1] if n == 0 else [i, c] for n, (i, c) in enumerate(stored["1"]["counts"])]
    )
    problems = judged.hist_identity(mine, {**stored, "1": wrong})
    assert problems and any("bucket" in p for p in problems)


def test_percentile_identity_compares_the_c_summary_with_python():
    h = Histogram()
    for v in range(1, 12_001):
        h.record(v * 100)
    rec = h.to_record()
    row = {"cpu": 1, **h.stats()}
    assert judged.percentile_identity([row], {"1": rec}) == []
    assert judged.percentile_identity([{**row, "p999_ns": row["p999_ns"] + 100}], {"1": rec})


def test_clock_sanity_and_time_order():
    c = selftest.clock_sanity(reads=10_000)
    assert c["ok"] and c["backward_steps"] == 0 and c["resolution_ns"] >= 1
    assert judged.time_order([(1, 5, 0), (1, 6, 0), (0, 1, 0), (1, 4, 0)]) == 1


def test_plan_has_the_baseline_then_each_probe_under_the_injector():
    cases = selftest.build_cases({"timer": (2 * MS, 10 * MS), "switch": (10 * MS,)}, 3, claim_ns=5 * MS, cpus=(1, 0))
    assert [c["id"] for c in cases] == ["000-timer-natural", "001-timer-2ms", "002-timer-10ms", "003-switch-10ms"]
    assert not cases[0].get("loads")
    load = cases[1]["loads"][0]
    assert load["type"] == "inject" and load["cpu"] == 1 and load["count"] == 3 and load["claim"] == "5000000ns"
    assert "--cpus" in cases[1]["args"] and cases[1]["args"][cases[1]["args"].index("--cpus") + 1] == "1"


def test_each_probe_says_how_the_selftest_measures_it():
    """The selftest's probes and their set-ups come from the probes' own modules (rtqual.probes.<name>.SELFTEST):
    in their order, each set-up valid for its probe on any two CPUs; --quick keeps every size for the timer only."""
    from rtqual import probes

    names = selftest.selftest_probes()
    assert names == ["timer", "event", "switch", "msg", "ioc"]
    assert all(judged.setup(n) is probes.hook(n, "SELFTEST") for n in names)
    assert judged.setup("fake") == {} and judged.setup("no-such-probe") == {}
    cases = selftest.build_cases({n: (10 * MS,) for n in names}, 2, cpus=(3, 2))
    assert [c["selftest"]["probe"] for c in cases] == ["timer", *names]
    assert [selftest.default_sizes(n, quick=True) for n in names] == [selftest.SIZES_NS] + [(10 * MS,)] * 4
    assert all(selftest.default_sizes(n, quick=False) == selftest.SIZES_NS for n in names)
    import pytest

    from rtqual.errors import RtqError

    with pytest.raises(RtqError, match="selftest knows: timer, event, switch, msg, ioc"):
        selftest.build_cases({"fake": (10 * MS,)}, 2, cpus=(1, 0))


def test_the_inject_load_command_line_records_and_bad_options(tmp_path):
    import pytest

    from rtqual.errors import RtqError
    from rtqual.measure.loads import make_load
    from rtqual.measure.loads.inject import injector_records

    ld = make_load({"type": "inject", "cpu": 1, "stall": "10ms", "count": 3, "claim": "30ms"})
    ld.exe = "rtqual-probe"
    argv = ld.argv(0)
    assert argv[:6] == ["rtqual-probe", "inject", "--cpu", "1", "--stall", "10000000ns"]
    assert argv[-2:] == ["--claim", "30000000ns"] and ld.instance_cpus(0) == [1]
    for spec, msg in (({"stall": "300ms"}, "stall must be in"), ({"gap": "5"}, "not a duration")):
        with pytest.raises(RtqError, match=msg):
            make_load({"type": "inject", **spec})
    log = tmp_path / "load-inject-0.log"
    log.write_text(
        '{"type":"header","clock":"CLOCK_MONOTONIC","params":{"cpu":1},"rt":{}}\n'
        "rtqual-probe: warning: something\n"
        '{"type":"stall","cpu":1,"start_ns":5,"end_ns":9,"claimed_ns":4,"index":0}\n'
        '{"type":"end","status":0,"reason":"completed","message":""}\n'
    )
    stalls, header, end = injector_records(log)
    assert stalls == [{"cpu": 1, "start_ns": 5, "end_ns": 9, "claimed_ns": 4, "index": 0}]
    assert header["clock"] == "CLOCK_MONOTONIC" and end["status"] == 0
    assert injector_records(tmp_path / "missing.log") == ([], None, None)


def test_bad_selftest_options_are_one_line(capsys):
    from rtqual import cli

    for argv, fragment in (
        (["selftest", "--probes", "nosuch"], "unknown probe 'nosuch'"),
        (["selftest", "--sizes", "300ms"], "outside 100us..200ms"),
        (["selftest", "--sizes", "10"], "not a duration"),
        (["selftest", "--count", "0"], "--count"),
    ):
        assert cli.main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and fragment in err[0], err


def test_the_verdict_orders_interrupted_skip_error_then_the_checks():
    ok, bad = {"ok": True}, {"ok": False}
    clock = {"ok": True}
    assert judged.verdict(clock, [{**ok, "probe_verdict": "pass"}]) == "pass"
    assert judged.verdict(clock, [{**bad, "probe_verdict": "pass"}]) == "fail"
    assert judged.verdict({"ok": False}, [{**ok, "probe_verdict": "pass"}]) == "fail"
    assert judged.verdict(clock, [{**ok, "probe_verdict": "pass"}], missing=True) == "error"
    assert judged.verdict(clock, [{**bad, "probe_verdict": "skip"}]) == "skip"
    assert judged.verdict(clock, [{**ok, "probe_verdict": "pass"}], interrupted=True) == "inconclusive"
    assert {exit_code(v) for v in ("pass", "fail", "skip", "inconclusive")} == {0, 2, 3, 4}


def pingpong_samples(recs, until=None, rtt=20 * US, other_late=None, host_before=None, shift=0):
    """A back-to-back probe whose waits on CPU 1 are `rtt` long (samples (cpu, wake, latency)), and whose
    wait in progress at each stall wakes 30 us after its end. other_late {k: ns}: stall k begins while the
    other side (CPU 0) is late by that long, so the wait on CPU 1 begins that far into it (or never, when
    longer than the stall: the other side's own sample covers it); host_before {k: ns}: the wait began that
    long before stall k (a host delay on the CPU ran into it); shift: added to every latency (a bad probe)."""
    other_late, host_before = other_late or {}, host_before or {}
    end = until or recs[-1]["end_ns"] + 300 * MS
    out, t = [], 0
    for k, r in enumerate(recs):
        a, b = r["start_ns"], r["end_ns"]
        while t + rtt < a:
            t += rtt
            out.append((1, t, rtt + shift))
        late = other_late.get(k, 0)
        if late >= b - a:  # side A on CPU 0 woke only after the stall: nothing waited on CPU 1
            out.append((0, a + late, late + (a - t)))
            t = a + late
            continue
        begin = a + late if late else t - host_before.get(k, 0)
        wake = b + 30 * US
        out.append((1, wake, wake - begin + shift))
        t = wake
    while t < end:
        t += rtt
        out.append((1, t, rtt + shift))
    return out


def test_a_stall_timed_from_a_late_start_or_merged_with_a_host_delay_is_stated_and_counted():
    recs = stalls(5, 10 * MS)
    for how, late, before in (
        ("in part", {2: 2 * MS}, None),
        ("merged", None, {3: 15 * MS}),
        ("unseen", {1: 15 * MS}, None),
    ):
        samples = pingpong_samples(recs, other_late=late, host_before=before)
        row = judged.judge_stalls(samples, recs, 10 * MS, 5, 0, cpu=1)
        assert row["ok"] and len(row["host"]) == 1 and row["host"][0]["how"] == how, row
        h = row["host"][0]
        assert h["index"] == {"in part": 2, "merged": 3, "unseen": 1}[how]
        if how == "in part":
            assert h["blind_ns"] == 2 * MS and h["seen_ns"] == 8 * MS + 30 * US and row["caught"] == 5
        elif how == "merged":
            assert 15 * MS < h["merged_ns"] <= 15 * MS + 20 * US and row["caught"] == 5
        else:
            assert h["seen_ns"] is None and row["caught"] == 4 and row["unseen"] == 1
            assert row["natural_spikes"] == 1  # side A's own 15 ms wait on CPU 0, after the window
        assert row["caught_whole"] == 4
        assert "stall" in judged._host_line(h)


def test_host_coincidences_beyond_the_natural_tolerance_fail():
    recs = stalls(5, 10 * MS)
    samples = pingpong_samples(recs, other_late={0: 2 * MS, 1: 3 * MS}, host_before={4: 5 * MS})
    row = judged.judge_stalls(samples, recs, 10 * MS, 5, 0, cpu=1)
    assert not row["ok"] and len(row["host"]) == 3 and row["natural_allowed"] == 2, row
    assert any("tolerance 2 together" in p for p in row["problems"])


def test_a_probe_that_adds_to_every_latency_or_times_another_cpu_fails():
    recs = stalls(5, 10 * MS)
    row = judged.judge_stalls(pingpong_samples(recs, shift=3 * MS), recs, 10 * MS, 5, 0, cpu=1)
    assert not row["ok"] and {h["how"] for h in row["host"]} == {"merged"} and len(row["host"]) == 5, row
    elsewhere = [(0, t, 20 * US) for t in range(20 * US, recs[-1]["end_ns"] + 300 * MS, 20 * US)]  # never stalled
    row = judged.judge_stalls(elsewhere, recs, 10 * MS, 5, 0, cpu=1)
    assert not row["ok"] and row["unseen"] == 5 and row["caught"] == 0, row
    row = judged.judge_stalls(elsewhere, recs, 10 * MS, 5, 0, cpu=None)  # every sample a wait on the CPU (ioc)
    assert not row["ok"] and row["unseen"] == 0 and "5 stall(s) not seen in [D-eps, D+delta]" in row["problems"]


def test_a_stall_the_host_lengthened_at_its_end_is_expected_at_its_length_and_the_lies_still_fail():
    recs = stalls(5, 10 * MS)
    recs[2]["end_ns"] += 10 * MS  # the spin's last clock read came 10 ms late: the host held the CPU
    samples = pingpong_samples(recs)
    row = judged.judge_stalls(samples, recs, 10 * MS, 5, 0, spun_ns=10 * MS, cpu=1)
    assert row["ok"] and row["caught_whole"] == 5 and row["seen_max_ns"] > 20 * MS, row
    assert not judged.judge_stalls(samples, recs, 10 * MS, 5, 0, cpu=1)["ok"]  # without the header: missed
    for claimed, real in ((30 * MS, 10 * MS), (10 * MS, 40 * MS)):
        recs = stalls(3, real, claimed=claimed)
        row = judged.judge_stalls(pingpong_samples(recs), recs, claimed, 3, 0, spun_ns=real, cpu=1)
        assert not row["ok"] and row["caught"] == 0, row


def test_a_wait_that_began_after_the_stall_leaves_it_unseen_not_seen_in_part():
    """msg's blind window: the client, held in its own work between a reply and the next send, sends only
    after the stall: its next round trip is short and began after the stall's end."""
    recs = stalls(5, 10 * MS)
    samples = [x for x in pingpong_samples(recs) if not recs[3]["start_ns"] <= x[1] <= recs[3]["end_ns"] + MS]
    samples.append((1, recs[3]["end_ns"] + 100 * US, 60 * US))  # sent 40 us after the stall's end
    row = judged.judge_stalls(sorted(samples, key=lambda x: x[1]), recs, 10 * MS, 5, 0, cpu=1)
    assert row["ok"] and [(h["index"], h["how"]) for h in row["host"]] == [(3, "unseen")], row

"""rtqual capacity's step logic (rtqual.capacity.sweep: geometric climb, bisection, stop rules, the answer), how a
step's result becomes its outcome (rtqual.capacity.run.classify), what is checked before anything runs
(rtqual.capacity.spec) and the printed/drawn answer (rtqual.publish.capacity). Pure: a fake outcome function."""

from __future__ import annotations

import random

import pytest

from rtqual.answers.requirements import texts
from rtqual.capacity import run as cap_run
from rtqual.capacity import spec
from rtqual.capacity.sweep import BROKE, FAIL, NOT_HELD, PASS, STOPPED, Range, Step, answer, next_value, sentence
from rtqual.errors import RtqError
from rtqual.publish import capacity as view
from rtqual.publish.htmlreport import capacity_figures
from rtqual.publish.svgplot import chart


def sweep(r: Range, outcome) -> list[Step]:
    """Run the step logic against outcome(value) -> (outcome, cause)."""
    steps: list[Step] = []
    while (v := next_value(r, steps)) is not None:
        again = [s for s in steps if s.value == v]
        assert all(s.outcome == PASS for s in again), "a load measured again after it broke"
        steps.append(Step(v, *outcome(v)))
    return steps


def knee(threshold: float):
    return lambda v: (PASS, "met") if v < threshold else (FAIL, f"too much at {v:g}")


def test_all_carried_climbs_geometrically_to_the_ceiling_and_stops():
    r = Range(100, 10_000, 2.0)
    steps = sweep(r, lambda v: (PASS, "met"))
    values = [s.value for s in steps]
    assert values[0] == 100 and values[-1] == 10_000
    assert all(b == min(a * 2, 10_000) for a, b in zip(values, values[1:]))
    ans = answer(steps, r)
    assert ans["carries"] == 10_000 and ans["breaks_at"] is None and not ans["stopped"]
    assert "ceiling" in ans["cause"]


@pytest.mark.parametrize("seed", range(40))
def test_the_break_is_bracketed_within_the_resolution(seed):
    rnd = random.Random(seed)
    integer = seed % 2 == 0
    start = rnd.choice([1, 10, 25, 100])
    ceiling = start * rnd.choice([4, 40, 100])
    threshold = rnd.uniform(start * 1.01, ceiling)
    r = Range(start, ceiling, rnd.choice([1.5, 2.0, 3.0]), 0.1, integer=integer)
    steps = sweep(r, knee(threshold))
    ans = answer(steps, r)
    assert all(start <= s.value <= ceiling for s in steps)
    assert len(steps) < r.max_steps
    assert ans["carries"] < threshold <= ans["breaks_at"]
    close = ans["breaks_at"] <= ans["carries"] * 1.1 or (integer and ans["breaks_at"] - ans["carries"] <= 1)
    assert close, (ans, [s.value for s in steps])
    assert ans["cause"] == f"too much at {ans['breaks_at']:g}"  # the cause of the lowest step that broke
    assert all(float(s.value).is_integer() for s in steps) or not integer


def test_a_break_at_the_start_ends_the_sweep_at_once():
    r = Range(100, 10_000)
    steps = sweep(r, knee(50))
    assert [s.value for s in steps] == [100]
    ans = answer(steps, r)
    assert ans["carries"] is None and ans["breaks_at"] == 100
    assert sentence(ans, "records").startswith("carries none of the swept range: breaks at its start, 100 records")


def test_a_load_not_held_is_not_carried():
    r = Range(100, 10_000)
    steps = sweep(r, lambda v: (PASS, "met") if v < 1000 else (NOT_HELD, "the load was not held (put 500/s)"))
    ans = answer(steps, r)
    assert ans["carries"] < 1000 <= ans["breaks_at"]
    assert "not held" in ans["cause"]
    assert all(s.outcome != PASS for s in steps if s.value >= 1000)


def test_a_stopped_step_ends_the_sweep_keeping_what_was_found():
    r = Range(100, 10_000)
    steps = sweep(r, lambda v: (PASS, "met") if v < 400 else (STOPPED, "inconclusive: interrupted"))
    assert [s.value for s in steps] == [100, 200, 400]
    ans = answer(steps, r)
    assert ans["stopped"] and ans["carries"] == 200 and ans["breaks_at"] is None
    assert "stopped at 400" in ans["cause"]
    assert "carries up to 200" in sentence(ans, "")


def test_a_pass_above_a_break_is_not_what_the_host_carries():
    steps = [Step(100, PASS), Step(200, FAIL, "x"), Step(400, PASS)]
    ans = answer(steps, Range(100, 1000))
    assert ans["carries"] == 100 and ans["breaks_at"] == 200


def test_the_load_answered_as_carried_is_measured_again_and_only_that():
    r = Range(100, 10_000, 2.0)
    steps = sweep(r, knee(1000))
    values = [s.value for s in steps]
    ans = answer(steps, r)
    assert values.count(ans["carries"]) == 2 and ans["carried_times"] == 2
    assert len(values) == len(set(values)) + 1  # one repeat, of the answer
    assert "each of the 2 times it was measured" in sentence(ans, "records")
    once = sweep(Range(100, 10_000, 2.0, confirm=0), knee(1000))
    assert len(once) == len(steps) - 1 and answer(once, r)["carried_times"] == 1


def test_a_repeat_that_breaks_moves_the_break_down_and_the_bisection_goes_on():
    seen: dict[float, int] = {}

    def lucky_once(v):  # loads from 600 pass the first time only, as a noisy host may
        seen[v] = seen.get(v, 0) + 1
        return (PASS, "met") if v < 600 or (v < 1000 and seen[v] == 1) else (FAIL, f"too much at {v:g}")

    r = Range(100, 10_000, 2.0)
    steps = sweep(r, lucky_once)
    ans = answer(steps, r)
    assert ans["carries"] < 600 <= ans["breaks_at"] and ans["carried_times"] == 2
    assert ans["breaks_at"] <= ans["carries"] * 1.1 or ans["breaks_at"] - ans["carries"] <= 1


def test_bisection_stops_at_neighbouring_integers():
    r = Range(1, 32, 2.0, resolution=0.01)
    steps = sweep(r, knee(6))
    ans = answer(steps, r)
    assert (ans["carries"], ans["breaks_at"]) == (5, 6)


def test_max_steps_bounds_a_sweep():
    r = Range(1, 1e12, 1.01, integer=False, max_steps=5)
    steps = sweep(r, lambda v: (PASS, "met"))
    assert len(steps) == 5
    assert "5 steps" in answer(steps, r)["cause"]


@pytest.mark.parametrize(
    ("r", "word"),
    [(Range(500, 100), "below the start"), (Range(0, 100), "above 0"), (Range(1, 100, 1.0), "factor")],
)
def test_a_range_that_cannot_be_swept_is_named(r, word):
    assert word in (r.problem() or "")


# ---------------------------------------------------------------- a step's result -> its outcome


def result(verdict="pass", reason="", **kw):
    base = {"id": "001-x", "probe": "iocresp", "verdict": verdict, "reason": reason, "stats": {"count": 1000},
            "params": {"rate": 100, "duration_ns": 10_000_000_000}}  # fmt: skip
    return {**base, **kw}


def queues(overflows=0, high=3):
    q = {p: {"used": 0, "high_water": 0, "overflows": 0} for p in ("low", "medium", "high")}
    q["low"] = {"used": 0, "high_water": high, "overflows": overflows}
    return {"size": 2000, **q}


def test_classify_pass_fail_error_and_stopped():
    assert cap_run.classify(result("pass"))[0] == PASS
    out, cause = cap_run.classify(result("fail", "requirement not met: max"))
    assert out == FAIL and cause.startswith("requirement not met")
    assert cap_run.classify(result("error", "IOC did not answer"))[0] == FAIL
    assert cap_run.classify(result("inconclusive", "interrupted: the bundle holds the part measured"))[0] == STOPPED


def test_a_load_short_of_its_rate_is_not_held_whatever_the_verdict():
    short = {"records": 100, "put": {"requested_rate_hz": 1000, "rate_hz": 400.0}, "monitor": None}
    out, cause = cap_run.classify(result("pass", ioc={"ca_load": short}))
    assert out == NOT_HELD and "400 puts/s of 1,000" in cause
    dead = [{"name": "hackbench", "dead_reason": "exited 1"}]
    assert cap_run.classify(result("inconclusive", "load not running", loads=dead))[0] == NOT_HELD
    scan = {"records": 1000, "put": None, "monitor": {"connected": 1000, "rate_hz": 10_100.0}}
    ioc = {"ca_load": scan, "spec": {"scan": ".1 second"}}  # 1000 records every 0.1 s: 10,000 events/s
    assert cap_run.classify(result("pass", ioc=ioc))[0] == PASS
    behind = {**scan, "monitor": {"connected": 1000, "rate_hz": 6000.0}}
    out, cause = cap_run.classify(result("pass", ioc={**ioc, "ca_load": behind}))
    assert out == NOT_HELD and "6,000 events/s of the 10,000" in cause
    few = result("pass", stats={"count": 100})  # 100 Hz for 10 s asks 1000 samples
    assert cap_run.classify(few)[0] == NOT_HELD
    assert cap_run.classify(result("pass", stats={"count": 1000}))[0] == PASS
    header = {"rate_hz": 8000, "period_ns": 125_000, "duration_ns": 1_000_000_000}  # as a probe's header says it
    assert cap_run.classify(result("pass", probe="msg", params=header, stats={"count": 7839}))[0] == PASS
    assert cap_run.classify(result("pass", probe="msg", params=header, stats={"count": 5000}))[0] == NOT_HELD


def test_a_callback_queue_overflow_breaks_the_step_and_is_named():
    out, cause = cap_run.classify(result("pass", ioc={"callback_queues": queues(overflows=7)}))
    assert out == FAIL and "callback queue low overflowed 7 times" in cause
    out, cause = cap_run.classify(result("fail", "requirement not met: p99", ioc={"callback_queues": queues(high=42)}))
    assert out == FAIL and cause == "requirement not met: p99"


def test_what_gave_first_is_named_from_the_ioc_evidence():
    cpu = {"ioc_threads_s": {"cbLow": 0.5, "CAS-client": 0.1}, "ioc_span_s": 1.0}
    carried = {"stages_p99_ns": {"wake": 20_000, "dispatch": 40_000, "total": 90_000}, "queues": queues(high=2),
               "cpu": cpu}  # fmt: skip
    broke = {"stages_p99_ns": {"wake": 30_000, "dispatch": 400_000, "total": 500_000}, "queues": queues(high=40),
             "cpu": {"ioc_threads_s": {"cbLow": 0.55, "CAS-client": 0.95}, "ioc_span_s": 1.0}}  # fmt: skip
    text = cap_run.what_broke(carried, broke)
    assert "stage dispatch p99 400us (was 40us: x10.0, the stage that grew most)" in text
    assert "IOC thread CAS-client at 95% of a CPU (grew most, saturated, was 10%)" in text
    assert "high-water low 40, medium 0, high 0 of 2000 (was low 2, medium 0, high 0 of 2000)" in text
    alone = cap_run.what_broke(None, broke)  # the start broke: the largest stage, the busiest thread
    assert "stage dispatch p99 400us (the largest stage)" in alone and "IOC thread CAS-client at 95%" in alone
    same = {**broke, "stages_p99_ns": {"wake": 21_000, "dispatch": 41_000}}
    assert "no response stage's p99 grew x1.5" in cap_run.what_broke(carried, same)
    assert cap_run.what_broke(None, {"stats": {}}) == ""  # no IOC evidence (another probe): nothing named
    cas = {**broke, "ca_server": {"channels_max": 2004, "clients_max": 3, "samples": 9, "period_s": 1.0}}
    assert "the CA server at most 3 clients, 2004 channels" in cap_run.what_broke(carried, cas)


def test_every_outcome_is_known():
    assert set(BROKE) <= {PASS, FAIL, NOT_HELD, STOPPED}


# ---------------------------------------------------------------- checked before anything runs


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"name": "nosuch"}, "unknown preset or file 'nosuch'"),
        ({"name": "aps", "dimension": "volts"}, "unknown dimension 'volts'"),
        ({"name": "aps", "start": 500, "ceiling": 100}, "ceiling 100 is below the start 500"),
        ({"name": "madoca", "require": ["p99.999 <= 1ms"]}, "cannot be judged"),
        ({"name": "aps", "scale": -1}, "--scale"),
        ({"name": "aps", "confirm": 9}, "confirm 9 must be 0 to 5"),
    ],
)
def test_bad_input_is_one_line_before_anything_runs(kw, words):
    name = kw.pop("name")
    with pytest.raises(RtqError) as e:
        spec.from_preset(name, **kw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_step_is_lengthened_to_decide_its_requirements():
    sw = spec.from_preset("madoca", require=["p99.9 <= 1ms"], scale=0.1)  # 11,000 samples at 500/s: 22 s
    case = sw.case(sw.range.start, 1)
    assert case["params"]["duration_ns"] >= 22 * 10**9 > sw.step_ns
    assert texts(case["require"]) == ["p99.9 <= 1ms"]


def test_a_load_option_dimension_sets_that_load():
    sw = spec.from_preset("kek", dimension="hackbench.groups", scale=0.1)
    case = sw.case(8, 3)
    assert case["loads"] == [{"type": "hackbench", "groups": 8}] and case["id"] == "003-hackbench.groups-8"
    assert sw.case(4, 1)["loads"][0]["groups"] == 4  # the preset's own load is not changed
    assert spec.PRESETS["kek"]["loads"][0]["groups"] == 2


def test_sweep_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[sweep]\nprobe = "ioc"\ndimension = "put_rate"\nunit = "puts/s"\nstart = 100\nceiling = 800\n'
                 'requirements = ["max <= 10ms"]\nstep = "2s"\n[sweep.params]\nrecords = 100\n')  # fmt: skip
    sw = spec.resolve(str(f))
    assert (sw.dim.name, sw.range.start, sw.range.ceiling, texts(sw.require)) == ("put_rate", 100, 800, ["max <= 10ms"])
    assert sw.case(200, 2)["params"]["put_rate"] == 200
    f.write_text('[sweep]\nprobe = "ioc"\ndimension = "volts"\nstart = 1\nceiling = 2\n')
    with pytest.raises(RtqError, match="unknown dimension 'volts'"):
        spec.resolve(str(f))
    f.write_text('[sweep]\nprobe = "ioc"\ndimension = "records"\nstart = 1\nceiling = 2\ncolour = "red"\n')
    with pytest.raises(RtqError, match="sweep.colour: unknown key"):
        spec.resolve(str(f))


# ---------------------------------------------------------------- the answer shown and drawn


def doc():
    steps = [
        {
            "value": v,
            "case": f"00{i}",
            "stats": {
                "count": 1000,
                "p50_ns": 50_000 * (i + 1),
                "p99_ns": 90_000 * (i + 1),
                "max_ns": 200_000 * (i + 1),
            },
            "queues": queues(high=i),
            "cpu": {"host_busy_pct": 50.0, "ioc_pct": 10.0 * i},
            "verdict": PASS if v < 400 else FAIL,
            "cause": "x",
        }  # fmt: skip
        for i, v in enumerate([100, 200, 283, 400])
    ]
    head = {"sweep": "aps", "dimension": "records", "unit": "records", "requirements": ["p99 <= 300us"]}
    return {**head, "steps": steps, "carries": 283, "breaks_at": 400, "cause": "x", "answer": "carries up to 283"}


def test_show_lines_name_the_answer_and_every_step():
    text = "\n".join(view.lines(doc()))
    assert "carries up to 283" in text
    for v in ("100", "200", "283", "400"):
        assert v in text
    assert "3/0/0 of 2000" in text  # the last step's queues: low high-water 3


def test_figure_draws_latency_the_requirement_and_the_knee():
    figs = capacity_figures(doc())
    assert [f.slug for f in figs] == ["capacity-latency", "capacity-queues"]
    names = [s.name for s in figs[0].series]
    assert names[:3] == ["p50", "p99", "max"] and any(n.startswith("requirement p99") for n in names)
    assert [m[0] for m in figs[0].marks] == [283, 400]
    svg = chart(figs[0])
    assert svg.startswith("<svg") and "knee: carries 283, breaks 400" in svg
    assert figs[0].note == "carries up to 283 records; breaks at 400 records (judged on p99 <= 300us)"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["capacity", "nosuch"], "unknown preset or file"),
        (["capacity", "kek", "--dimension", "clients"], "unknown dimension 'clients'"),
        (["capacity", "aps", "--ceiling", "50"], "ceiling 50 is below the start 100"),
        (["capacity", "madoca", "--require", "p99.999 <= 1ms"], "cannot be judged"),
        (["capacity", "aps", "--require", "p42 <= 1ms"], "unknown statistic 'p42'"),
    ],
)
def test_the_command_says_bad_input_in_one_line_and_exits_1(argv, words, capsys, tmp_path):
    from rtqual import cli

    assert cli.main([*argv, "-o", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not (tmp_path / "b").exists()  # nothing ran


def test_compare_overlays_the_curves_and_lists_each_answer():
    a, b = doc(), doc()
    b.update(carries=200, breaks_at=283, answer="carries up to 200")
    b["steps"] = b["steps"][:3]
    lines = view.compare_lines([("A", a), ("B", b)])
    assert lines[1:3] == ["  A: carries up to 283", "  B: carries up to 200"]
    row_400 = next(line for line in lines if line.strip().startswith("400"))
    assert row_400.split()[-1] == "-"  # B never measured 400 records
    plot = view.overlay_plot([("A", a), ("B", b)])
    assert [s[0] for s in plot["series"]][:2] == ["A p99", "B p99"] and plot["series"][2][0].startswith("requirement")
    assert plot["marks"] == [(400.0, "A breaks 400"), (283.0, "B breaks 283")]
    other = {**b, "dimension": "put_rate"}
    assert view.overlay_plot([("A", a), ("B", other)]) is None  # different loads: no common axis


def test_compare_command_adds_capacity_only_when_a_bundle_has_one():
    from rtqual.commands.compare import with_capacity

    data = [{"path": "/x/a"}, {"path": "/x/b"}]
    assert with_capacity({"cases": []}, [None, None], data) == {"cases": []}
    assert with_capacity("text", [None, None], data) == "text"
    assert with_capacity({"cases": []}, [doc(), None], data)["capacity"] == {"a": doc()}
    assert "a: carries up to 283" in with_capacity("text", [doc(), None], data)

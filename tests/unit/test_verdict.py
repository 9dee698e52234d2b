"""One verdict (rtqual.answers.verdict): the order, the exit-code table, each way a case ends, load
problems, requirements, the run's combination; and no other module of src/ ranks verdicts."""

import json
import re
import signal
from pathlib import Path

import pytest

import rtqual
from rtqual.answers import verdict as vd
from rtqual.answers.requirements import gather, texts
from rtqual.results import bundle
from rtqual.results.hist import Histogram
from rtqual.results.stats import VERDICTS
from rtqual.results.stream import read_stream

CASE = {"id": "001-t", "label": "t", "probe": "timer", "args": [], "params": {}, "requirements": {}}


def stream_of(values_ns, end=True, reason="completed", degraded=False):
    """A probe's stream with these samples on CPU 0; end=False: cut before its end record."""
    h = Histogram()
    for v in values_ns:
        h.record(v)
    rt = {"degraded": degraded, "policy": "other" if degraded else "fifo", "mlockall": not degraded}
    recs = [
        {"type": "header", "probe": "timer", "params": {"duration_ns": 10**9}, "rt": {**rt, "dma_latency": True}},
        {"type": "hist", "cpu": 0, **h.to_record()},
        {"type": "summary", "cpus": [{"cpu": 0, "overruns": 0, "over_threshold": 0}]},
    ]
    if end:
        recs.append({"type": "end", "status": 0, "reason": reason})
    return read_stream(json.dumps(r) + "\n" for r in recs)


def decided(stream, code, require=(), loads=None, load_error=None, interrupted=False, stderr_last="why"):
    case = dict(CASE, require=gather(list(require), None))
    r = vd.summarize(case, stream, code, stderr_last, interrupted, loads=loads, load_error=load_error)
    return r["verdict"], r["reason"]


def test_the_order_is_one_and_names_every_verdict():
    assert vd.ORDER == ("pass", "completed", "skip", "inconclusive", "fail", "error")
    assert set(vd.ORDER) == set(VERDICTS) == set(bundle.VERDICTS) == set(vd.EXIT_CODES)
    assert [vd.rank(v) for v in vd.ORDER] == list(range(6))
    assert vd.worst(["pass", "completed"]) == "completed"  # a passed case and an unjudged one: not a pass
    assert vd.worst(["completed", "skip"]) == "skip"
    assert vd.worst([]) == "pass" and vd.worst(["skip", "pass"]) == "skip"
    assert vd.worst(["inconclusive", "fail"]) == "fail"  # a failed requirement or case decides
    assert vd.worst(["fail", "error", "inconclusive"]) == "error"


def test_the_exit_code_table():
    assert {v: vd.exit_code(v) for v in vd.ORDER} == {
        "pass": 0,
        "completed": 0,
        "skip": 3,
        "inconclusive": 4,
        "fail": 2,
        "error": 1,
    }
    with pytest.raises(KeyError):
        vd.exit_code("regressed")


@pytest.mark.parametrize(
    "code,end,reason,interrupted,want,why",
    [
        (0, True, "completed", False, "completed", "completed"),  # measured, nothing judged: not a pass
        (3, True, "completed", False, "skip", "why"),  # the probe's stderr says what to grant
        (1, True, "completed", False, "error", "why"),
        (-signal.SIGABRT, False, "", False, "error", "SIGABRT"),
        (-signal.SIGINT, False, "", True, "inconclusive", "without an end record"),  # our own Ctrl-C
        (0, False, "", False, "inconclusive", "without an end record"),  # exited, stream cut
        (4, True, "interrupted", False, "inconclusive", "interrupted"),
        (0, True, "completed", True, "inconclusive", "interrupted"),
        (4, True, "out of range", False, "inconclusive", "out of range"),
        (7, True, "completed", False, "error", "why"),
        (None, False, "", False, "inconclusive", "did not run"),
        (None, False, "", True, "inconclusive", "interrupted before the probe ran"),
    ],
)
def test_each_way_a_probe_ends(code, end, reason, interrupted, want, why):
    got, text = decided(stream_of([10_000], end, reason), code, interrupted=interrupted)
    assert got == want and why in text, text


def test_a_probe_that_never_ran_keeps_exit_code_4():
    assert vd.summarize(CASE, stream_of([], end=False), None)["exit_code"] == 4


def test_a_degraded_pass_says_so_and_a_failure_stays_a_failure():
    assert decided(stream_of([10_000], degraded=True), 0)[1].startswith("completed, DEGRADED: ran without")
    assert decided(stream_of([10_000], degraded=True), 1)[1] == "why"


LOAD_DEAD = {"dead_reason": "command exited (1)", "shortfall": None}
LOAD_SHORT = {"dead_reason": None, "shortfall": "20 of 100 Mbit/s"}


@pytest.mark.parametrize(
    "loads,load_error,code,require,want,why",
    [
        ([LOAD_DEAD], None, 0, (), "inconclusive", "load not running: command exited"),
        ([LOAD_SHORT], None, 0, (), "inconclusive", "load short of its rate: 20 of"),
        ([LOAD_DEAD, LOAD_SHORT], None, 0, (), "inconclusive", "load not running"),
        ([], "hackbench: not installed", None, (), "inconclusive", "load did not start: hackbench"),
        ([LOAD_DEAD], None, 0, ["max <= 1us"], "inconclusive", "load not running"),  # not measured as asked
        ([LOAD_DEAD], None, 1, (), "error", "why"),  # the probe's own error stays
        ([LOAD_SHORT], None, 3, (), "skip", "why"),
        ([{"dead_reason": None}], None, 0, (), "completed", "completed"),
    ],
)
def test_load_problems_make_the_case_inconclusive(loads, load_error, code, require, want, why):
    got, text = decided(stream_of([10_000] * 2000), code, require, loads=loads, load_error=load_error)
    assert got == want and why in text, text


def test_requirements_decide_a_clean_case_only():
    s = stream_of([10_000] * 2000)
    assert decided(s, 0, ["max <= 1ms"]) == ("pass", "completed (1 requirement(s) met)")
    got, text = decided(s, 0, ["p99.99 <= 1ms", "max < 5us"])
    assert got == "fail" and text.startswith("requirement not met: max < 5us: fail")  # fail outranks undecided
    got, text = decided(s, 0, ["p99.99 <= 1ms"])
    assert got == "inconclusive" and text.startswith("requirement undecided: p99.99 <= 1ms")
    r = vd.summarize(dict(CASE, require=gather(["max < 5us"], None)), stream_of([10_000], reason="interrupted"), 4, "")
    assert r["verdict"] == "inconclusive" and r["requirement_verdicts"][0]["verdict"] == "fail"  # judged, kept


def test_the_shorthands_reach_the_verdict_by_the_one_route():
    """--max-latency/--p99-latency become requirements when the plan is made; summarize judges only
    `require` (the case's requirements dict is kept as the record of what was given)."""
    limits = {"max_ns": 200_000, "p99_ns": 50_000}
    assert texts(gather(None, None, limits=limits)) == ["max <= 200000ns", "p99 <= 50000ns"]
    assert texts(gather(["max <= 200000ns"], None, limits=limits)) == ["max <= 200000ns", "p99 <= 50000ns"]  # each once
    case = dict(CASE, requirements=limits, require=gather(None, None, limits=limits))
    r = vd.summarize(case, stream_of([10_000] * 1999 + [300_000]), 0, "")
    assert r["verdict"] == "fail" and r["reason"].startswith("requirement not met: max <= 200000ns: fail")
    assert r["requirements"] == limits and [v["requirement"] for v in r["requirement_verdicts"]] == texts(
        case["require"]
    )
    assert vd.summarize(dict(CASE, requirements=limits), stream_of([300_000]), 0, "")["verdict"] == "completed"


@pytest.mark.parametrize(
    "cases,interrupted,error,want",
    [
        (["pass", "pass"], False, False, "pass"),
        (["pass", "completed"], False, False, "completed"),
        (["completed", "skip"], False, False, "skip"),
        (["pass", "skip"], False, False, "skip"),
        (["pass", "inconclusive"], False, False, "inconclusive"),
        (["inconclusive", "fail", "pass"], False, False, "fail"),
        (["fail", "error"], False, False, "error"),
        (["pass", "fail"], True, False, "inconclusive"),  # cut short: not the run that was asked for
        (["pass"], True, True, "error"),
        ([], False, False, "inconclusive"),  # nothing measured
    ],
)
def test_the_run_combination(cases, interrupted, error, want):
    assert vd.run_verdict(cases, interrupted, error) == want


def test_no_other_module_ranks_verdicts_or_maps_them_to_exit_codes():
    """Only answers/verdict.py orders verdicts and maps them to exit codes; errors.py holds the EXIT_
    constants; the probe's own exit codes are read where probes are spawned, and cli.main's RtqError
    handling passes an error's code through."""
    src = Path(rtqual.__file__).parent
    names = "|".join(VERDICTS)
    rules = {
        "an order of verdicts": re.compile(r"VERDICT_ORDER|VERDICT_EXIT|def worst\b|\bORDER\.index"),
        "a ranking by key": re.compile(r"(max|min|sorted)\([^)]*key=[^)]*(ORDER|rank|VERDICT)"),
        "a verdict -> exit code table": re.compile(rf"[\"']({names})[\"']\s*:\s*EXIT_"),
        "an exit code for a verdict": re.compile(r"\bEXIT_(PASS|FAIL|INCONCLUSIVE)\b"),
        "a list of verdicts in order": re.compile(rf"\[\s*[\"']({names})[\"'](\s*,\s*[\"']({names})[\"']){{3,}}"),
        "a result's verdict overridden": re.compile(
            rf"\[[\"']verdict[\"']\](\s*,\s*\w+\[[\"']reason[\"']\])?\s*=\s*[\"']({names})[\"']"
        ),
        "a chain of verdicts": re.compile(rf"[\"']({names})[\"'] if [^\"']* else [\"']({names})[\"'] if"),
        "a verdict before others": re.compile(rf"[\"']({names})[\"'] in \w+\s*:"),
    }
    allowed = {
        "answers/verdict.py": set(rules),
        "answers/requirements.py": {"a result's verdict overridden"},  # evaluate: one requirement's pass/fail
        "errors.py": {"an exit code for a verdict"},  # the constants themselves
        "publish/imports/__main__.py": {"an exit code for a verdict"},  # its main: KeyboardInterrupt -> 4
        "measure/probes/timerlat.py": {"an exit code for a verdict"},  # a probe process: its own exit code, as sink.c's
        "results/bundle/model.py": {"a result's verdict overridden"},  # old bundles read: unjudged "pass" is completed
    }
    found = []
    for f in sorted(src.rglob("*.py")):
        rel = f.relative_to(src).as_posix()
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for what, rule in rules.items():
                if rule.search(line) and what not in allowed.get(rel, set()):
                    found.append(f"{rel}:{n}: {what}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_failed_analysis_leaves_the_requirement_undecided_and_keeps_the_case(monkeypatch):
    """An analysis after the fact (the tail fit of return()) that raises makes its requirement inconclusive
    "analysis failed (why)"; the case keeps its statistics and the other requirements their verdicts."""
    from rtqual.answers.evidence import tail

    def broken(*a, **k):
        raise ValueError("f(a) and f(b) must have different signs")

    monkeypatch.setattr(tail, "analyse", broken)
    s = stream_of([10_000] * 2000)
    for i in range(20):
        s.blocks.add(0, 10_000 + i)
    r = vd.summarize(dict(CASE, require=gather(["return(1d) <= 2ms", "max <= 1ms"], None)), s, 0, "")
    ret, mx = r["requirement_verdicts"]
    assert ret["verdict"] == "inconclusive" and ret["note"].startswith("analysis failed (ValueError: f(a)")
    assert mx["verdict"] == "pass" and r["stats"]["count"] == 2000
    assert r["verdict"] == "inconclusive" and "analysis failed" in r["reason"]


def test_measured_then_judged_is_summarize():
    case = dict(CASE, require=gather(["max <= 1ms"], None))
    first = vd.measured(case, stream_of([10_000] * 10), 0, "")
    assert first["verdict"] == "completed" and "requirement_verdicts" not in first
    first["host_samples"] = {"kept": True}  # keys added between the two are kept
    both = vd.judged(first, case, stream_of([10_000] * 10), 0, "")
    assert both["verdict"] == "pass" and both["host_samples"] == {"kept": True}
    assert {k: v for k, v in both.items() if k != "host_samples"} == vd.summarize(case, stream_of([10_000] * 10), 0, "")

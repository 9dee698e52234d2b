"""One verdict: the order of the verdict names, the exit code of each, and the one function that decides
a case's verdict and the one that decides a run's. Nothing else ranks verdicts or maps them to exit codes.

The order, best first (docs/requirements.md says why):

    pass < completed < skip < inconclusive < fail < error

A verdict is decided by asking in turn: did the measurement end as it should (the probe's exit, its
stream, a signal)? was it measured under what the case asked (its loads)? and only then: does it meet its
requirements? The first question that is not answered "yes" gives the verdict; the requirements (and the
cases of a run) give the worst of theirs. A case measured to its end with no requirement is `completed`:
nothing was judged, so nothing passed. A case measured degraded (no SCHED_FIFO/RR or mlockall, a host
condition not applied) cannot pass a requirement: its requirements are inconclusive, with the reason.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rtqual.answers.evidence import tail
from rtqual.answers.requirements import PROFILES, Requirement, describe, evaluate, probe_cycle_ns
from rtqual.errors import EXIT_ERROR, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_SKIP
from rtqual.results.hist import Histogram
from rtqual.results.stats import case_result, merged_hist
from rtqual.results.stream import Stream

ORDER = ("pass", "completed", "skip", "inconclusive", "fail", "error")  # best first: results.stats.VERDICTS
EXIT_CODES = {
    "pass": EXIT_PASS,
    "completed": EXIT_PASS,
    "skip": EXIT_SKIP,
    "inconclusive": EXIT_INCONCLUSIVE,
    "fail": EXIT_FAIL,
    "error": EXIT_ERROR,
}


def rank(verdict: str) -> int:
    """A verdict's place in ORDER: the higher, the worse."""
    return ORDER.index(verdict)


def worst(verdicts: Iterable[str]) -> str:
    """The worst of several verdicts (of requirements, or of a run's cases); none: pass."""
    return max(verdicts, key=rank, default="pass")


def exit_code(verdict: str) -> int:
    """The exit code of a verdict: 0 pass or completed, 1 error, 2 fail, 3 skip, 4 inconclusive."""
    return EXIT_CODES[verdict]


NOT_JUDGED = "not judged (add --profile or --require)"


def headline(verdict: str, reason: str | None) -> str:
    """A case's or run's verdict in words: 'PASS - completed (2 requirement(s) met)', and for an unjudged one
    'COMPLETED — not judged (add --profile or --require)', with what else its reason says (DEGRADED...)."""
    if verdict != "completed":
        return f"{verdict.upper()} - {reason or ''}"
    rest = (reason or "").removeprefix("completed").lstrip(", ")
    return f"COMPLETED — {NOT_JUDGED}" + (f"; {rest}" if rest else "")


def ending(
    stream: Stream, code: int | None, stderr_last: str, stats: Mapping[str, Any], interrupted: bool
) -> tuple[str, str]:
    """(verdict, reason) of how the probe ended: skip, error or inconclusive with why, or ("completed",
    "completed") when it measured to its end (judging its requirements may make it pass). code None: the
    probe never ran."""
    if code is None:
        return "inconclusive", "interrupted before the probe ran" if interrupted else "the probe did not run"
    if code == EXIT_SKIP:
        return "skip", stderr_last or "probe not supported or not permitted here"
    if code < 0 and not interrupted:
        killed = signal.Signals(-code).name
        return "error", f"probe killed by {killed}; the bundle keeps what it reported before (partial statistics)"
    if code == EXIT_ERROR:
        return "error", stderr_last or f"probe exit {code}"
    if not stream.complete or stream.end is None:
        return "inconclusive", "probe stream ended without an end record (probe crashed or was killed)"
    if interrupted or stream.end.get("reason") == "interrupted":
        return "inconclusive", "interrupted: the bundle holds the part measured"
    if code == EXIT_INCONCLUSIVE or stats.get("out_of_range"):
        return "inconclusive", stream.end.get("message") or stream.end.get("reason", "probe said inconclusive")
    if code != 0:
        return "error", stderr_last or f"probe exit {code}"
    return "completed", "completed"


def degraded_text(rt: Mapping[str, Any]) -> str:
    """What a degraded run lacked, for its verdict: it is not a real-time result."""
    missing = [
        name
        for name, ok in (
            ("SCHED_FIFO/RR", rt.get("policy") in ("fifo", "rr", "deadline")),
            ("mlockall", rt.get("mlockall")),
            ("/dev/cpu_dma_latency", rt.get("dma_latency")),
        )
        if not ok
    ]
    return f"DEGRADED: ran without {', '.join(missing) or 'real-time privileges'}; not a real-time result"


def load_trouble(loads: Sequence[Mapping[str, Any]], load_error: str | None) -> str | None:
    """Why the case was not measured under its loads (one did not start, stopped, or fell short of its
    rate), or None."""
    if load_error:
        return f"load did not start: {load_error}"
    dead = next((ld["dead_reason"] for ld in loads if ld.get("dead_reason")), None)
    if dead:
        return f"load not running: {dead}"
    short = next((ld["shortfall"] for ld in loads if ld.get("shortfall")), None)
    return f"load short of its rate: {short}" if short else None


def degradation(result: Mapping[str, Any], load_error: str | None = None) -> list[str]:
    """Why a case was not measured as asked (empty: it was): a degraded probe (no SCHED_FIFO/RR or mlockall), a
    host condition not applied (result["conditions"]["changes"], measure.conditions), a load that did not
    start, stopped or fell short. Such a case cannot pass (or fail) a requirement."""
    rt = result.get("rt") or {}
    out = [degraded_text(rt)] if rt.get("degraded") else []
    for c in (result.get("conditions") or {}).get("changes") or []:
        if isinstance(c, Mapping) and c.get("applied") is False:
            out.append(f"condition {c.get('condition', '?')} ({c.get('after', '?')}) not applied: {c.get('reason')}")
    trouble = load_trouble(result.get("loads") or [], load_error)
    return out + ([trouble] if trouble else [])


def judge(
    result: dict,
    reqs: Sequence[Requirement],
    hist: Histogram | None,
    profile: str | None = None,
    degraded: Sequence[str] = (),
    blocks: Any = None,
) -> dict:
    """A case result with its requirements judged: "requirement_verdicts" added and, on a clean measurement
    (verdict completed), the verdict made the worst of the requirements' (a failed one decides: no longer run
    can make it pass); an error, skip or inconclusive ending stays what it was. The requirements of `profile`
    are judged against its cycle (requirements.evaluate); on a degraded case (the reasons given) each is
    inconclusive, its value kept, the reason in its note."""
    if not reqs:
        return result
    stats = result.get("stats") or {}
    params = result.get("params") or {}
    own = set(PROFILES[profile]["requirements"]) if profile in PROFILES else set()
    cycle_ns = PROFILES[profile]["period_ns"] if profile in PROFILES else None
    probe_ns = probe_cycle_ns(params)
    try:  # return(PERIOD) requirements: the block maxima's tail, an analysis after the fact
        tail_case = tail.for_requirements(blocks, reqs)
    except Exception as e:  # noqa: BLE001 - a failed analysis leaves its requirements undecided, never the case lost
        tail_case = {"unavailable": f"analysis failed ({type(e).__name__}: {e})"}
    judged = []
    for r in reqs:
        cycle = cycle_ns if r.text in own else None
        v = evaluate(r, stats, hist, params.get("duration_ns"), cycle, probe_ns, tail_case)
        if r.text in own:
            v["profile"] = profile
        if degraded and v["verdict"] != "inconclusive":
            v["verdict"], v["note"] = "inconclusive", "; ".join([*degraded, *([v["note"]] if v["note"] else [])])
        judged.append(v)
    out = dict(result, requirement_verdicts=judged, **({"profile": profile} if profile else {}))
    verdict = worst(v["verdict"] for v in judged)
    if result.get("verdict") not in ("completed", "pass"):  # "pass": a clean case as judged before 0.3
        return out
    if verdict == "pass":
        out["verdict"] = "pass"
        out["reason"] = f"{result.get('reason') or 'completed'} ({len(judged)} requirement(s) met)"
    elif degraded:
        out["verdict"], out["reason"] = "inconclusive", "requirements not judged: " + "; ".join(degraded)
    else:
        words = "requirement not met: " if verdict == "fail" else "requirement undecided: "
        out["verdict"] = verdict
        out["reason"] = words + "; ".join(describe(v) for v in judged if v["verdict"] == verdict)
    return out


def decide_case(
    result: dict,
    stream: Stream,
    code: int | None,
    stderr_last: str = "",
    interrupted: bool = False,
    require: Sequence[Requirement] = (),
    hist: Histogram | None = None,
    load_error: str | None = None,
    profile: str | None = None,
) -> dict:
    """The case result with its "verdict" and "reason" decided (and, with requirements,
    "requirement_verdicts") from how its probe ended (code None: it never ran), whether it was measured
    as asked (degradation: its rt, conditions and loads, load_error) and its requirements (parsed, judged on
    its stats and histogram; a profile's against the profile's cycle). Measured to its end with no
    requirement: completed. A service that did not start and a degraded run come in through the probe's
    ending."""
    verdict, reason = ending(stream, code, stderr_last, result.get("stats") or {}, interrupted)
    rt = result.get("rt") or {}
    if verdict == "completed" and rt.get("degraded"):
        reason = f"{reason}, {degraded_text(rt)}"
    degraded = degradation(result, load_error)
    out = judge({**result, "verdict": verdict, "reason": reason}, require, hist, profile, degraded, stream.blocks)
    trouble = load_trouble(result.get("loads") or [], load_error)
    if trouble and out["verdict"] not in ("error", "skip"):  # not measured as asked, whatever its samples say
        out["verdict"], out["reason"] = "inconclusive", trouble
    return out


def measured(
    case: Mapping[str, Any],
    stream: Stream,
    code: int | None,
    stderr_last: str = "",
    interrupted: bool = False,
    loads: list[dict] | None = None,
    load_error: str | None = None,
    conditions: dict | None = None,
) -> dict:
    """The case result as measured, before any analysis: its statistics (rtqual.results.stats.case_result),
    its loads and host conditions (if any) and the verdict of how it ended and whether it was measured as
    asked (no requirement judged yet). What a run writes first, so no analysis can lose it. A probe that never
    ran keeps exit code 4 (inconclusive)."""
    result = case_result(case, stream, EXIT_INCONCLUSIVE if code is None else code)
    if loads is not None:
        result["loads"] = loads
    if conditions is not None:
        result["conditions"] = conditions
    return decide_case(result, stream, code, stderr_last, interrupted, (), None, load_error)


def judged(
    result: dict,
    case: Mapping[str, Any],
    stream: Stream,
    code: int | None,
    stderr_last: str = "",
    interrupted: bool = False,
    load_error: str | None = None,
) -> dict:
    """A measured case result (measured()) judged on the requirements of the plan (case["require"],
    case["profile"]); the keys added to it since are kept."""
    hist = merged_hist(stream) if stream.hists else None
    require, profile = case.get("require") or (), case.get("profile")
    return decide_case(result, stream, code, stderr_last, interrupted, require, hist, load_error, profile)


def summarize(
    case: Mapping[str, Any],
    stream: Stream,
    code: int | None,
    stderr_last: str = "",
    interrupted: bool = False,
    **measured_kw: Any,
) -> dict:
    """The case result measured and judged: measured() (its other keywords: loads, load_error, conditions), then
    judged()."""
    result = measured(case, stream, code, stderr_last, interrupted, **measured_kw)
    return judged(result, case, stream, code, stderr_last, interrupted, measured_kw.get("load_error"))


def run_verdict(case_verdicts: Sequence[str], interrupted: bool = False, error: bool = False) -> str:
    """A run's verdict, asked like a case's: did it end as it should (error, interrupted: inconclusive),
    then the worst of its cases (none: inconclusive, nothing was measured; a passed case and an unjudged one:
    completed)."""
    if error:
        return "error"
    if interrupted or not case_verdicts:
        return "inconclusive"
    return worst(case_verdicts)

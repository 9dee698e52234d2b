"""One verdict: the order of the verdict names, the exit code of each, and the one function that decides
a case's verdict and the one that decides a run's. Nothing else ranks verdicts or maps them to exit codes.

The order, best first (docs/requirements.md says why):

    pass < skip < inconclusive < fail < error

A verdict is decided by asking in turn: did the measurement end as it should (the probe's exit, its
stream, a signal)? was it measured under what the case asked (its loads)? and only then: does it meet its
requirements? The first question that is not answered "yes" gives the verdict; the requirements (and the
cases of a run) give the worst of theirs.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rtqual.answers.requirements import describe, evaluate, parse
from rtqual.errors import EXIT_ERROR, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_SKIP
from rtqual.results.hist import Histogram
from rtqual.results.stats import case_result, merged_hist
from rtqual.results.stream import Stream

ORDER = ("pass", "skip", "inconclusive", "fail", "error")  # best first: the names of results.stats.VERDICTS
EXIT_CODES = {
    "pass": EXIT_PASS,
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
    """The exit code of a verdict: 0 pass, 1 error, 2 fail, 3 skip, 4 inconclusive."""
    return EXIT_CODES[verdict]


def ending(
    stream: Stream, code: int | None, stderr_last: str, stats: Mapping[str, Any], interrupted: bool
) -> tuple[str, str]:
    """(verdict, reason) of how the probe ended: skip, error or inconclusive with why, or ("pass",
    "completed") when it measured to its end. code None: the probe never ran."""
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
    return "pass", "completed"


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


def judge(result: dict, texts: Sequence[str], hist: Histogram | None) -> dict:
    """A case result with its requirements judged: "requirement_verdicts" added and, on a clean measurement
    (verdict pass), the verdict made the worst of the requirements' (a failed one decides: no longer run
    can make it pass); an error, skip or inconclusive ending stays what it was."""
    if not texts:
        return result
    stats = result.get("stats") or {}
    run_ns = (result.get("params") or {}).get("duration_ns")
    judged = [evaluate(parse(t), stats, hist, run_ns) for t in texts]
    out = dict(result, requirement_verdicts=judged)
    verdict = worst(v["verdict"] for v in judged)
    if result.get("verdict") != "pass":
        return out
    if verdict == "pass":
        out["reason"] = f"{result.get('reason') or 'completed'} ({len(judged)} requirement(s) met)"
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
    require: Sequence[str] = (),
    hist: Histogram | None = None,
    load_error: str | None = None,
) -> dict:
    """The case result with its "verdict" and "reason" decided (and, with requirements,
    "requirement_verdicts") from how its probe ended (code None: it never ran), whether it was measured
    under its loads (result["loads"], load_error) and its requirements (texts, judged on its stats and
    histogram). A service that did not start and a degraded run come in through the probe's ending."""
    verdict, reason = ending(stream, code, stderr_last, result.get("stats") or {}, interrupted)
    rt = result.get("rt") or {}
    if verdict == "pass" and rt.get("degraded"):
        reason = f"{reason}, {degraded_text(rt)}"
    out = judge({**result, "verdict": verdict, "reason": reason}, require, hist)
    trouble = load_trouble(result.get("loads") or [], load_error)
    if trouble and out["verdict"] not in ("error", "skip"):  # not measured as asked, whatever its samples say
        out["verdict"], out["reason"] = "inconclusive", trouble
    return out


def summarize(
    case: Mapping[str, Any],
    stream: Stream,
    code: int | None,
    stderr_last: str = "",
    interrupted: bool = False,
    loads: list[dict] | None = None,
    load_error: str | None = None,
) -> dict:
    """The case result: its statistics (rtqual.results.stats.case_result), its loads (if any) and its
    verdict, judged on the requirements of the plan (case["require"]). A probe that never ran keeps exit
    code 4 (inconclusive)."""
    result = case_result(case, stream, EXIT_INCONCLUSIVE if code is None else code)
    if loads is not None:
        result["loads"] = loads
    hist = merged_hist(stream) if stream.hists else None
    return decide_case(result, stream, code, stderr_last, interrupted, case.get("require") or (), hist, load_error)


def run_verdict(case_verdicts: Sequence[str], interrupted: bool = False, error: bool = False) -> str:
    """A run's verdict, asked like a case's: did it end as it should (error, interrupted: inconclusive),
    then the worst of its cases (none: inconclusive, nothing was measured)."""
    if error:
        return "error"
    if interrupted or not case_verdicts:
        return "inconclusive"
    return worst(case_verdicts)

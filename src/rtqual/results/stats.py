"""Statistics and verdicts of a case: pure functions of the probe's stream, its exit and the requirements."""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from typing import Any

from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_SKIP
from rtqual.results.hist import Histogram
from rtqual.results.stream import Stream
from rtqual.units import format_ns

VERDICT_ORDER = ["pass", "skip", "fail", "inconclusive", "error"]  # worst last


def worst(verdicts: Iterable[str]) -> str:
    """The overall verdict of several cases."""
    vs = list(verdicts)
    return max(vs, key=VERDICT_ORDER.index) if vs else "inconclusive"


def merged_hist(stream: Stream) -> Histogram:
    """Every CPU's histogram merged into one."""
    total = Histogram()
    for rec in stream.hists.values():
        total = total.merge(Histogram.from_record(rec))
    return total


def cpu_stats(hist: Histogram, summary_cpu: dict | None) -> dict:
    """Statistics of one CPU (or all): percentiles from the histogram, overruns and threshold counts from the probe."""
    s = hist.stats()
    s["overruns"] = int((summary_cpu or {}).get("overruns", 0))
    s["over_threshold"] = int((summary_cpu or {}).get("over_threshold", 0))
    s["over_threshold_pct"] = 100.0 * s["over_threshold"] / s["count"] if s["count"] else 0.0
    return s


def summarize(
    case: Mapping[str, Any], stream: Stream, exit_code: int, stderr_last: str, interrupted: bool = False
) -> dict:
    """The case result: statistics per CPU and overall, verdict, warnings. Pure: a function of the stream."""
    warnings = stream.messages()
    summary_by_cpu = {int(c["cpu"]): c for c in (stream.summary or {}).get("cpus", [])}
    per_cpu, total, sums = {}, Histogram(), {"overruns": 0, "over_threshold": 0}
    for cpu, rec in sorted(stream.hists.items()):
        h = Histogram.from_record(rec)
        per_cpu[str(cpu)] = cpu_stats(h, summary_by_cpu.get(cpu))
        total = total.merge(h)
        for k in sums:
            sums[k] += per_cpu[str(cpu)][k]
    stats = cpu_stats(total, sums) if per_cpu else partial_stats(stream)
    header = stream.header or {}
    rt = header.get("rt", {})
    outcome, reason = verdict(stream, exit_code, stderr_last, stats, case.get("requirements") or {}, interrupted)
    if stats.get("out_of_range"):
        warnings.append(f"{stats['out_of_range']} samples exceeded the histogram range (60 s): result inconclusive")
    if rt.get("degraded"):
        warnings.append("degraded: ran without the requested real-time privileges (see header rt)")
        if outcome == "pass":
            reason = f"{reason}, {degraded_text(rt)}"
    if stream.suppressed_events:
        warnings.append(f"{stream.suppressed_events} threshold events not emitted (rate limit); counts are exact")
    raw = (stream.summary or {}).get("raw")
    return {
        "schema_version": 1,
        "id": case["id"],
        "label": case["label"],
        "probe": case["probe"],
        "run_as": case.get("run_as") or case["probe"],
        "params": header.get("params", case.get("params", {})),
        "requirements": case.get("requirements") or {},
        "verdict": outcome,
        "reason": reason,
        "exit_code": exit_code,
        "end": stream.end,
        "degraded": bool(rt.get("degraded")),
        "rt": rt,
        "overhead": header.get("overhead"),
        "start_real_ns": header.get("start_real_ns"),
        "stats": stats,
        "per_cpu": per_cpu,
        "threshold_events": stream.threshold_events[:1000],
        "threshold_events_total": stream.threshold_events_total,
        "suppressed_events": stream.suppressed_events,
        "cpu_time": {str(c): {k: s.get(k) for k in ("cpu_time_ns", "wakeups")} for c, s in summary_by_cpu.items()},
        "raw": raw,
        "warnings": warnings,
        "probe_summary": stream.summary,  # the probe's own summary, with its probe-specific keys
    }


def degraded_text(rt: Mapping[str, Any]) -> str:
    """What a degraded run lacked, for its verdict: it is not a real-time result."""
    missing = [
        name
        for name, ok in (
            ("SCHED_FIFO/RR", rt.get("policy") in ("fifo", "rr")),
            ("mlockall", rt.get("mlockall")),
            ("/dev/cpu_dma_latency", rt.get("dma_latency")),
        )
        if not ok
    ]
    return f"DEGRADED: ran without {', '.join(missing) or 'real-time privileges'}; not a real-time result"


def partial_stats(stream: Stream) -> dict:
    """What a stream without histograms still tells (a crashed probe): the last progress counters."""
    cpus = (stream.last_progress or {}).get("cpus", [])
    count = sum(c.get("count", 0) for c in cpus)
    return {
        "count": count,
        "min_ns": min((c["min_ns"] for c in cpus if c.get("count")), default=0),
        "p50_ns": None,
        "mean_ns": None,
        "p99_ns": None,
        "p999_ns": None,
        "p9999_ns": None,
        "max_ns": max((c.get("max_ns", 0) for c in cpus), default=0),
        "stddev_ns": None,
        "overruns": sum(c.get("overruns", 0) for c in cpus),
        "over_threshold": sum(c.get("over_threshold", 0) for c in cpus),
        "over_threshold_pct": 100.0 * sum(c.get("over_threshold", 0) for c in cpus) / count if count else 0.0,
        "out_of_range": 0,
        "partial": True,
    }


def verdict(
    stream: Stream, exit_code: int, stderr_last: str, stats: dict, req: dict, interrupted: bool
) -> tuple[str, str]:
    """(verdict, reason) of a case from how the probe ended, its statistics and the requirements."""
    if exit_code == EXIT_SKIP:
        return "skip", stderr_last or "probe not supported or not permitted here"
    if exit_code < 0 and not interrupted:
        return "error", (
            f"probe killed by {signal.Signals(-exit_code).name}; the bundle keeps what it "
            f"reported before (partial statistics)"
        )
    if exit_code == EXIT_ERROR:
        return "error", stderr_last or f"probe exit {exit_code}"
    if not stream.complete or stream.end is None:
        return "inconclusive", "probe stream ended without an end record (probe crashed or was killed)"
    if interrupted or stream.end.get("reason") == "interrupted":
        return "inconclusive", "interrupted: the bundle holds the part measured"
    if exit_code == EXIT_INCONCLUSIVE or stats.get("out_of_range"):
        return "inconclusive", stream.end.get("message") or stream.end.get("reason", "probe said inconclusive")
    if exit_code != 0:
        return "error", stderr_last or f"probe exit {exit_code}"
    failed = [
        f"{key[:-3]} {format_ns(stats[key])} > {format_ns(limit)}"
        for key, limit in req.items()
        if stats.get(key) is not None and stats[key] > limit
    ]
    if failed:
        return "fail", "requirement exceeded: " + ", ".join(failed)
    return "pass", "completed" + (" (requirements met)" if req else "")

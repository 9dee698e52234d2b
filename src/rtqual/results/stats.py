"""Statistics of a case: pure functions of the probe's stream. Its verdict is decided in rtqual.answers.verdict;
the verdict names are here because the bundle loader checks them (results never imports answers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rtqual.results.hist import Histogram
from rtqual.results.stream import Stream

# The verdict names a result may carry (the vocabulary; their order and exit codes: rtqual.answers.verdict).
VERDICTS = ("pass", "completed", "skip", "inconclusive", "fail", "error")


def merged_hist(stream: Stream) -> Histogram:
    """Every CPU's histogram merged into one."""
    return Histogram.merged(Histogram.from_record(rec) for rec in stream.hists.values())


def cpu_stats(hist: Histogram, summary_cpu: dict | None) -> dict:
    """Statistics of one CPU (or all): percentiles from the histogram, overruns and threshold counts from the probe."""
    s = hist.stats()
    s["overruns"] = int((summary_cpu or {}).get("overruns", 0))
    s["over_threshold"] = int((summary_cpu or {}).get("over_threshold", 0))
    s["over_threshold_pct"] = 100.0 * s["over_threshold"] / s["count"] if s["count"] else 0.0
    return s


def case_result(case: Mapping[str, Any], stream: Stream, exit_code: int) -> dict:
    """The case result without its verdict (rtqual.answers.verdict decides "verdict" and "reason"):
    statistics per CPU and overall, warnings. Pure: a function of the stream."""
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
    if stats.get("out_of_range"):
        warnings.append(f"{stats['out_of_range']} samples exceeded the histogram range (60 s): result inconclusive")
    if rt.get("degraded"):
        warnings.append("degraded: ran without the requested real-time privileges (see header rt)")
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
        "verdict": None,  # rtqual.answers.verdict
        "reason": "",
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

"""The runner: owns ordering, signals and cleanup; runs cases and flushes each into the bundle.

A case is a dict: {"id", "label", "probe", "args": [probe options], "params": {...},
"requirements": {"max_ns": N, "p99_ns": N}, and from scenarios "loads": [load specs],
"conditions": {"settle_ns", "governor", "frequency_khz", "cpuset"}} (scenario/plan.py makes them).
Optional "service": a callable (case folder -> context manager yielding a dict) with a `key`: something
the probe measures (rtqual run ioc: an EPICS IOC), running just around the probe; the dict it
yielded is stored as result[service.key].
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager, nullcontext

from rtqual import _native
from rtqual.bundle import Bundle, write_json, write_text
from rtqual.conditions import CHANGES_FILE, Conditions, not_applied
from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_SKIP, RtqError
from rtqual.hist import Histogram
from rtqual.host.sampler import Sampler, read_samples, rt_tasks
from rtqual.host.sampler import summarize as summarize_samples
from rtqual.loads import LoadSet, make_load
from rtqual.procs import signal_group
from rtqual.stream import Stream
from rtqual.units import format_ns

STOP_GRACE_S = 10.0
VERDICT_ORDER = ["pass", "skip", "fail", "inconclusive", "error"]  # worst last


def worst(verdicts) -> str:
    """The overall verdict of several cases."""
    vs = list(verdicts)
    return max(vs, key=VERDICT_ORDER.index) if vs else "inconclusive"


class Interrupted:
    """Turns SIGINT/SIGTERM into a flag and forwards them to the running probe."""

    def __init__(self):
        self.signum = 0
        self.proc: subprocess.Popen | None = None

    def _handle(self, signum, _frame):
        self.signum = signum
        if self.proc and self.proc.poll() is None:
            _signal_group(self.proc, signal.SIGINT)

    @contextmanager
    def installed(self):
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    signal_group(proc.pid, sig)


def run_case(case: dict, bundle: Bundle, display, guard: Interrupted, cond: Conditions | None = None) -> dict:
    """One case: conditions applied, loads started and settled, host sampled, the probe run to its end
    (or interruption), then everything stopped and restored, and the case written into the bundle at once."""
    d = bundle.case_dir(case["id"])
    write_json(
        d / "params.json",
        {k: case.get(k) for k in ("id", "label", "probe", "args", "params", "requirements", "loads", "conditions")},
    )
    cond = cond or Conditions(state_path=bundle.path / CHANGES_FILE)
    loads = LoadSet([make_load(spec) for spec in case.get("loads", [])])
    sampler = Sampler(d / "host-samples.jsonl")
    stream, exit_code, stderr_last, problems, changes, restored = Stream(), None, "", [], [], []
    service, service_info = case.get("service"), None
    display.start_case(case)
    try:
        changes = cond.apply(case.get("conditions") or {})
        loads.prepare_all()
        loads.start_all(d)
        if "loads" in cond.cpusets:
            for inst in (i for ld in loads.collect_all() for i in ld["instances"]):
                cond.cpusets["loads"].add_pid(inst["pid"])
        _settle(case, loads, guard)
        if loads.poll_all() is None and not guard.signum:
            write_json(d / "rt-tasks.json", rt_tasks(exclude=[os.getpid()]))
            sampler.start()
            try:
                with service(d) if service else nullcontext() as service_info:
                    stream, exit_code, stderr_last = _measure(
                        case, d, display, guard, loads, cond.cpusets.get("probe"), getattr(service, "env", None)
                    )
            except RtqError as e:
                if not service:
                    raise
                exit_code, stderr_last = EXIT_ERROR, str(e)  # the service did not start
    finally:
        if sampler.is_alive():
            sampler.stop()
        try:
            loads.stop_all()
        except RtqError as e:
            problems.append(str(e))
        restored = cond.restore()
    result = summarize(
        case,
        stream,
        exit_code if exit_code is not None else EXIT_INCONCLUSIVE,
        stderr_last,
        interrupted=bool(guard.signum),
    )
    result["loads"] = loads.collect_all()
    if service:
        result[service.key] = service_info
    result["conditions"] = {"changes": changes, "restored": restored, "applied": not not_applied(changes)}
    result["host_samples"] = (
        summarize_samples(read_samples(d / "host-samples.jsonl")) if (d / "host-samples.jsonl").exists() else None
    )
    dead = next((ld["dead_reason"] for ld in result["loads"] if ld["dead_reason"]), None)
    if dead and result["verdict"] not in ("error", "skip"):
        result["verdict"], result["reason"] = "inconclusive", f"load not running: {dead}"
    result["warnings"] += not_applied(changes) + problems
    _write_hists(d, stream)
    write_json(d / "result.json", result)
    bundle.add_case(result)
    display.end_case(case, result)
    return result


def _settle(case: dict, loads: LoadSet, guard: Interrupted) -> None:
    """Let the loads reach steady state before measuring (interruptible, stops early if one dies)."""
    end = time.monotonic() + (case.get("conditions") or {}).get("settle_ns", 0) / 1e9 if loads.loads else 0
    while time.monotonic() < end and not guard.signum and loads.poll_all() is None:
        time.sleep(min(0.1, max(end - time.monotonic(), 0)))


def _measure(
    case: dict, d, display, guard: Interrupted, loads: LoadSet, cpuset=None, env: dict | None = None
) -> tuple[Stream, int, str]:
    """Run the probe (inside the probe cpuset if any, with the service's env if any), keeping its
    stream verbatim; a load dying mid-case stops the probe early."""
    stream = Stream()
    with open(d / "probe.stderr", "w") as err, open(d / "stream.jsonl", "w", buffering=1) as log:
        join = (lambda: cpuset.add_pid(os.getpid())) if cpuset else None  # before the probe pins its threads
        proc = _native.spawn(case["probe"], case["args"], err, preexec=join, env=env)
        guard.proc = proc
        if guard.signum:  # interrupted while the service (an IOC) was starting: stop at once
            _signal_group(proc, signal.SIGINT)
        try:
            for line in proc.stdout:
                log.write(line)
                rec = stream.feed(line)
                if rec is None:
                    continue
                display.record(case, rec)
                if rec["type"] == "progress" and loads.poll_all():
                    _signal_group(proc, signal.SIGINT)
        finally:
            exit_code = _stop(proc)
            guard.proc = None
    tail = (d / "probe.stderr").read_text(errors="replace").strip().splitlines()[-1:]
    return stream, exit_code, tail[0] if tail else ""


def _write_hists(d, stream: Stream) -> None:
    hists = {str(cpu): rec for cpu, rec in sorted(stream.hists.items())}
    if not hists:
        return
    merged = merged_hist(stream)
    write_json(d / "hist.json", {"layout": "hdr", "per_cpu": hists, "all": merged.to_record()})
    for cpu, rec in hists.items():
        write_text(d / f"hist-cpu{cpu}.hdr", Histogram.from_record(rec).encode_hdr() + "\n")
    write_text(d / "hist-all.hdr", merged.encode_hdr() + "\n")


def _stop(proc: subprocess.Popen) -> int:
    """Wait for the probe; SIGINT, then SIGKILL its whole group if it does not finish."""
    for sig in (None, signal.SIGINT, signal.SIGKILL):
        if sig is not None:
            _signal_group(proc, sig)
        try:
            return proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def merged_hist(stream: Stream) -> Histogram:
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


def summarize(case: dict, stream: Stream, exit_code: int, stderr_last: str, interrupted: bool = False) -> dict:
    """The case result: statistics per CPU and overall, verdict, warnings. Pure: a function of the stream."""
    warnings = list(stream.warnings) + list(stream.problems)
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
    verdict, reason = _verdict(stream, exit_code, stderr_last, stats, case.get("requirements") or {}, interrupted)
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
        "params": header.get("params", case.get("params", {})),
        "requirements": case.get("requirements") or {},
        "verdict": verdict,
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


def _verdict(stream, exit_code, stderr_last, stats, req, interrupted) -> tuple[str, str]:
    if exit_code == EXIT_SKIP:
        return "skip", stderr_last or "probe not supported or not permitted here"
    if exit_code < 0 and not interrupted:
        return "error", (
            f"probe killed by {signal.Signals(-exit_code).name}; the bundle keeps what it "
            f"reported before (partial statistics)"
        )
    if exit_code == EXIT_ERROR:
        return "error", stderr_last or f"probe exit {exit_code}"
    if not stream.complete:
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

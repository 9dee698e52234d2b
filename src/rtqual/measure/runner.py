"""One case, end to end: conditions applied, loads started and settled, the service and the probe run,
everything stopped and restored, and the case written into the bundle at once. The order of cases, the
bundle, the signal guard and the services belong to the run (rtqual.measure.run.Run); statistics and verdicts are
pure functions in rtqual.results.stats (re-exported here for old imports).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rtqual.answers import spikes
from rtqual.answers.requirements import judge
from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, RtqError
from rtqual.measure import _native, trace
from rtqual.measure.case import Case
from rtqual.measure.conditions import Conditions, not_applied
from rtqual.measure.host.sampler import Sampler, iter_samples, rt_tasks
from rtqual.measure.host.sampler import summarize as summarize_samples
from rtqual.measure.loads import LoadSet
from rtqual.measure.trace import Tracer, TraceUnavailable
from rtqual.procs import signal_group, stop_group
from rtqual.results.bundle import Bundle, write_json, write_text
from rtqual.results.hist import Histogram
from rtqual.results.stats import VERDICT_ORDER, cpu_stats, merged_hist, partial_stats, summarize, verdict, worst
from rtqual.results.stream import Stream
from rtqual.units import online_cpus

__all__ = [
    "VERDICT_ORDER",
    "Interrupted",
    "cpu_stats",
    "merged_hist",
    "partial_stats",
    "run_case",
    "summarize",
    "verdict",
    "worst",
]
RECORD_KEYS = ("id", "label", "probe", "run_as", "args", "params", "requirements", "require", "loads", "conditions")


class Interrupted:
    """Turns SIGINT/SIGTERM into a flag and forwards them to the running probe."""

    def __init__(self) -> None:
        self.signum = 0
        self.proc: subprocess.Popen | None = None

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signum = signum
        if self.proc and self.proc.poll() is None:
            signal_group(self.proc.pid, signal.SIGINT)

    @contextmanager
    def installed(self) -> Iterator[Interrupted]:
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def run_case(
    case: Case,
    bundle: Bundle,
    display: Any,
    guard: Interrupted,
    cond: Conditions,
    loads: LoadSet,
    service: Any = None,
    raw_bytes: int = 0,
) -> dict:
    """One case (with its runnable args: the service's options filled in): conditions applied, its
    prepared loads started and settled, host sampled, the service and the probe run to its end (or
    interruption), then everything stopped and restored, and the case written into the bundle at once.
    A load that does not start makes the case inconclusive; the run goes on."""
    d = bundle.case_dir(case.id)
    bundle.start_case(case.id)
    if raw_bytes:
        case = case.with_args([*case.args, "--raw", str(d / "raw.bin"), "--raw-max-bytes", str(raw_bytes)])
    view = case.view()
    write_json(d / "params.json", {k: view.get(k) for k in RECORD_KEYS})
    sampler = Sampler(d / "host-samples.jsonl")
    stream, exit_code, stderr_last = Stream(), None, ""
    problems: list[str] = []
    changes: list[dict] = []
    restored: list[dict] = []
    service_info, load_error = None, None
    tracer: Tracer | None = None
    windows: list[dict] = []
    display.start_case(view)
    try:
        changes = cond.apply(case.conditions)
        load_error = _start_loads(loads, d, cond, case.conditions.get("settle_ns", 0), guard)
        if load_error is None and loads.poll_all() is None and not guard.signum:
            write_json(d / "rt-tasks.json", rt_tasks(exclude=[os.getpid()]))
            sampler.start()
            tracer = _start_trace(case, cond, problems)
            try:
                with service(d) if service else nullcontext() as service_info:
                    stream, exit_code, stderr_last = _measure(
                        view, d, display, guard, loads, cond.cpusets.get("probe"), getattr(service, "env", None), tracer
                    )
            except RtqError as e:
                if not service:
                    raise
                exit_code, stderr_last = EXIT_ERROR, str(e)  # the service did not start
    finally:
        if tracer is not None:  # the instance is removed first, whatever happened
            windows = tracer.stop()
        if sampler.is_alive():
            sampler.stop()
        try:
            loads.stop_all()
        except RtqError as e:
            problems.append(str(e))
        restored = cond.restore()
    result = summarize(
        view,
        stream,
        exit_code if exit_code is not None else EXIT_INCONCLUSIVE,
        stderr_last,
        interrupted=bool(guard.signum),
    )
    result = judge(result, case.require, merged_hist(stream) if stream.hists else None)
    result["loads"] = loads.collect_all()
    if service:
        result[service.key] = service_info
    result["conditions"] = {"changes": changes, "restored": restored, "applied": not not_applied(changes)}
    samples = d / "host-samples.jsonl"
    result["host_samples"] = summarize_samples(iter_samples(samples)) if samples.exists() else None
    dead = next((ld["dead_reason"] for ld in result["loads"] if ld["dead_reason"]), None)
    short = next((ld["shortfall"] for ld in result["loads"] if ld.get("shortfall")), None)
    if load_error:
        result["verdict"], result["reason"] = "inconclusive", f"load did not start: {load_error}"
    elif dead and result["verdict"] not in ("error", "skip"):
        result["verdict"], result["reason"] = "inconclusive", f"load not running: {dead}"
    elif short and result["verdict"] not in ("error", "skip"):
        result["verdict"], result["reason"] = "inconclusive", f"load short of its rate: {short}"
    result["warnings"] += not_applied(changes) + problems
    if tracer is not None:
        result["trace"] = tracer.info()
        result["spikes"] = _write_spikes(d, windows)
    _write_hists(d, stream)
    write_json(d / "result.json", result)
    bundle.add_case(result)
    display.end_case(view, result)
    return result


def _start_loads(loads: LoadSet, d: Path, cond: Conditions, settle_ns: int, guard: Interrupted) -> str | None:
    """Start the case's loads (into the loads cpuset if any) and let them settle; why they did not start,
    or None."""
    try:
        loads.start_all(d, journal=cond)
    except RtqError as e:
        return str(e)
    if "loads" in cond.cpusets:
        for inst in (i for ld in loads.collect_all() for i in ld["instances"]):
            cond.cpusets["loads"].add_pid(inst["pid"])
    _settle(settle_ns, loads, guard)
    return None


def _start_trace(case: Case, cond: Conditions, problems: list[str]) -> Tracer | None:
    """The case's tracer when its params ask for --trace, started on the probe's CPUs (all online when it
    names none); when tracing cannot run here, one warning in problems and the case runs untraced."""
    if not case.params.get("trace"):
        return None
    tracer = Tracer(case.params.get("cpus") or online_cpus(), journal=cond)
    try:
        tracer.start()
    except TraceUnavailable as e:
        problems.append(f"--trace: {e}; the case ran without tracing")
        return None
    for note in tracer.notes:
        print(f"rtqual: {note}", file=sys.stderr)
    return tracer


def _write_spikes(d: Path, windows: list[dict]) -> list[dict]:
    """Each spike's trace lines in spikes/spike-NNN-cpuC.txt and its analysis (rtqual.answers.spikes), in time order."""
    out = []
    if windows:
        (d / "spikes").mkdir(exist_ok=True)
    for i, w in enumerate(sorted(windows, key=lambda w: w["wake_ns"]), 1):
        name = f"spikes/spike-{i:03d}-cpu{w['cpu']}.txt"
        write_text(d / name, "".join(line + "\n" for line in w["lines"]))
        analysis = spikes.analyze(w["lines"], w["cpu"], w["deadline_ns"], w["wake_ns"], w["policies"], w["complete"])
        rec = spikes.spike_record(w["cpu"], w["wake_ns"], w["latency_ns"], analysis, name)
        rec["complete"] = w["complete"]
        out.append(rec)
    return out


def _settle(settle_ns: int, loads: LoadSet, guard: Interrupted) -> None:
    """Let the loads reach steady state before measuring (interruptible, stops early if one dies)."""
    end = time.monotonic() + settle_ns / 1e9 if loads.loads else 0
    while time.monotonic() < end and not guard.signum and loads.poll_all() is None:
        time.sleep(min(0.1, max(end - time.monotonic(), 0)))


def _measure(
    case: dict,
    d: Path,
    display: Any,
    guard: Interrupted,
    loads: LoadSet,
    cpuset: Any = None,
    env: dict | None = None,
    tracer: Tracer | None = None,
) -> tuple[Stream, int, str]:
    """Run the probe (inside the probe cpuset if any, with the service's env if any), keeping its
    stream verbatim and giving its threshold events to the tracer (if any); a load dying mid-case stops
    the probe early."""
    stream = Stream()
    with open(d / "probe.stderr", "w") as err, open(d / "stream.jsonl", "w", buffering=1) as log:
        join = (lambda: cpuset.add_pid(os.getpid())) if cpuset else None  # before the probe pins its threads
        proc = _native.spawn(case["probe"], case["args"], err, preexec=join, env=env)
        guard.proc = proc
        if guard.signum:  # interrupted while the service (an IOC) was starting: stop at once
            signal_group(proc.pid, signal.SIGINT)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                rec = stream.feed(line)
                if rec is None:
                    continue
                display.record(case, rec)
                if tracer is not None:
                    trace.feed(tracer, rec)
                if rec["type"] == "progress" and loads.poll_all():
                    signal_group(proc.pid, signal.SIGINT)
        finally:
            exit_code = stop_group(proc)
            guard.proc = None
    tail = (d / "probe.stderr").read_text(errors="replace").strip().splitlines()[-1:]
    return stream, exit_code, tail[0] if tail else ""


def _write_hists(d: Path, stream: Stream) -> None:
    """hist.json (every CPU and all) and one HdrHistogram text file each."""
    hists = {str(cpu): rec for cpu, rec in sorted(stream.hists.items())}
    if not hists:
        return
    merged = merged_hist(stream)
    write_json(d / "hist.json", {"layout": "hdr", "per_cpu": hists, "all": merged.to_record()})
    for cpu, rec in hists.items():
        write_text(d / f"hist-cpu{cpu}.hdr", Histogram.from_record(rec).encode_hdr() + "\n")
    write_text(d / "hist-all.hdr", merged.encode_hdr() + "\n")

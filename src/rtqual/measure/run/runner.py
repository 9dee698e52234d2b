"""One case, end to end: conditions applied, loads started and settled, the probe session run (the service,
the tracer and the probe: rtqual.measure.run.session; its records kept in stream.jsonl and shown), everything stopped
and restored, and the case written into the bundle at once. The order of cases, the bundle, the signal guard and
the services belong to the run (rtqual.measure.run.driver.Run); statistics are pure functions in rtqual.results.stats
(re-exported here for old imports), the verdict is rtqual.answers.verdict's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rtqual.answers import verdict
from rtqual.answers.requirements import texts
from rtqual.errors import EXIT_ERROR, RtqError
from rtqual.measure.conditions.applier import Conditions, not_applied
from rtqual.measure.host import osnoise
from rtqual.measure.host.facts import smi_counts, smi_delta
from rtqual.measure.host.sampler import Sampler, iter_samples, rt_tasks
from rtqual.measure.host.sampler import summarize as summarize_samples
from rtqual.measure.host.trace import CAPTURE_PER_HOUR
from rtqual.measure.loads import LoadSet
from rtqual.measure.run.case import Case
from rtqual.measure.run.session import Interrupted, Session, spike
from rtqual.results.bundle import Bundle, names, write_json, write_text
from rtqual.results.hist import Histogram
from rtqual.results.stats import cpu_stats, merged_hist, partial_stats
from rtqual.results.stream import Stream
from rtqual.units import online_cpus

__all__ = ["Interrupted", "cpu_stats", "merged_hist", "partial_stats", "run_case"]
RECORD_KEYS = ("id", "label", "probe", "run_as", "args", "params", "requirements", "require", "loads", "conditions")


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
    write_json(d / "params.json", {k: view.get(k) for k in RECORD_KEYS} | {"require": texts(case.require)})
    sampler = Sampler(
        d / names.HOST_SAMPLES, record=d / names.ENVIRONMENT, cpus=case.params.get("cpus") or online_cpus()
    )
    problems: list[str] = []
    changes: list[dict] = []
    restored: list[dict] = []
    load_error = None
    capture_ns = case.params.get("capture_ns")  # --capture OVER: a ring read at spikes (trace.Ring), not --trace
    traced = case.params.get("trace") or capture_ns
    trace_cpus = (case.params.get("cpus") or online_cpus()) if traced else None
    option = "--capture" if capture_ns else "--trace"
    smi: dict | None = None  # MSR_SMI_COUNT before and after the probe (host facts), "not readable" elsewhere
    session = Session(
        case.probe,
        case.args,
        d,
        guard,
        service=service,
        keep_stream=True,
        trace_cpus=trace_cpus,
        journal=cond,
        capture=(capture_ns, CAPTURE_PER_HOUR) if capture_ns else None,
        warn=lambda why: problems.append(f"{option}: {why}; the case ran without tracing"),
    )
    windows: list[dict] = []  # the traced spikes

    def on_record(rec: dict) -> bool:
        """Where a bundle case's records go (besides stream.jsonl): the display; a load dying mid-case stops
        the probe early."""
        display.record(view, rec)
        return rec["type"] == "progress" and bool(loads.poll_all())

    display.start_case(view)
    try:
        changes = cond.apply(case.conditions)
        load_error = _start_loads(loads, d, cond, case.conditions.get("settle_ns", 0), guard)
        if load_error is None and loads.poll_all() is None and not guard.signum:
            write_json(d / "rt-tasks.json", rt_tasks(exclude=[os.getpid()]))
            sampler.start()
            smi_cpus = case.params.get("cpus") or online_cpus()
            smi_before = smi_counts(smi_cpus)  # the SMIs of the case (MSR_SMI_COUNT where readable)
            session.cpuset = cond.cpusets.get("probe")  # made by cond.apply above
            try:
                session.run(on_record, windows.extend)
                if case.probe == "noise" and session.exit_code == 0 and not guard.signum:
                    osnoise.beside(session.stream, cond, lambda: bool(guard.signum), hw=bool(case.params.get("hw")))
            except RtqError as e:
                if not service:
                    raise
                session.exit_code, session.stderr_last = EXIT_ERROR, str(e)  # the service did not start
            smi = smi_delta(smi_before, smi_counts(smi_cpus))
    finally:
        if sampler.is_alive():
            sampler.stop()
        try:
            loads.stop_all()
        except RtqError as e:
            problems.append(str(e))
        restored = cond.restore()
    stream, tracer = session.stream, session.tracer
    # the verdict: how the probe ended, its loads and conditions, its requirements (rtqual.answers.verdict)
    ended = (stream, session.exit_code, session.stderr_last, bool(guard.signum))
    result = verdict.measured(
        view,
        *ended,
        loads=loads.collect_all(),
        load_error=load_error,
        conditions={"changes": changes, "restored": restored, "applied": not not_applied(changes)},
    )
    if service:
        result[service.key] = session.service_info
    samples = d / names.HOST_SAMPLES
    result["host_samples"] = summarize_samples(iter_samples(samples)) if samples.exists() else None
    result["warnings"] += not_applied(changes) + problems
    if smi is not None:
        result["smi"] = smi
    if tracer is not None:
        result["trace"] = tracer.info()
        result["spikes"] = _write_spikes(d, windows)
    _write_hists(d, stream)
    write_json(d / "result.json", result)  # the measurement on disk before any analysis after the fact
    result = verdict.judged(result, view, *ended, load_error=load_error)  # requirements (a tail fit) judged
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


def _write_spikes(d: Path, windows: list[dict]) -> list[dict]:
    """Each spike's trace lines in spikes/spike-NNN-cpuC.txt and its analysis (answers.evidence.spikes), by time."""
    out = []
    if windows:
        (d / "spikes").mkdir(exist_ok=True)
    for i, w in enumerate(sorted(windows, key=lambda w: w["wake_ns"]), 1):
        name = f"spikes/spike-{i:03d}-cpu{w['cpu']}.txt"
        write_text(d / name, "".join(line + "\n" for line in w["lines"]))
        rec = spike(w, name)
        rec["complete"] = w["complete"]
        out.append(rec)
    return out


def _settle(settle_ns: int, loads: LoadSet, guard: Interrupted) -> None:
    """Let the loads reach steady state before measuring (interruptible, stops early if one dies)."""
    end = time.monotonic() + settle_ns / 1e9 if loads.loads else 0
    while time.monotonic() < end and not guard.signum and loads.poll_all() is None:
        time.sleep(min(0.1, max(end - time.monotonic(), 0)))


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

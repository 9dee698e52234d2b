"""The monitor's one owner: checks everything that can be wrong first (one line, exit 1), starts its sink (the
outputs, rtqual.monitor.outputs), the service (an IOC) and the probe with an unbounded duration and --hist-delta,
turns its stream into windows and hands each closed window and each traced spike to the sink; it publishes nothing
itself. SIGINT/SIGTERM stop the probe; its last records close the last window, which is
written everywhere before the monitor exits 0."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rtqual import probes as native_table
from rtqual.answers.requirements import Requirement
from rtqual.errors import RtqError
from rtqual.measure.run.session import Interrupted, Session, prepare, without_options
from rtqual.probes.catalog import ALL_PROBES
from rtqual.results.window import Windows
from rtqual.units import format_cpulist, format_duration, format_ns, online_cpus
from rtqual.util import remove_orphan_dirs

UNBOUNDED = "8760h"  # a year, the probes' longest --duration: a monitor is stopped by a signal long before
STORE_FLUSH_S = 5.0
FIRST_WINDOW_NS = 10 * 10**9  # the first window closes early: a new monitor says something within seconds
TEMP_PREFIX = "rtqual-monitor-"  # + its pid + "-": the next monitor (and rtqual restore) removes a killed one's


@dataclass
class Options:
    """What `rtqual monitor` was asked, beyond the probe's own options (already in case["args"])."""

    window_ns: int
    listen: str | None = "127.0.0.1:9841"
    textfile: str | None = None
    use_store: bool = True
    store: str | None = None  # its URL; None: RTQUAL_STORE or the default store; "off": none
    pvs: str | None = None
    json: bool = False
    bounded: bool = False  # the user gave --duration or --loops: the probe ends by itself, then the monitor
    every_progress: int = 0  # compressed time: a window per N progress records (hidden --window-progress)
    trace: bool = False  # --trace: each spike's culprits (rtqual.measure.host.trace), printed and counted in /metrics
    capture_ns: int | None = (
        None  # --capture OVER: spikes over it captured from a ring (rtqual.measure.host.trace.Ring)
    )
    capture_per_hour: int = 60  # --capture-per-hour: captures kept an hour, the rest counted
    on_spike: Any = None  # --on-spike: an rtqual.monitor.actions.Action run for each captured spike
    require: list[Requirement] = field(default_factory=list)  # --require, --profile (parsed): the PVs' alarm limits


def monitorable(name: str) -> bool:
    """A probe the monitor can run without end: its --duration reaches a year (the latency probes), or
    a hidden pipeline probe (fake)."""
    p = ALL_PROBES[name]
    duration = p.params.get("duration")
    return p.hidden or (duration is not None and (duration.hi or 0) >= 365 * 86400 * 10**9)


def progress_ms(window_ns: int) -> int:
    """Period of the probe's progress (and hist_delta) records: 1 s, or a quarter window if shorter."""
    return max(50, min(1000, window_ns // 4_000_000))


def probe_args(case: dict, window_ns: int, bounded: bool) -> list[str]:
    """The case's options, unbounded unless the user bounded it (--duration, --loops), with the
    hist_delta records."""
    args = list(case["args"])
    if not bounded and "duration" in ALL_PROBES[case.get("run_as") or case["probe"]].params:
        args = [*without_options(args, ["duration"]), "--duration", UNBOUNDED]
    entry = native_table.entry(case["probe"]) or {}
    paced = any(o["name"] == "--progress-ms" for o in entry.get("options", ()))  # fake paces its own progress
    return [*args, "--hist-delta", *(["--progress-ms", str(progress_ms(window_ns))] if paced else [])]


def check_folder(path: str, option: str) -> Path:
    """An existing folder we may write into."""
    folder = Path(path)
    if not folder.is_dir():
        raise RtqError(f"{option} {path}: not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RtqError(f"{option} {path}: not writable")
    return folder


def host_info() -> dict[str, str]:
    """rtqual_host_info's labels: host name, kernel, preemption model, machine, rtqual version."""
    from rtqual import __version__
    from rtqual.measure.host import facts

    f = facts.collect()
    return {
        "host": f["hostname"],
        "kernel": f["kernel"]["release"],
        "preempt": str(f["preempt"]["model"]),
        "machine": f["kernel"]["machine"],
        "rtqual_version": __version__,
    }


def window_line(w: dict) -> str:
    """One window of one CPU for the terminal (a percentile only where the window's samples carry it)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(w["start_unix_s"] + w["duration_s"]))
    if not w["samples"]:
        return f"{stamp} cpu{w['cpu']} {w['run_as']}: no samples in {w['duration_s']:.1f} s"
    shown = (("p99", "p99_ns"), ("p99.99", "p9999_ns"))
    carried = "".join(f"{name} {format_ns(w[key])}, " for name, key in shown if w[key] is not None)
    return (
        f"{stamp} cpu{w['cpu']} {w['run_as']}: {w['samples']} samples, {carried}max {format_ns(w['max_ns'])}, "
        f"{w['over_threshold']} over {format_ns(w['threshold_ns'])}, {w['overruns']} overruns"
    )


class Sink(Protocol):
    """Where the windows go (rtqual.monitor.outputs.Outputs): the loop measures, the sink publishes."""

    def check(self) -> None: ...
    def where(self) -> list[str]: ...
    def start(self, identity: dict, work: Path, start_unix_s: float) -> None: ...
    def windows(self, windows: list[dict]) -> None: ...
    def spikes(self, taken: list[dict], run_as: str) -> None: ...
    def over_bound(self, count: int) -> None: ...
    def close(self) -> None: ...


class Monitor:
    """One monitor run: the service and the probe, every closed window and spike handed to its sink; run() returns
    the exit code."""

    def __init__(self, case: dict, opts: Options, sink: Sink):
        self.case, self.opts, self.sink = case, opts, sink
        self.guard = Interrupted()  # SIGINT/SIGTERM stop the probe: its last records close the last window
        self.start_unix_s = time.time()  # the PVs' UPTIME counts from here

    def check(self) -> tuple[Any, list[str]]:
        """Everything that can be known wrong before anything starts: the service (its options filled), the
        probe's options and privileges, the outputs' arguments. Returns (service or None, probe args)."""
        o = self.opts
        self.sink.check()
        args = probe_args(self.case, o.window_ns, o.bounded)
        run_as = self.case.get("run_as") or self.case["probe"]
        return prepare(self.case["probe"], run_as, args, self.case.get("service"), self.opts.require)

    def run(self) -> int:
        """Check, start, measure until a signal (or the probe's own end), publish the last window; exit code."""
        svc, args = self.check()
        info = host_info()
        params = self.case["params"]  # the probe's CPUs (per-CPU PVs); a probe that does not say: every online one
        cpus = params.get("cpus") or ([params["cpu"]] if params.get("cpu") is not None else online_cpus())
        identity = {
            "host": info["host"],
            "probe": self.case["probe"],
            "run_as": self.case.get("run_as") or self.case["probe"],
            "kernel": info["kernel"],
            "preempt": info["preempt"],
        }
        labels = {"machine": info["machine"], "rtqual_version": info["rtqual_version"]}  # rtqual_host_info's too
        with self.guard.installed(), ExitStack() as stack:
            remove_orphan_dirs(TEMP_PREFIX)  # a killed monitor's folder (its pid is in the name)
            work = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
            stack.callback(shutil.rmtree, work, ignore_errors=True)
            stack.callback(lambda: svc.discard() if svc else None)
            stack.callback(self.sink.close)
            self.sink.start({**identity, **labels, "cpus": cpus}, work, self.start_unix_s)
            print(self.started_line(identity["run_as"], cpus), file=sys.stderr, flush=True)
            return self.measure(args, identity, work, svc, cpus)

    def started_line(self, run_as: str, cpus: list[int]) -> str:
        """What the monitor does and where it serves, said once at its start (stderr: stdout is the windows)."""
        o = self.opts
        first = min(FIRST_WINDOW_NS, o.window_ns)
        when = f"the first after {format_duration(first)}" if first < o.window_ns else "the first"
        lands = time.strftime("%H:%M:%S", time.localtime(time.time() + first / 1e9))
        where = self.sink.where()
        return (
            f"rtqual monitor: {run_as} on cpus {format_cpulist(cpus)}, windows of {format_duration(o.window_ns)} "
            f"({when} at about {lands}); {'; '.join(where)}; stop with Ctrl-C or SIGTERM"
        )

    def measure(self, args: list[str], identity: dict, work: Path, svc: Any, cpus: list[int]) -> int:
        """The probe session (the service, --trace's tracer, the probe) with its records closing windows, each
        published, and its spikes published as they come; 0 when stopped by a signal or ended by its own bound."""
        slack_ns = progress_ms(self.opts.window_ns) * 1_000_000 // 2
        windows = Windows(self.opts.window_ns, identity, slack_ns, self.opts.every_progress)
        windows.first_ns = min(FIRST_WINDOW_NS, self.opts.window_ns)
        session = Session(
            self.case["probe"],
            args,
            work,
            self.guard,
            service=svc,
            trace_cpus=cpus if self.opts.trace or self.opts.capture_ns else None,
            max_spikes=sys.maxsize,  # a monitor never ends: spikes are taken as they come
            capture=(self.opts.capture_ns, self.opts.capture_per_hour) if self.opts.capture_ns else None,
            spawn_if_interrupted=False,
            warn=lambda why: print(
                f"rtqual: warning: {'--capture' if self.opts.capture_ns else '--trace'}: {why}; measuring without "
                f"{'capture' if self.opts.capture_ns else 'tracing'}",
                file=sys.stderr,
                flush=True,
            ),
        )

        def on_record(rec: dict) -> None:
            self.sink.windows(windows.feed(rec))
            over = getattr(session.tracer, "over_bound", 0)  # --capture: spikes past the hour's bound, counted
            if over:
                self.sink.over_bound(over)

        session.run(on_record, lambda taken: self.sink.spikes(taken, identity["run_as"]))
        self.sink.windows(windows.close(None))  # a stream cut short still gives its last window
        if self.guard.signum or session.exit_code == 0:
            return 0
        end = session.stream.end or {}
        why = end.get("message") or session.stderr_last or f"exit {session.exit_code}"
        raise RtqError(f"monitor: the probe stopped: {why}")

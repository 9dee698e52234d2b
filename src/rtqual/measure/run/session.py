"""One probe session: everything around one probe process, the one driver a bundle case (rtqual.measure.run.runner),
the monitor's window stream (rtqual.monitor.loop) and so a selftest case share (rtla's run_tool(): one
driver, the mode is one hook).

    svc, args = prepare(probe, run_as, args, service_spec)   # the service's options filled in, then --check
    guard = Interrupted()                                    # SIGINT/SIGTERM: a flag, forwarded to the probe
    with guard.installed():
        s = Session(probe, args, folder, guard, service=svc, trace_cpus=[1])
        s.run(on_record, on_spikes)      # tracer, service, spawn, each record to on_record, stop, tracer off
    s.stream, s.exit_code, s.stderr_last, s.service_info, s.tracer   # what the caller keeps of it

The caller decides only where the records go: on_record(rec) gets each record of the probe's stream (and
returns True to stop the probe early: a load died), on_spikes(windows) each batch of traced spikes
(rtqual.measure.host.trace windows; spike() makes one into its analysed record).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rtqual import services
from rtqual.answers.evidence import spikes
from rtqual.answers.requirements import Requirement
from rtqual.measure.host import trace
from rtqual.measure.host.trace import Ring, Tracer, TraceUnavailable
from rtqual.measure.run import native
from rtqual.probes.catalog import ALL_PROBES
from rtqual.procs import signal_group, stop_group
from rtqual.results.stream import Stream

STDERR_FILE = "probe.stderr"
STREAM_FILE = "stream.jsonl"


def option_pairs(options: dict[str, str]) -> list[str]:
    """{"gpio_stim": "X", "out": "Y"} -> ["--gpio-stim", "X", "--out", "Y"]."""
    return [x for key, value in options.items() for x in ("--" + key.replace("_", "-"), str(value))]


def without_options(args: list[str], names: list[str]) -> list[str]:
    """args without the `--name value` pairs of the named options (params, e.g. "in")."""
    drop = {"--" + n.replace("_", "-") for n in names}
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in drop:
            skip = True
        else:
            out.append(arg)
    return out


def prepare(
    probe: str, run_as: str, args: list[str], service_spec: dict | None, require: list[Requirement] | None = None
) -> tuple[Any, list[str]]:
    """The case's service object (None without a spec) and the probe's options with what the service provides
    filled in (the table's `fixed` options), checked by the probe itself (`--check`): a one-line RtqError before
    anything runs. A service whose probe is refused is discarded at once (its FIFOs' folder). require: the
    case's requirements (parsed), given to the service with the probe they judge (an IOC's alarm limits)."""
    svc = None
    if service_spec:
        svc = services.make({**service_spec, "run_as": run_as, "require": list(require)} if require else service_spec)
        fixed = dict(ALL_PROBES[run_as].fixed or {}) if run_as in ALL_PROBES else {}
        args = option_pairs(svc.fill(fixed)) + without_options(args, list(fixed))
    try:
        native.check(probe, args)
    except BaseException:
        if svc is not None:
            svc.discard()
        raise
    return svc, args


class Interrupted:
    """Turns SIGINT/SIGTERM into a flag and forwards them to the running probe's process group."""

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


def spike(w: dict, trace_file: str | None = None) -> dict:
    """One traced spike (a tracer window) analysed (rtqual.answers.evidence.spikes): its record, naming where its trace
    lines are kept (trace_file, or None); a captured one (--capture) with its cause, evidence and time_unix_s."""
    analysis = spikes.analyze(w["lines"], w["cpu"], w["deadline_ns"], w["wake_ns"], w["policies"], w["complete"])
    rec = spikes.spike_record(w["cpu"], w["wake_ns"], w["latency_ns"], analysis, trace_file, w.get("stages"))
    if w.get("captured"):  # --capture: the cause and what it rests on (the lines themselves where no file keeps them)
        rec["complete"] = w["complete"]
        if w.get("real_ns") is not None:
            rec["time_unix_s"] = w["real_ns"] / 1e9
        rec["cause"] = spikes.cause(rec)
        rec["evidence"] = spikes.evidence(rec, w["lines"], trace_file)
    return rec


class Session:
    """One probe process from spawn to stop, with the service and the tracer around it.

    folder: where probe.stderr (and with keep_stream the verbatim stream.jsonl) go, and the service's case folder.
    cpuset: a Cpuset the probe joins before it pins its threads. trace_cpus: trace these CPUs (None: untraced),
    journalled (measure.conditions.journal), at most max_spikes analysed; capture (over_ns, per_hour): trace them as
    a ring read only at spikes over over_ns, at most per_hour an hour (--capture, trace.Ring), instead; warn(why)
    when tracing cannot run here. spawn_if_interrupted: a signal that came while the service started still spawns
    the probe and stops it at once (a bundle case keeps what the probe says of it), or spawns nothing (the monitor)."""

    def __init__(
        self,
        probe: str,
        args: list[str],
        folder: Path,
        guard: Interrupted,
        *,
        service: Any = None,
        cpuset: Any = None,
        keep_stream: bool = False,
        trace_cpus: list[int] | None = None,
        journal: Any = None,
        max_spikes: int = trace.MAX_SPIKES,
        capture: tuple[int, int] | None = None,
        spawn_if_interrupted: bool = True,
        warn: Callable[[str], None] = lambda why: None,
    ):
        self.probe, self.args, self.folder, self.guard = probe, list(args), Path(folder), guard
        self.service, self.cpuset, self.keep_stream = service, cpuset, keep_stream
        self.trace_cpus, self.journal, self.max_spikes, self.capture = trace_cpus, journal, max_spikes, capture
        self.spawn_if_interrupted, self.warn = spawn_if_interrupted, warn
        self.stream = Stream()
        self.exit_code: int | None = None  # None: the probe never ran
        self.stderr_last = ""
        self.service_info: dict | None = None
        self.tracer: Tracer | None = None

    def run(
        self,
        on_record: Callable[[dict], bool | None],
        on_spikes: Callable[[list[dict]], None] = lambda windows: None,
    ) -> Session:
        """Tracer on, the service started, the probe run to its end (or a signal, or on_record asking to stop),
        then stopped, the service stopped and the tracer off, whatever happened. A service that does not
        start raises its RtqError."""
        self.tracer = self._start_tracer()
        try:
            with self.service(self.folder) if self.service else nullcontext() as self.service_info:
                if self.spawn_if_interrupted or not self.guard.signum:
                    self._probe(on_record, on_spikes)
        finally:
            if self.tracer is not None:  # the instance is removed whatever happened
                on_spikes(self.tracer.stop())
        return self

    def _start_tracer(self) -> Tracer | None:
        """The tracer on trace_cpus, or None (not asked, or tracing cannot run here: warn(why), and the session
        runs untraced)."""
        if self.trace_cpus is None:
            return None
        # a response through a service (an IOC) crosses its threads on any CPU: each spike keeps every CPU's lines
        all_cpus = bool(self.service)
        if self.capture is not None:
            over_ns, per_hour = self.capture
            tracer: Tracer = Ring(self.trace_cpus, over_ns, per_hour, journal=self.journal, all_cpus=all_cpus)
        else:
            tracer = Tracer(self.trace_cpus, journal=self.journal, max_spikes=self.max_spikes, all_cpus=all_cpus)
        try:
            tracer.start()
        except TraceUnavailable as e:
            self.warn(str(e))
            return None
        for note in tracer.notes:
            print(f"rtqual: {note}", file=sys.stderr, flush=True)
        return tracer

    def _probe(self, on_record: Callable[[dict], bool | None], on_spikes: Callable[[list[dict]], None]) -> None:
        """Spawn the probe (in the cpuset, with the service's env), feed its records to on_record and its
        threshold events to the tracer, and stop its process group at the end; the last line of its stderr."""
        stream, tracer, err_path = self.stream, self.tracer, self.folder / STDERR_FILE
        join = (lambda: self.cpuset.add_pid(os.getpid())) if self.cpuset else None  # before it pins its threads
        with (
            open(err_path, "w") as err,
            open(self.folder / STREAM_FILE, "w", buffering=1) if self.keep_stream else nullcontext() as log,
        ):
            proc = native.spawn(self.probe, self.args, err, preexec=join, env=getattr(self.service, "env", None))
            self.guard.proc = proc
            if self.guard.signum:  # interrupted while the service (an IOC) was starting: stop at once
                signal_group(proc.pid, signal.SIGINT)
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    if log is not None:
                        log.write(line)
                    rec = stream.feed(line)
                    if rec is None:
                        continue
                    stop = on_record(rec)
                    if tracer is not None:
                        trace.feed(tracer, rec)
                        taken = tracer.take()
                        if taken:
                            on_spikes(taken)
                    if stop:
                        signal_group(proc.pid, signal.SIGINT)
            finally:
                self.exit_code = stop_group(proc)
                self.guard.proc = None
        tail = err_path.read_text(errors="replace").strip().splitlines()[-1:]
        self.stderr_last = tail[0] if tail else ""

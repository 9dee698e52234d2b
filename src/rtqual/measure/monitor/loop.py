"""The monitor's one owner: checks everything that can be wrong first (one line, exit 1), starts the
outputs (metrics port, textfile folder, store, PVs), the service (an IOC) and the probe with an
unbounded duration and --hist-delta, turns its stream into windows and hands each closed window to
every output. SIGINT/SIGTERM stop the probe; its last records close the last window, which is
written everywhere before the monitor exits 0."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtqual import probes as native_table
from rtqual.answers.requirements import Requirement
from rtqual.errors import RtqError
from rtqual.measure.session import Interrupted, Session, prepare, spike, without_options
from rtqual.probes.catalog import ALL_PROBES
from rtqual.publish.metrics import check_listen
from rtqual.results.window import Windows, merged, public
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
    trace: bool = False  # --trace: each spike's culprits (rtqual.measure.trace), printed and counted in /metrics
    require: list[Requirement] = field(default_factory=list)  # --require, --profile (parsed): the PVs' alarm limits

    @classmethod
    def from_args(cls, a: Any, case: dict) -> Options:
        """`rtqual monitor`'s parsed options (rtqual.options.build_monitor_parser) for the probe's case: the window
        at least 1 s, `--listen off` for none, bounded when the user gave --duration or --loops, the requirements
        (--require, --profile) checked."""
        from rtqual.answers.requirements import gather
        from rtqual.publish.store import is_off
        from rtqual.units import parse_duration_ns

        window_ns = parse_duration_ns(a.window, "--window")
        if window_ns < 10**9:
            raise RtqError(f"--window {a.window}: at least 1s")
        listen = None if a.listen in ("off", "") else a.listen
        bounded = any(getattr(a, k, None) is not None for k in ("duration", "loops"))
        opts = cls(window_ns, listen, a.textfile, not is_off(a.store), a.store, a.pvs, a.json, bounded)
        opts.every_progress = max(a.window_progress, 0)
        opts.trace = bool(case["params"].get("trace"))
        opts.require = gather(getattr(a, "require", None), getattr(a, "profile", None))
        return opts


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


class Monitor:
    """One monitor run: outputs, service and probe; run() returns the exit code."""

    def __init__(self, case: dict, opts: Options):
        self.case, self.opts = case, opts
        self.guard = Interrupted()  # SIGINT/SIGTERM stop the probe: its last records close the last window
        self.metrics: Any = None
        self.store: Any = None
        self.store_warned = False
        self.pvs: Any = None
        self.textfile: Path | None = None
        self.extra_info: dict[str, str] = {}  # rtqual_host_info labels beyond the window's identity
        self.start_unix_s = time.time()  # the PVs' UPTIME counts from here

    def check(self) -> tuple[Any, list[str]]:
        """Everything that can be known wrong before anything starts: the service (its options filled), the
        probe's options and privileges, the outputs' arguments. Returns (service or None, probe args)."""
        o = self.opts
        if o.listen:
            check_listen(o.listen)
        if o.textfile:
            self.textfile = check_folder(o.textfile, "--textfile")
        args = probe_args(self.case, o.window_ns, o.bounded)
        run_as = self.case.get("run_as") or self.case["probe"]
        return prepare(self.case["probe"], run_as, args, self.case.get("service"), self.opts.require)

    def start_outputs(self, identity: dict, work: Path) -> None:
        """Metrics port (a port in use is one line), store, PVs."""
        from rtqual.publish.metrics import Metrics, serve

        self.metrics = Metrics({k: identity[k] for k in ("host", "kernel", "preempt")} | self.extra_info)
        if self.opts.listen:
            try:
                serve(self.metrics, self.opts.listen)
            except OSError as e:
                raise RtqError(f"--listen {self.opts.listen}: {e.strerror or e}") from None
        if self.opts.use_store:
            from rtqual.publish.store import WindowSink

            self.store = WindowSink(self.opts.store)
        if self.opts.pvs:
            from rtqual.measure.monitor.pvs import PvServer

            self.pvs = PvServer(self.opts.pvs, identity["cpus"], self.opts.require, work, self.start_unix_s)
            self.pvs.start()

    def publish(self, windows: list[dict]) -> None:
        """A closed window (every CPU) to every output; a store that cannot be reached is said once."""
        if not windows:
            return
        self.metrics.add_windows(windows)
        for w in windows:
            print(json.dumps(public(w)) if self.opts.json else window_line(w), flush=True)
            if self.store is not None:
                self.store.put(public(w))
        if self.store is not None and self.store.warning and not self.store_warned:
            print(f"rtqual: warning: --store: {self.store.warning}", file=sys.stderr, flush=True)
            self.store_warned = True
        if self.pvs is not None:
            self.pvs.publish(merged(windows), windows)
        self.write_textfile()

    def write_textfile(self) -> None:
        """The exposition for node_exporter, replaced atomically (a failure is a warning: measuring goes on)."""
        if self.textfile is None:
            return
        from rtqual.publish.metrics import write_textfile

        try:
            write_textfile(self.metrics, self.textfile)
        except OSError as e:
            print(f"rtqual: warning: --textfile {self.textfile}: {e.strerror or e}", file=sys.stderr, flush=True)

    def run(self) -> int:
        """Check, start, measure until a signal (or the probe's own end), publish the last window; exit code."""
        svc, args = self.check()
        info = host_info()
        self.extra_info = {"machine": info["machine"], "rtqual_version": info["rtqual_version"]}
        params = self.case["params"]  # the probe's CPUs (per-CPU PVs); a probe that does not say: every online one
        cpus = params.get("cpus") or ([params["cpu"]] if params.get("cpu") is not None else online_cpus())
        identity = {
            "host": info["host"],
            "probe": self.case["probe"],
            "run_as": self.case.get("run_as") or self.case["probe"],
            "kernel": info["kernel"],
            "preempt": info["preempt"],
        }
        with self.guard.installed(), ExitStack() as stack:
            remove_orphan_dirs(TEMP_PREFIX)  # a killed monitor's folder (its pid is in the name)
            work = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
            stack.callback(shutil.rmtree, work, ignore_errors=True)
            stack.callback(lambda: svc.discard() if svc else None)
            stack.callback(self.finish)
            self.start_outputs({**identity, "cpus": cpus}, work)
            print(self.started_line(identity["run_as"], cpus), file=sys.stderr, flush=True)
            return self.measure(args, identity, work, svc, cpus)

    def started_line(self, run_as: str, cpus: list[int]) -> str:
        """What the monitor does and where it serves, said once at its start (stderr: stdout is the windows)."""
        o = self.opts
        first = min(FIRST_WINDOW_NS, o.window_ns)
        when = f"the first after {format_duration(first)}" if first < o.window_ns else "the first"
        lands = time.strftime("%H:%M:%S", time.localtime(time.time() + first / 1e9))
        where = [f"/metrics at http://{o.listen}/metrics" if o.listen else "no /metrics (--listen off)"]
        where += [f"node_exporter textfile {self.textfile}/rtqual.prom"] if self.textfile else []
        where += [f"EPICS PVs {o.pvs}:*"] if o.pvs else []
        return (
            f"rtqual monitor: {run_as} on cpus {format_cpulist(cpus)}, windows of {format_duration(o.window_ns)} "
            f"({when} at about {lands}); {'; '.join(where)}; stop with Ctrl-C or SIGTERM"
        )

    def publish_spikes(self, taken: list[dict], run_as: str) -> None:
        """Each traced spike analysed (rtqual.answers.spikes): one line (or JSON line) and its culprits in /metrics."""
        from rtqual.answers import spikes

        for w in sorted(taken, key=lambda w: w["wake_ns"]):
            rec = spike(w)
            print(json.dumps({"type": "spike", **rec}) if self.opts.json else spikes.spike_line(rec), flush=True)
            if self.metrics is not None:
                self.metrics.add_spike(run_as, rec)

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
            trace_cpus=cpus if self.opts.trace else None,
            max_spikes=sys.maxsize,  # a monitor never ends: spikes are taken as they come
            spawn_if_interrupted=False,
            warn=lambda why: print(
                f"rtqual: warning: --trace: {why}; measuring without tracing", file=sys.stderr, flush=True
            ),
        )
        session.run(
            lambda rec: self.publish(windows.feed(rec)), lambda taken: self.publish_spikes(taken, identity["run_as"])
        )
        self.publish(windows.close(None))  # a stream cut short still gives its last window
        if self.guard.signum or session.exit_code == 0:
            return 0
        end = session.stream.end or {}
        why = end.get("message") or session.stderr_last or f"exit {session.exit_code}"
        raise RtqError(f"monitor: the probe stopped: {why}")

    def finish(self) -> None:
        """At exit: the last textfile, the store's buffer written (or said lost), the PV server stopped."""
        if self.metrics is not None:
            self.write_textfile()
        if self.store is not None:
            left = self.store.close(STORE_FLUSH_S)  # flush, then stop its writer thread
            if left or self.store.dropped:
                print(
                    f"rtqual: warning: --store: {left} window(s) not written, {self.store.dropped} dropped "
                    f"({self.store.reason()})",
                    file=sys.stderr,
                )
        if self.pvs is not None:
            self.pvs.stop()

"""The timerlat probe's process (`python -m rtqual.measure.probes.timerlat timerlat [--check] [options]`): the kernel's
timerlat tracer in rtqual's own tracefs instance, its samples turned into the probes' JSON Lines
(docs/protocol.md: header, progress, threshold events, hist, summary with "stages", end), so a timerlat case is
measured, stored, judged and shown like every other probe (rtqual.probes.timerlat has its table entry).

For each period the tracer writes one line per context on the sample's CPU, `#SEQ context irq timer_latency N
ns`, then `thread`, then `user-ret` when a user-space thread reads timerlat_fd (Linux 6.7+): each latency from
the same timer expiry. The probe's latency is the last context's (what a task sees); the stages are its split:
irq = expiry -> IRQ, thread = IRQ -> the timerlat thread running, user = -> back in user space.

What it changes, restored in `finally` (a SIGKILLed probe leaves its instance, removed by the next traced
rtqual and `rtqual restore`; the global osnoise/ knobs keep its values until then): the instance
`instances/rtqual-<pid>-timerlat`, and osnoise/cpus, osnoise/timerlat_period_us, osnoise/stop_tracing_us,
osnoise/stop_tracing_total_us (and osnoise/options with the user stage), which the kernel keeps globally."""

from __future__ import annotations

import argparse
import os
import re
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from rtqual import __version__
from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_SKIP, RtqError
from rtqual.measure.host.osnoise import Knobs, kernel_threads
from rtqual.measure.host.trace import TRACEFS_ENV, find_tracefs, line_ts, private_mount_folder, unmount
from rtqual.probes.timerlat import ENTRY, KERNEL_OPTION, STAGES
from rtqual.results.hist import Histogram
from rtqual.units import format_cpulist, online_cpus, parse_cpulist, parse_duration_ns

NAME = "timerlat"
POLL_S = 0.05
BUFFER_KB = 1024
RAW_HEADER = struct.Struct("<8sIIQqqI20x")
RAW_RECORD = struct.Struct("<qIHH")
KNOBS = ("cpus", "timerlat_period_us", "stop_tracing_us", "stop_tracing_total_us")
_SAMPLE = re.compile(r"#(\d+)\s+context\s+(\S+)\s+timer_latency\s+(\d+) ns")  # '#%-5u context %6s ...'
USER_WORKER = (  # one per CPU: blocks in read(timerlat_fd) each period, nothing else (the kernel times the return)
    "import os,sys\n"
    "cpu=int(sys.argv[1]); os.sched_setaffinity(0,{cpu})\n"
    "try: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))\n"
    "except OSError: pass\n"
    "fd=os.open(sys.argv[2], os.O_RDONLY)\n"
    "while True: os.read(fd, 1024)\n"
)


class Skip(RtqError):
    """The probe cannot run here (exit 3): the message says what the kernel or the user lacks."""

    def __init__(self, message: str):
        super().__init__(message, EXIT_SKIP)


def parse_sample(line: str) -> tuple[int, str, int, int] | None:
    """(seq, context 'irq'|'thread'|'user', latency ns, line time ns) of one timerlat trace line, or None."""
    m = _SAMPLE.search(line)
    ts = line_ts(line)
    if not m or ts is None:
        return None
    context = "user" if m.group(2).startswith("user") else m.group(2)
    return int(m.group(1)), context, int(m.group(3)), ts


def stages_of(parts: dict[str, int]) -> dict[str, int]:
    """The stage split of one sample's cumulative latencies {"irq", "thread"[, "user"]}: each stage the time
    from the previous context to its own (never below 0: contexts are read from one clock but rounded)."""
    out, before = {}, 0
    for name in STAGES:
        if name in parts:
            out[name] = max(parts[name] - before, 0)
            before = parts[name]
    return out


def missed_periods(count: int, elapsed_ns: int, period_ns: int) -> int:
    """The periods of the measured time that gave a CPU no sample: the kernel skips a period whose start
    passed while its timerlat thread was still late (it says so nowhere; the count tells)."""
    return max(0, elapsed_ns // period_ns - count)


class Slot:
    """One CPU: the latency histogram, one per stage, and the contexts of samples not yet complete."""

    def __init__(self, cpu: int, last: str):
        self.cpu, self.last = cpu, last
        self.hist, self.stages = Histogram(), {name: Histogram() for name in STAGES}
        self.pending: dict[int, dict[str, int]] = {}
        self.over = self.window_max = 0
        self.sent: dict[int, int] = {}  # bucket counts at the last hist_delta
        self.tail = ""

    def take(self, seq: int, context: str, ns: int) -> dict[str, int] | None:
        """A context's latency; the sample's parts once its last context is in, else None."""
        parts = self.pending.setdefault(seq, {})
        parts[context] = ns
        if context != self.last:
            if len(self.pending) > 64:  # contexts whose sample never completed (lost lines)
                for old in sorted(self.pending)[:-32]:
                    del self.pending[old]
            return None
        del self.pending[seq]
        self.hist.record(ns)
        for name, value in stages_of(parts).items():
            self.stages[name].record(value)
        self.window_max = max(self.window_max, ns)
        return parts


class Probe:
    """The run: options, the instance, the reader, the records."""

    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.cpus = a.cpus
        self.out = os.fdopen(os.dup(a.json_fd), "w", buffering=1)
        self.root: Path | None = None
        self.mounted: Path | None = None
        self.instance: Path | None = None
        self.knobs: Knobs | None = None  # the global osnoise/ knobs set, restored at the end
        self.fds: dict[int, int] = {}
        self.workers: list[subprocess.Popen] = []
        self.user = False
        self.slots: dict[int, Slot] = {}
        self.lost = self.suppressed = self.events_this_second = 0
        self.stop_signal = 0
        self.raw: BinaryIO | None = None
        self.raw_bytes = 0
        self.raw_truncated = False
        self.raw_samples = 0
        self.window = (0, 0)  # CLOCK_MONOTONIC [start, end) of the measured samples
        self.elapsed_ns = 0  # measured so far (the last progress record's)
        self.real_offset = 0

    # -- records

    def emit(self, rec: dict) -> None:
        """One JSON line."""
        import json

        self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")

    # -- tracefs

    def find_root(self) -> Path:
        """tracefs: $RTQUAL_TRACEFS, the mounted one, or a private mount for this run."""
        forced = os.environ.get(TRACEFS_ENV)
        if forced:
            return Path(forced)
        found = find_tracefs(Path("/proc/self/mounts").read_text())
        if found is not None:
            return found
        folder = private_mount_folder()
        p = subprocess.run(["mount", "-t", "tracefs", "nodev", str(folder)], capture_output=True, text=True)
        if p.returncode != 0:
            os.rmdir(folder)
            raise Skip(f"tracefs is not mounted and mounting it failed: {p.stderr.strip()}. Grant: run as root")
        self.mounted = folder
        return folder

    def check(self) -> None:
        """Skip unless this kernel has the timerlat tracer and we may use tracefs; the user stage if asked."""
        if os.geteuid() != 0:
            raise Skip("timerlat needs tracefs, which needs root. Grant: run as root")
        self.root = self.find_root()
        tracers = (self.root / "available_tracers").read_text().split()
        if NAME not in tracers:
            raise Skip(
                f"this kernel has no timerlat tracer: it needs {KERNEL_OPTION}=y (e.g. Debian's linux-image-rt-amd64)"
            )
        has_user = (self.root / "osnoise" / "per_cpu" / f"cpu{self.cpus[0]}" / "timerlat_fd").exists()
        if self.a.user == "on" and not has_user:
            raise Skip(
                "--user on: this kernel has no timerlat user-space interface "
                "(osnoise/per_cpu/cpuN/timerlat_fd, Linux 6.7+)"
            )
        self.user = has_user and self.a.user != "off"

    def _set(self, name: str, value: str) -> None:
        """Set a global osnoise/ knob, its old value kept for restore()."""
        if self.knobs is None:
            self.knobs = Knobs(self.root)  # type: ignore[arg-type]
        self.knobs.set(name, value)

    def start(self) -> None:
        """The instance with the timerlat tracer on our CPUs and the mono clock; per-CPU pipes open."""
        assert self.root is not None
        self._set("cpus", format_cpulist(self.cpus))
        self._set("timerlat_period_us", str(self.a.interval // 1000))
        for knob in ("stop_tracing_us", "stop_tracing_total_us"):
            if (self.root / "osnoise" / knob).exists():
                self._set(knob, "0")
        if self.user:
            self._set("options", "NO_OSNOISE_WORKLOAD")
        path = self.root / "instances" / f"rtqual-{os.getpid()}-timerlat"
        path.mkdir()
        self.instance = path
        (path / "tracing_on").write_text("0")
        (path / "trace_clock").write_text("mono")
        (path / "buffer_size_kb").write_text(str(BUFFER_KB))
        try:
            (path / "current_tracer").write_text(NAME)
        except OSError as e:
            raise Skip(
                f"cannot start the timerlat tracer: {e.strerror} "
                "(another instance, rtla's or an osnoise tracer, may hold it)"
            ) from None
        for cpu in self.cpus:
            self.fds[cpu] = os.open(path / "per_cpu" / f"cpu{cpu}" / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        (path / "tracing_on").write_text("1")
        if self.user:
            for cpu in self.cpus:
                fd_path = self.root / "osnoise" / "per_cpu" / f"cpu{cpu}" / "timerlat_fd"
                self.workers.append(
                    subprocess.Popen(
                        [sys.executable, "-c", USER_WORKER, str(cpu), str(fd_path)], stdin=subprocess.DEVNULL
                    )
                )

    def restore(self) -> None:
        """Everything undone, whatever failed: workers, tracer, instance, knobs, a private mount."""
        for w in self.workers:
            w.kill()
            w.wait()
        if self.instance is not None:
            for name, value in (("tracing_on", "0"), ("current_tracer", "nop")):
                try:
                    (self.instance / name).write_text(value)
                except OSError:
                    pass
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        if self.instance is not None:
            try:
                os.rmdir(self.instance)
            except OSError as e:
                print(f"timerlat: could not remove {self.instance}: {e.strerror}", file=sys.stderr)
        for problem in self.knobs.restore() if self.knobs is not None else []:
            print(f"timerlat: {problem}", file=sys.stderr)
        if self.mounted is not None:
            unmount(self.mounted)

    # -- reading

    def drain(self, now_second: int) -> None:
        """Read what each CPU's pipe holds, and turn complete samples into histograms and events."""
        for cpu, fd in self.fds.items():
            slot = self.slots[cpu]
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not data:
                    break
                text = slot.tail + data.decode(errors="replace")
                cut = text.rfind("\n") + 1
                slot.tail = text[cut:]
                for line in text[:cut].splitlines():
                    self.line(slot, line)

    def line(self, slot: Slot, line: str) -> None:
        """One trace line of a CPU."""
        if "LOST" in line:
            self.lost += sum(int(n) for n in re.findall(r"LOST (\d+) EVENTS", line))
            return
        got = parse_sample(line)
        if got is None:
            return
        seq, context, ns, ts = got
        if not self.window[0] <= ts < self.window[1]:  # the measured time only (the tracer runs a little longer)
            return
        parts = slot.take(seq, context, ns)
        if parts is None:
            return
        self.write_raw(ts, ns, slot.cpu)
        if ns > self.a.threshold:
            slot.over += 1
            if self.events_this_second < self.a.max_events:
                self.events_this_second += 1
                stages = {f"{k}_ns": v for k, v in stages_of(parts).items()}
                self.emit(
                    {
                        "type": "event",
                        "kind": "threshold",
                        "cpu": slot.cpu,
                        "latency_ns": ns,
                        "mono_ns": ts,
                        "real_ns": ts + self.real_offset,
                        "stages": stages,
                    }
                )
            else:
                self.suppressed += 1

    def write_raw(self, ts: int, ns: int, cpu: int) -> None:
        """One sample in the raw file, up to its cap."""
        if self.raw is None or self.raw_truncated:
            return
        if self.raw_bytes + RAW_RECORD.size > self.a.raw_max_bytes:
            self.raw_truncated = True
            return
        self.raw.write(RAW_RECORD.pack(ts, min(ns, 0xFFFFFFFF), cpu, 0))
        self.raw_bytes += RAW_RECORD.size
        self.raw_samples += 1

    # -- the run

    def run(self) -> int:
        """Header, the measurement (progress each --progress-ms), then hist, summary and end: the exit code."""
        self.slots = {c: Slot(c, "user" if self.user else "thread") for c in self.cpus}
        self.start()
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self.real_offset = time.time_ns() - start
        if self.a.raw:
            self.raw = open(self.a.raw, "wb")
            head = RAW_HEADER.pack(
                b"RTQRAW1\0", 1, 16, self.a.interval, start, start + self.real_offset, len(self.cpus)
            )
            self.raw.write(head)
            self.raw_bytes = len(head)
        threads = kthreads(self.cpus, self.user)
        policy = {t["policy"] for t in threads} or {"fifo"}
        u = os.uname()
        self.emit(
            {
                "type": "header",
                "schema": 1,
                "probe": NAME,
                "version": __version__,
                "argv": ["rtqual-timerlat", NAME, *sys.argv[2:]],
                "params": {
                    "cpus": self.cpus,
                    "interval_ns": self.a.interval,
                    "duration_ns": self.a.duration,
                    "threshold_ns": self.a.threshold,
                    "max_events": self.a.max_events,
                    "user": self.user,
                    "tracer": NAME,
                },
                "clock": "CLOCK_MONOTONIC",
                "start_mono_ns": start,
                "start_real_ns": start + self.real_offset,
                "host": {
                    "sysname": u.sysname,
                    "release": u.release,
                    "version": u.version,
                    "machine": u.machine,
                    "nodename": u.nodename,
                    "ncpus_online": len(online_cpus()),
                },
                "hist": {"lowest_ns": 1, "highest_ns": 60_000_000_000, "sig_digits": 3, "layout": "hdr"},
                "rt": {
                    "policy": sorted(policy)[0],
                    "priority": max((t["priority"] for t in threads), default=0),
                    "mlockall": False,
                    "dma_latency": False,
                    "tracemark": False,
                    "degraded": False,
                },
                "timerlat": {"instance": self.instance.name if self.instance else None, "threads": threads},
            }
        )
        end = start + self.a.duration
        self.window = (start, end)
        next_progress = start + self.a.progress_ms * 1_000_000
        second = start // 1_000_000_000
        while not self.stop_signal:
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if now // 1_000_000_000 != second:
                second = now // 1_000_000_000
                self.flush_suppressed()
            self.drain(second)
            if now >= next_progress or now >= end:
                self.progress(now - start)
                next_progress += self.a.progress_ms * 1_000_000
            if now >= end:
                break
            time.sleep(min(POLL_S, max((end - now) / 1e9, 0)))
        (self.instance / "tracing_on").write_text("0")  # type: ignore[operator]
        self.drain(second)
        self.flush_suppressed()
        return self.finish(threads)

    def flush_suppressed(self) -> None:
        """The threshold events dropped by the rate limit in the last second, as one record."""
        if self.suppressed:
            self.emit({"type": "event", "kind": "suppressed", "count": self.suppressed})
        self.suppressed = self.events_this_second = 0

    def progress(self, elapsed_ns: int) -> None:
        """A progress record (and with --hist-delta the buckets filled since the last one, per CPU)."""
        rows = []
        for s in self.slots.values():
            h = s.hist
            rows.append(
                {
                    "cpu": s.cpu,
                    "count": h.count,
                    "min_ns": h.min_ns,
                    "max_ns": h.max_ns,
                    "window_max_ns": s.window_max,
                    "overruns": missed_periods(s.hist.count, elapsed_ns, self.a.interval),
                    "over_threshold": s.over,
                }
            )
            s.window_max = 0
        self.elapsed_ns = elapsed_ns
        self.emit({"type": "progress", "elapsed_ns": elapsed_ns, "cpus": rows})
        if self.a.hist_delta:
            for s in self.slots.values():
                grown = [[i, c - s.sent.get(i, 0)] for i, c in sorted(s.hist.counts.items()) if c > s.sent.get(i, 0)]
                s.sent = dict(s.hist.counts)
                n = sum(c for _, c in grown)
                self.emit({"type": "hist_delta", "cpu": s.cpu, "elapsed_ns": elapsed_ns, "counts": grown, "count": n})

    def finish(self, threads: list[dict]) -> int:
        """hist per CPU, the summary with the stages, the end record: the exit code."""
        rows, stages = [], {}
        for s in self.slots.values():
            self.emit({"type": "hist", "cpu": s.cpu, **s.hist.to_record()})
            st = s.hist.stats()
            pct = 100.0 * s.over / s.hist.count if s.hist.count else 0.0
            rows.append(
                {
                    "cpu": s.cpu,
                    **st,
                    "overruns": missed_periods(s.hist.count, self.elapsed_ns, self.a.interval),
                    "over_threshold": s.over,
                    "over_threshold_pct": pct,
                    "cpu_time_ns": next((t["cpu_time_ns"] for t in kthreads([s.cpu], self.user)), 0),
                    "wakeups": s.hist.count,
                }
            )
        for name in STAGES:
            merged = Histogram()
            for s in self.slots.values():
                merged = merged.merge(s.stages[name])
            if merged.count:
                stages[name] = {**merged.stats(), "over_threshold": merged.count_above(self.a.threshold)}
        raw = None
        if self.raw is not None:
            self.raw.close()
            raw = {"path": self.a.raw, "samples": self.raw_samples, "dropped": 0, "truncated": self.raw_truncated}
        self.emit(
            {
                "type": "summary",
                "cpus": rows,
                "raw": raw,
                "stages": stages,
                "timerlat": {
                    "tracer": NAME,
                    "instance": self.instance.name if self.instance else None,
                    "period_us": self.a.interval // 1000,
                    "user": self.user,
                    "threads": threads,
                    "lost_events": self.lost,
                },
            }
        )
        count = sum(s.hist.count for s in self.slots.values())
        if self.stop_signal:
            status, reason, message = EXIT_INCONCLUSIVE, "interrupted", f"stopped by signal {self.stop_signal}"
        elif not count:
            status, reason, message = EXIT_ERROR, "error", "the timerlat tracer gave no sample"
        elif self.lost:
            status, reason, message = EXIT_INCONCLUSIVE, "incomplete", f"{self.lost} trace events lost: samples missing"
        else:
            status, reason, message = 0, "completed", ""
        self.emit({"type": "end", "status": status, "reason": reason, "message": message})
        return status


def kthreads(cpus: list[int], user: bool) -> list[dict]:
    """The timerlat threads of the CPUs (kernel threads timerlat/N; none with the user stage: our workers run
    there): cpu, pid, policy, priority, CPU time (ns, /proc/PID/schedstat)."""
    return kernel_threads(NAME, cpus)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A bad option is one RtqError line (exit 1), as for the native probes."""
        raise RtqError(message)


def parser() -> argparse.ArgumentParser:
    """The probe's options, from its table entry (one source for the table, rtqual's help and this parser)."""
    p = _Parser(prog="rtqual-timerlat timerlat", add_help=True)
    p.add_argument("--check", action="store_true")
    conv: dict[str, Callable[[str], Any]] = {
        "duration": parse_duration_ns,
        "int": int,
        "cpulist": parse_cpulist,
        "path": str,
        "enum": str,
    }
    for o in ENTRY["options"]:
        dest = o["name"].lstrip("-").replace("-", "_")
        if o["type"] == "flag":
            p.add_argument(o["name"], dest=dest, action="store_true", help=o["help"])
            continue
        default = o.get("default")
        if default is not None and o["type"] in ("duration", "int"):
            default = conv[o["type"]](default)
        kw = {"choices": o["choices"]} if o["type"] == "enum" else {}
        p.add_argument(o["name"], dest=dest, type=conv[o["type"]], default=default, help=o["help"], **kw)
    return p


def options(argv: list[str]) -> argparse.Namespace:
    """Parsed and checked options (ranges from the table); RtqError on a bad one."""
    a = parser().parse_args(argv)
    for o in ENTRY["options"]:
        dest = o["name"].lstrip("-").replace("-", "_")
        value = getattr(a, dest)
        number = isinstance(value, int) and not isinstance(value, bool)
        if number and (("min" in o and value < o["min"]) or ("max" in o and value > o["max"])):
            raise RtqError(f"{o['name']}: {value} is out of range {o.get('min')}..{o.get('max')}")
    if a.interval % 1000:
        raise RtqError(f"--interval: {a.interval} ns is not whole microseconds (timerlat_period_us)")
    a.cpus = a.cpus or sorted(set(online_cpus()) & os.sched_getaffinity(0))
    return a


def main(argv: list[str]) -> int:
    """`timerlat [--check] [options]`: 0/1/3 for --check, else the probe's exit code; errors as one line."""
    if not argv or argv[0] != NAME:
        print(f"usage: python -m rtqual.measure.probes.timerlat {NAME} [--check] [options]", file=sys.stderr)
        return EXIT_ERROR
    probe = None
    try:
        a = options(argv[1:])
        probe = Probe(a)
        probe.check()
        if a.check:
            return 0

        def stop(signum: int, _frame: object) -> None:
            probe.stop_signal = signum

        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, stop)
        return probe.run()
    except RtqError as e:
        print(f"rtqual-timerlat: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:
        print(f"rtqual-timerlat: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if probe is not None and probe.root is not None:
            probe.restore()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

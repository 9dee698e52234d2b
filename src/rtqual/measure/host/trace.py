"""`--trace`: rtqual's own tracefs instance around a measurement, and the trace lines of each spike.

Lifecycle (docs/trace.md): find tracefs (or mount it on a private folder, said in a note and journaled),
create `instances/rtqual-<pid>-<n>` (journaled in the bundle's change journal before it is made, so
`rtqual restore` removes it after a SIGKILL), set the "mono" trace clock (CLOCK_MONOTONIC, the probes'
clock), a small per-CPU buffer, the measured CPUs, and the sched/irq events the attribution reads; a reader
thread (SCHED_OTHER, on the CPUs not traced where there are some) drains `per_cpu/cpuN/trace_pipe_raw`
every POLL_S, page by page in binary form (a consuming read: the bounded ring buffer never overwrites an
event the reader has not seen, as long as the reader keeps up; a page's flags say when it did not), and
keeps the last KEEP_NS of pages per CPU as they are, reading only each page's header (the time of its
first event, lost events: rtqual.measure.host.traceraw). Each threshold event (spike) fed with spike() gets
the lines of its CPU from its deadline minus MARGIN_NS to its wake-up, once the reader has read past the
wake-up: the pages around it decoded and rendered as trace_pipe text lines (times in ns). stop() removes
the instance whatever happened (and unmounts a private mount). Kept text blocks (first, last, text) are
still cut by window_lines (the recorded fixtures, a caller's own text).

API for a caller that runs a probe (the runner; the monitor later):

    tracer = Tracer(cpus=[1], journal=conditions)   # journal: anything with note() and save_state()
    tracer.start()                                   # TraceUnavailable (one line) if tracing cannot run
    tracer.spike(cpu, wake_ns, latency_ns)           # per threshold event, as the probe's stream gives it
    windows = tracer.take()                          # spikes whose lines are in so far (long runs)
    windows += tracer.stop()                         # the rest; the instance is gone after this
    # each window: {"cpu", "wake_ns", "latency_ns", "deadline_ns", "lines", "policies", "complete"}
    # rtqual.answers.evidence.spikes.analyze(w["lines"], w["cpu"], w["deadline_ns"], w["wake_ns"], w["policies"])
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from rtqual.answers.evidence.spikes import SOURCE
from rtqual.errors import RtqError
from rtqual.measure.host import traceraw
from rtqual.units import SCHED_POLICY_NAMES

TRACEFS_CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
TRACEFS_ENV = "RTQUAL_TRACEFS"  # use this tracefs folder (tests point it at a read-only one)
MOUNT_PREFIX = "rtqual-tracefs-"  # + rtqual's pid + "-": a private mount whose rtqual is gone can be found
EVENTS = (
    "sched/sched_switch",
    "sched/sched_waking",  # (sched_wakeup says the same a moment later: left out, a sixth fewer events)
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors",  # where present (x86), its *_entry/*_exit pairs only: local_timer, reschedule, call_function, ...
)
TRACE_CLOCK = "mono"  # ktime_get_mono_fast_ns: CLOCK_MONOTONIC, the time base of the probes' records
BUFFER_KB = 2048  # per CPU: about 0.5 s of a 10 kHz timer's events, 10 POLL_S periods of slack
POLL_S = 0.2  # the reader reads in batches: a few pages per CPU and pass
MARGIN_NS = 1_000_000  # kept before the deadline: what ran on the CPU just before the wake-up was due
KEEP_NS = 3_000_000_000  # text kept per CPU for spikes still to come (the probe reports within ~0.1 s)
KEEP_BYTES = 64 << 20  # and never more than this per CPU
WAIT_S = 1.0  # a spike whose wake-up the reader has not reached after this is taken with what there is
MAX_SPIKES = 100  # spikes analysed per case (the first ones); the rest are counted
DRAIN_BYTES = 8 << 20  # per CPU and pass, so a reader that cannot keep up still resolves spikes
_TS = re.compile(r"\s(\d+)\.(\d+):\s")
_PID = re.compile(r"(?:prev|next)_pid=(\d+)")
_COUNTER = itertools.count(1)


class TraceUnavailable(RtqError):
    """Tracing cannot run here (no tracefs, read-only, no permission): a warning, the run goes on."""


def find_tracefs(mounts_text: str) -> Path | None:
    """The tracefs mounted at a usual place (/sys/kernel/tracing, /sys/kernel/debug/tracing) in
    /proc/self/mounts text; None when none. Mounts elsewhere are someone's own (another rtqual's private
    mount may go away during the run): never used."""
    points = {f[1] for f in map(str.split, mounts_text.splitlines()) if len(f) > 2 and f[2] == "tracefs"}
    return next((Path(p) for p in TRACEFS_CANDIDATES if p in points), None)


def line_ts(line: str) -> int | None:
    """The time of one trace line in ns (None for lines without one, e.g. "[LOST N EVENTS]")."""
    m = _TS.search(line)
    return int(m.group(1)) * 1_000_000_000 + int(m.group(2).ljust(9, "0")[:9]) if m else None


def text_range(text: str) -> tuple[int, int] | None:
    """(first, last) line time of a block of whole trace lines; None when no line has a time."""
    lines = text.splitlines()
    first = next((t for t in map(line_ts, lines[:20]) if t is not None), None)
    last = next((t for t in map(line_ts, reversed(lines[-20:])) if t is not None), None)
    if first is None or last is None:
        stamps = [t for t in map(line_ts, lines) if t is not None]
        if not stamps:
            return None
        first, last = stamps[0], stamps[-1]
    return first, last


def reach(text: str, start_ns: int) -> int | None:
    """How far a ring's text holds every event from start_ns on: the time of the last line of its unbroken stretch
    (no "[LOST ...]" line) that begins at or before start_ns; None when the text (or what follows its last hole)
    starts after start_ns. A non-consuming read of a ring the kernel is writing can end early or jump (the writer
    overwrote the page the kernel's iterator was on: it says "[LOST EVENTS]" or stops), so a read is checked."""
    last = None
    for line in text.splitlines():
        t = line_ts(line)
        if t is None:
            if "LOST" in line:
                if last is not None and last > start_ns:
                    return last  # a hole after start_ns: the stretch ends here
                last = None  # a hole before start_ns: what came before it does not count
            continue
        if t <= start_ns or last is not None:
            last = t
        else:
            return None
    return last


def window_lines(chunks: list[tuple[int, int, str]], start_ns: int, end_ns: int) -> list[str]:
    """The lines of kept text blocks (first, last, text) from start_ns to end_ns, with the kernel's
    "[LOST N EVENTS]" lines that fall inside (the lines around them overlap the window)."""
    out: list[str] = []
    lost: list[str] = []
    prev = None
    for first, last, text in chunks:
        if last < start_ns or first > end_ns:
            continue
        for line in text.splitlines():
            t = line_ts(line)
            if t is None:
                if "LOST" in line:
                    lost.append(line)
                continue
            if lost and t >= start_ns and (prev is None or prev <= end_ns):
                out += lost
            lost = []
            prev = t
            if start_ns <= t <= end_ns:
                out.append(line)
    return out + (lost if prev is None or prev <= end_ns else [])


def cpumask(cpus: list[int]) -> str:
    """A CPU list as tracefs reads a mask: hex, 32-bit words separated by commas ("3", "1,00000000")."""
    digits = f"{sum(1 << c for c in cpus):x}"
    digits = digits.zfill(-(-len(digits) // 8) * 8)
    return ",".join(digits[i : i + 8] for i in range(0, len(digits), 8)).lstrip("0") or "0"


def _policies(lines: list[str]) -> dict[int, str]:
    """The scheduling policy of the tasks switched in or out in a window, where they still exist."""
    out = {}
    for pid in {int(p) for line in lines for p in _PID.findall(line)} - {0}:
        try:
            out[pid] = SCHED_POLICY_NAMES.get(os.sched_getscheduler(pid), "other")
        except OSError:
            continue
    return out


def _write(path: Path, value: str) -> None:
    """One write to a tracefs file."""
    with open(path, "w") as f:
        f.write(value)


def _why(e: OSError) -> str:
    """Short reason of a tracefs failure."""
    if e.errno == errno.EROFS:
        return "read-only file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (tracing needs root or CAP_SYS_ADMIN)"
    return e.strerror or str(e)


def is_mounted(path: str | os.PathLike) -> bool:
    """Whether a tracefs is mounted on path."""
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return False
    return any(len(f) > 2 and f[1] == str(path) and f[2] == "tracefs" for f in map(str.split, text.splitlines()))


def unmount(path: str | os.PathLike) -> None:
    """Unmount a private tracefs mount and remove its folder (gone already is fine)."""
    if is_mounted(path):
        p = subprocess.run(["umount", str(path)], capture_output=True, text=True, timeout=10)
        if p.returncode != 0 and is_mounted(path):
            raise RtqError(f"cannot unmount tracefs {path}: {p.stderr.strip()}")
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass


def private_mount_folder() -> Path:
    """A new empty folder TMP/rtqual-tracefs-<pid>-XXXXXXXX for a private tracefs mount (the pid: the next rtqual
    unmounts it when this one was killed before it could)."""
    return Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-"))


def remove_orphan_mounts(dry_run: bool = False) -> list[Path]:
    """Unmount the private tracefs mounts TMP/rtqual-tracefs-<pid>-* of rtqual processes that no longer run (a
    killed monitor keeps no journal to restore from) and remove their folders; the paths (dry_run: only listed).
    Called when tracing starts and by `rtqual restore`."""
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return []
    removed = []
    for fields in map(str.split, text.splitlines()):
        if len(fields) < 3 or fields[2] != "tracefs":
            continue
        path = Path(fields[1])
        pid, sep, _ = path.name.removeprefix(MOUNT_PREFIX).partition("-")
        if path.parent != Path(tempfile.gettempdir()) or not path.name.startswith(MOUNT_PREFIX):
            continue
        if not sep or not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        try:
            if not dry_run:
                unmount(path)
        except (OSError, RtqError):
            continue
        removed.append(path)
    return removed


def remove_instance(path: str | os.PathLike) -> None:
    """Remove a tracefs instance (its buffers and settings go with it); absent is fine."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass


def remove_orphan_instances(root: Path | None = None, dry_run: bool = False) -> list[Path]:
    """Remove the instances rtqual-<pid>-N of rtqual processes that no longer run (a killed monitor keeps no
    journal to restore from); the removed paths (dry_run: only listed). Called when tracing starts and by
    `rtqual restore`."""
    if root is None:
        try:
            root = find_tracefs(Path("/proc/self/mounts").read_text())
        except OSError:
            return []
        if root is None:
            return []
    removed = []
    for d in (root / "instances").glob("rtqual-*-*"):
        pid = d.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                if not dry_run:
                    remove_instance(d)
            except OSError:
                continue
            removed.append(d)
    return removed


def _aside(cpus: list[int]) -> None:
    """Move the calling thread (a reader, at SCHED_OTHER) to the CPUs not traced where there are some: its reads
    cost kernel time, which a preempt=none kernel does not preempt, so on a traced CPU it would make spikes of its
    own."""
    others = set(os.sched_getaffinity(0)) - set(cpus)
    if others:
        os.sched_setaffinity(0, others)  # this thread only


def _window(cpu: int, wake_ns: int, latency_ns: int, stages: dict | None, real_ns: int | None) -> dict[str, Any]:
    """A spike waiting for its lines: cpu, wake-up, latency, deadline (and the timerlat split, the real time)."""
    w: dict[str, Any] = {"cpu": cpu, "wake_ns": wake_ns, "latency_ns": latency_ns, "deadline_ns": wake_ns - latency_ns}
    if stages:
        w["stages"] = stages
    if real_ns is not None:
        w["real_ns"] = real_ns
    return w


def _enables(events: Path, event: str) -> list[Path]:
    """The enable files of an event ("system/name"), or of a system's *_entry/*_exit events (the contexts the
    attribution times): those present in this kernel."""
    if "/" in event:
        return [events / event / "enable"] if (events / event / "enable").exists() else []
    return sorted(p for p in (events / event).glob("*_e*/enable") if p.parent.name.endswith(("_entry", "_exit")))


def feed(tracer: Tracer, rec: dict) -> None:
    """A probe's threshold event to the tracer (an event without integer cpu, mono_ns, latency_ns is skipped)."""
    if rec.get("type") != "event" or rec.get("kind") != "threshold":
        return
    cpu, wake, lat = rec.get("cpu"), rec.get("mono_ns"), rec.get("latency_ns")
    stages = rec.get("stages") if isinstance(rec.get("stages"), dict) else None  # the timerlat probe's split
    real = rec.get("real_ns")
    if all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (cpu, wake, lat)):
        tracer.spike(cpu, wake, lat, stages, real_ns=real if isinstance(real, int) else None)  # type: ignore[arg-type]


class Tracer:
    """rtqual's tracefs instance around one measurement, and the trace lines of its spikes."""

    def __init__(
        self,
        cpus: list[int],
        journal: Any = None,
        buffer_kb: int = BUFFER_KB,
        margin_ns: int = MARGIN_NS,
        max_spikes: int = MAX_SPIKES,
        all_cpus: bool = False,
    ):
        self.cpus = sorted(set(cpus))
        self.all_cpus = all_cpus  # each spike keeps the lines of every traced CPU (a response through a service)
        self.journal, self.buffer_kb, self.margin_ns, self.max_spikes = journal, buffer_kb, margin_ns, max_spikes
        self.notes: list[str] = []  # said to the user (a mount), kept in the case result
        self.root: Path | None = None  # tracefs in use
        self.mounted: Path | None = None  # our private mount, if we made one
        self.instance: Path | None = None
        self.events: list[str] = []
        self.timerlat = False
        self.spikes_seen = 0
        self.timerlat_spikes = 0  # spikes the timerlat probe split into stages
        self.lost_events = 0
        self.reader_cpu_ns: int | None = None  # the reader thread's CPU time (user + system), once it ended
        self._records: list[dict] = []  # our journal records (marked restored when undone)
        self._fds: dict[int, int] = {}
        self._fmt: traceraw.PageFormat | None = None  # the page and event formats (from the instance)
        self._chunks: dict[int, deque] = {c: deque() for c in self.cpus}  # cpu -> (first, last, page or text)
        # (a page's last: the next page's first, None for the newest)
        self._newest: dict[int, int] = dict.fromkeys(self.cpus, 0)
        self._bytes: dict[int, int] = dict.fromkeys(self.cpus, 0)
        self._pending: list[tuple[dict, float]] = []
        self._done: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- journal

    def _note(self, record: dict) -> dict:
        """Journal a change before it is made (the bundle's host/changes.json)."""
        self._records.append(record)
        if self.journal is not None:
            self.journal.note(record)
        return record

    def _undone(self, record: dict) -> None:
        record["restored"] = True
        if self.journal is not None:
            self.journal.save_state()

    # -- start

    def _tracefs(self) -> Path:
        """The tracefs to use: RTQUAL_TRACEFS, a mounted one, or a private mount made now (noted)."""
        forced = os.environ.get(TRACEFS_ENV)
        if forced:
            if not (Path(forced) / "instances").is_dir():
                raise TraceUnavailable(f"{TRACEFS_ENV}={forced}: not a tracefs folder (no instances/)")
            return Path(forced)
        try:
            found = find_tracefs(Path("/proc/self/mounts").read_text())
        except OSError:
            found = None
        if found is not None:
            return found
        folder = private_mount_folder()
        record = self._note({"knob": str(folder), "kind": "mount", "condition": "trace", "applied": True})
        try:
            p = subprocess.run(
                ["mount", "-t", "tracefs", "nodev", str(folder)], capture_output=True, text=True, timeout=10
            )
            failed = p.stderr.strip() if p.returncode != 0 else ""
        except (OSError, subprocess.TimeoutExpired) as e:
            failed = str(e)
        if failed:
            os.rmdir(folder)
            self._undone(record)
            raise TraceUnavailable(f"tracefs is not mounted and mounting it failed: {failed}")
        self.mounted = folder
        self.notes.append(f"tracefs was not mounted: rtqual mounted it on {folder} for this case (unmounted after)")
        return folder

    def start(self) -> None:
        """Make and arm the instance and start the reader; TraceUnavailable (nothing left behind) if not."""
        try:
            self._start()
        except OSError as e:
            self.stop()
            raise TraceUnavailable(f"tracing not possible here: {_why(e)}") from None
        except TraceUnavailable:
            self.stop()
            raise

    def make_instance(self, condition: str = "trace") -> Path:
        """tracefs found (or privately mounted), dead rtqual's instances removed, and a new instance
        rtqual-<pid>-<n>, journaled before it is made, off, with the mono clock and buffer_kb per CPU; stop()
        removes it. --trace and the osnoise run beside the noise probe (rtqual.measure.host.osnoise) share it.
        TraceUnavailable or OSError when it cannot be made."""
        root = self.root = self._tracefs()
        remove_orphan_instances(root)
        remove_orphan_mounts()
        self.timerlat = "timerlat" in (root / "available_tracers").read_text().split()
        path = root / "instances" / f"rtqual-{os.getpid()}-{next(_COUNTER)}"
        record = self._note({"knob": str(path), "kind": "trace-instance", "condition": condition, "applied": True})
        try:
            path.mkdir()
        except OSError as e:
            self._undone(record)
            raise TraceUnavailable(f"cannot create the tracefs instance {path}: {_why(e)}") from None
        self.instance = path
        _write(path / "tracing_on", "0")
        clocks = (path / "trace_clock").read_text()
        if TRACE_CLOCK not in clocks.replace("[", " ").replace("]", " ").split():
            raise TraceUnavailable(f"trace clock {TRACE_CLOCK!r} not available (have: {clocks.strip()})")
        _write(path / "trace_clock", TRACE_CLOCK)
        _write(path / "buffer_size_kb", str(self.buffer_kb))
        return path

    def arm(self, condition: str = "trace") -> Path:
        """make_instance() with the attribution's events enabled on this tracer's CPUs, still off."""
        path = self.make_instance(condition)
        _write(path / "tracing_cpumask", cpumask(self.cpus))
        self._enable_events(path)
        return path

    def _start(self) -> None:
        path = self.arm()
        try:
            self._fmt = traceraw.load(path, self.events)
        except (ValueError, KeyError) as e:
            raise TraceUnavailable(f"cannot read this kernel's trace formats: {e}") from None
        for cpu in self.cpus:
            raw = path / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw"
            self._fds[cpu] = os.open(raw, os.O_RDONLY | os.O_NONBLOCK)
        _write(path / "tracing_on", "1")
        self._thread = threading.Thread(target=self._reader, name="rtqual-trace", daemon=True)
        self._thread.start()

    def _enable_events(self, path: Path) -> None:
        """Enable the events the attribution reads (EVENTS, those this kernel has) in the instance at path."""
        for event in EVENTS:
            for enable in _enables(path / "events", event):
                _write(enable, "1")
                self.events.append(str(enable.parent.relative_to(path / "events")))
        if "sched/sched_switch" not in self.events:
            raise TraceUnavailable("no sched_switch event in this kernel's tracefs")

    # -- spikes

    def spike(
        self, cpu: int, wake_ns: int, latency_ns: int, stages: dict | None = None, real_ns: int | None = None
    ) -> None:
        """A threshold event of the probe: its CPU's lines from deadline - margin to wake_ns are kept.
        stages: the timerlat tracer's split of this latency ({"irq_ns", "thread_ns"[, "user_ns"]}), kept with it;
        real_ns: the wake-up on CLOCK_REALTIME (the probe's real_ns), kept with it."""
        self.spikes_seen += 1
        if stages:
            self.timerlat_spikes += 1
        if cpu not in self._chunks or self.spikes_seen > self.max_spikes:
            return
        with self._lock:
            self._pending.append((_window(cpu, wake_ns, latency_ns, stages, real_ns), time.monotonic()))

    def take(self) -> list[dict]:
        """The spikes whose lines are in, since the last take()."""
        with self._lock:
            out, self._done = self._done, []
        return out

    # -- the reader

    def _reader(self) -> None:
        """The reader thread: _run, then its CPU time kept (reader_cpu_ns) however it ended."""
        try:
            self._run()
        finally:
            self.reader_cpu_ns = time.thread_time_ns()

    def _run(self) -> None:
        """Drain the per-CPU pipes and resolve spikes until stopped; once more at the end."""
        _aside(self.cpus)
        while not self._stop.is_set():
            self._drain()
            self._resolve(final=False)
            self._stop.wait(POLL_S)
        self._drain()
        self._resolve(final=True)

    def _drain(self) -> None:
        """Read the pages each CPU's buffer holds (non-blocking, at most DRAIN_BYTES a pass) and keep them as
        they are, with the time of their first event and their losses from the page header (no event is
        looked at here); drop pages no spike can need."""
        fmt = self._fmt
        if fmt is None:
            return
        for cpu, fd in self._fds.items():
            got = 0
            while got < DRAIN_BYTES:
                try:
                    page = os.read(fd, fmt.page_bytes)
                except OSError:  # BlockingIOError: empty for now
                    break
                if not page:
                    break
                got += len(page)
                head = traceraw.page_head(fmt, page)
                if head is not None:
                    self.lost_events += max(head[2], 1) if head[2] else 0
                    self._keep(cpu, head[0], page)

    def _keep(self, cpu: int, first_ns: int, page: bytes) -> None:
        """Keep one page of a CPU (first, None, page): the page before it ends where it begins, its own end is
        not known until the next; drop the oldest no spike can need."""
        with self._lock:
            chunks = self._chunks[cpu]
            if chunks and chunks[-1][1] is None:
                chunks[-1] = (chunks[-1][0], first_ns, chunks[-1][2])
            chunks.append((first_ns, None, page))
            self._bytes[cpu] += len(page)
            self._newest[cpu] = max(self._newest[cpu], first_ns)
            keep_from = self._newest[cpu] - KEEP_NS
            if self._pending:
                keep_from = min(keep_from, min(w["deadline_ns"] for w, _ in self._pending) - self.margin_ns)
            while len(chunks) > 1 and (chunks[0][1] < keep_from or self._bytes[cpu] > KEEP_BYTES):
                self._bytes[cpu] -= len(chunks.popleft()[2])

    def _window(self, chunks: list, cpu: int, start_ns: int, end_ns: int) -> list[str]:
        """The lines of a CPU's kept pages (decoded now) or text blocks from start_ns to end_ns."""
        pages = [c for c in chunks if isinstance(c[2], bytes)]
        lines = window_lines([c for c in chunks if isinstance(c[2], str)], start_ns, end_ns)
        if pages and self._fmt is not None:
            lines += traceraw.window_lines(self._fmt, pages, cpu, start_ns, end_ns)
        return lines

    def _resolve(self, final: bool) -> None:
        """Cut the lines of each pending spike the reader has read past (or waited for long enough)."""
        now = time.monotonic()
        with self._lock:
            ready = [
                (w, t) for w, t in self._pending if final or self._newest[w["cpu"]] >= w["wake_ns"] or now - t > WAIT_S
            ]
            self._pending = [p for p in self._pending if p not in ready]
            chunks = {cpu: list(c) for cpu, c in self._chunks.items()}
        for w, _ in ready:
            cpu, start = w["cpu"], w["deadline_ns"] - self.margin_ns
            lines = self._window(chunks[cpu], cpu, start, w["wake_ns"])
            if self.all_cpus:  # the other CPUs' lines too, in time order (the spike's own analysis filters by CPU)
                others = [x for c in self.cpus if c != cpu for x in self._window(chunks[c], c, start, w["wake_ns"])]
                lines = sorted(lines + others, key=lambda x: line_ts(x) or 0)
            first = chunks[cpu][0][0] if chunks[cpu] else None
            complete = first is not None and first <= start and self._newest[cpu] >= w["wake_ns"]
            done = {**w, "lines": lines, "policies": _policies(lines), "complete": complete}
            with self._lock:
                self._done.append(done)

    # -- stop

    def stop(self) -> list[dict]:
        """Stop tracing, resolve the spikes left and remove the instance (and a private mount): always,
        whatever failed before. The spikes not taken yet."""
        if self.instance is not None:
            try:
                _write(self.instance / "tracing_on", "0")
            except OSError:
                pass
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}
        for record in reversed(self._records):
            if record.get("restored"):
                continue
            try:
                if record["kind"] == "trace-instance":
                    remove_instance(record["knob"])
                else:
                    unmount(record["knob"])
            except (OSError, RtqError) as e:
                reason = _why(e) if isinstance(e, OSError) else str(e)
                self.notes.append(f"could not remove {record['knob']}: {reason} (rtqual restore tries again)")
                continue
            self._undone(record)
        return self.take()

    def info(self) -> dict:
        """What was traced, for the case result ("trace")."""
        return {
            "source": SOURCE,
            "timerlat": (
                "used: each spike's irq/thread/user split from the timerlat probe"
                if self.timerlat_spikes
                else "available, used by `rtqual run timerlat` (docs/trace.md)"
                if self.timerlat
                else "not in this kernel"
            ),
            "tracefs": str(self.root) if self.root else None,
            "mounted_by_rtqual": self.mounted is not None,
            "instance": self.instance.name if self.instance else None,
            "trace_clock": TRACE_CLOCK,
            "buffer_size_kb": self.buffer_kb,
            "cpus": self.cpus,
            "events": self.events,
            "margin_ns": self.margin_ns,
            "spikes_seen": self.spikes_seen,
            "spikes_analysed": min(self.spikes_seen, self.max_spikes),
            "lost_events": self.lost_events,
            "reader_cpu_ns": self.reader_cpu_ns,
            "notes": self.notes,
        }


CAPTURE_BUFFER_KB = 512  # per CPU: about 3 s of a 1 kHz timer's events on a quiet CPU (measured: ~45 KB/s idle)
CAPTURE_KEEP_NS = 10_000_000  # kept before a captured spike's deadline: what held the CPU just before
CAPTURE_PER_HOUR = 60  # captures kept per hour (the default of --capture-per-hour); the rest counted
CAPTURE_READ_BYTES = 32 << 20  # one CPU's ring as text, at most (a 512 KB ring reads as about 2 MB)
READ_BYTES = 1 << 16  # one read of a ring's text
READ_TRIES = 3  # reads of a CPU's ring per capture at most, until one holds the window unbroken
READ_AGAIN_S = 0.01  # between them
_LOST = re.compile(r"\[LOST (\d+ )?EVENTS\]")
HOUR_S = 3600.0


class Ring(Tracer):
    """`--capture OVER`: rtqual's own tracefs instance as a bounded ring (CAPTURE_BUFFER_KB per CPU, overwritten
    oldest first, the monitored CPUs only) that nobody reads until a spike: no reader drains it, so it costs only
    the kernel's writing of events. A threshold event over OVER (at most per_hour an hour; the rest counted in
    `over_bound`) has its CPU's ring read without consuming it (per_cpu/cpuN/trace, "pause-on-trace" off: the
    kernel goes on writing) by a thread of its own on the CPUs not traced, and its lines from deadline - keep_ns to
    the wake-up kept: the same window a --trace spike has, analysed by the same code. A read the kernel's writer cut
    short (it overwrote the page the read was on) is read again (_capture); a spike the ring had already overwritten
    part of, or that no read held unbroken, is kept as not complete (its missing time "not known")."""

    def __init__(
        self,
        cpus: list[int],
        over_ns: int,
        per_hour: int = CAPTURE_PER_HOUR,
        journal: Any = None,
        buffer_kb: int = CAPTURE_BUFFER_KB,
        keep_ns: int = CAPTURE_KEEP_NS,
        all_cpus: bool = False,
        clock: Any = time.monotonic,
    ):
        super().__init__(cpus, journal, buffer_kb, keep_ns, sys.maxsize, all_cpus)
        self.over_ns, self.per_hour, self.clock = over_ns, per_hour, clock
        self.captured = 0  # spikes whose ring was read
        self.over_bound = 0  # spikes over OVER beyond per_hour in the last hour: counted, not captured
        self.rereads = 0  # ring reads again because a read did not hold a spike's window (cut short by the writer)
        self._hour: deque[float] = deque()  # when the captures of the last hour were taken (clock())
        self._kick = threading.Event()

    def _start(self) -> None:
        path = self.arm("capture")
        if (path / "options" / "pause-on-trace").exists():
            _write(path / "options" / "pause-on-trace", "0")  # reading the ring must not stop its writing
        _write(path / "tracing_on", "1")
        self._thread = threading.Thread(target=self._reader, name="rtqual-capture", daemon=True)
        self._thread.start()

    def spike(
        self, cpu: int, wake_ns: int, latency_ns: int, stages: dict | None = None, real_ns: int | None = None
    ) -> None:
        """A threshold event: captured when its latency exceeds OVER and the hour's bound allows, else counted."""
        if latency_ns <= self.over_ns or cpu not in self._chunks:
            return
        self.spikes_seen += 1
        if stages:
            self.timerlat_spikes += 1
        now = self.clock()
        while self._hour and now - self._hour[0] >= HOUR_S:
            self._hour.popleft()
        if len(self._hour) >= self.per_hour:
            self.over_bound += 1
            return
        self._hour.append(now)
        w = _window(cpu, wake_ns, latency_ns, stages, real_ns)
        w["captured"] = True
        with self._lock:
            self._pending.append((w, now))
        self._kick.set()

    def _run(self) -> None:
        """Capture the pending spikes as they come (asleep until one does: no polling), until stopped; once more
        at the end."""
        _aside(self.cpus)
        while not self._stop.is_set():
            self._kick.wait()
            self._kick.clear()
            self._capture()
        self._capture()

    def stop(self) -> list[dict]:
        """Wake the capture thread to end (after its last capture), then --trace's stop: the instance removed."""
        self._stop.set()
        self._kick.set()
        return super().stop()

    def _read(self, cpu: int) -> list[tuple[int, int, str]]:
        """One CPU's ring as kept text blocks (one block: the ring is small), read without consuming it, in reads of
        READ_BYTES (each a short stretch of kernel time: a monitored CPU that shares the reading is held briefly)."""
        assert self.instance is not None
        parts: list[bytes] = []
        try:
            with open(self.instance / "per_cpu" / f"cpu{cpu}" / "trace", "rb", buffering=0) as f:
                while sum(map(len, parts)) < CAPTURE_READ_BYTES and (data := f.read(READ_BYTES)):
                    parts.append(data)
        except OSError as e:
            self.notes.append(f"could not read the ring of CPU {cpu}: {_why(e)}")
            return []
        text = b"".join(parts).decode(errors="replace")
        text = text[: text.rfind("\n") + 1]
        rng = text_range(text)
        return [(rng[0], rng[1], text)] if rng else []

    def _capture(self) -> None:
        """Read the rings the pending spikes need and cut each spike's lines. A spike's own CPU is read again (at
        most READ_TRIES reads, READ_AGAIN_S apart) until a read holds its window unbroken: from a line at or before
        its start on, with no hole, to a line at or after its wake-up, or to the read's end when a read before ended
        at the same line (the CPU wrote nothing since: every event up to the wake-up was in before the probe reported
        it). A spike no read holds so is cut from the read with the most of its lines and kept as not complete."""
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        need = {c for w, _ in pending for c in (self.cpus if self.all_cpus else [w["cpu"]])}
        reads = {cpu: [self._read(cpu)] for cpu in sorted(need)}
        held: dict[int, list] = {}  # id(window) -> the read that holds it
        for tries in range(1, READ_TRIES + 1):
            for w, _ in pending:
                got = reads[w["cpu"]]
                if id(w) not in held and _holds(got[-1], got[-2] if len(got) > 1 else [], w, self.margin_ns):
                    held[id(w)] = got[-1]
            left = {w["cpu"] for w, _ in pending if id(w) not in held}
            if not left or tries == READ_TRIES:
                break
            time.sleep(READ_AGAIN_S)
            for cpu in sorted(left):
                reads[cpu].append(self._read(cpu))
        used: dict[int, str] = {}
        for w, _ in pending:
            cpu, start = w["cpu"], w["deadline_ns"] - self.margin_ns
            own = held.get(id(w)) or max(reads[cpu], key=lambda r: len(window_lines(r, start, w["wake_ns"])))
            used.update((id(text), text) for _, _, text in own)
            lines = window_lines(own, start, w["wake_ns"])
            if self.all_cpus:
                others = [x for c in self.cpus if c != cpu for x in window_lines(reads[c][-1], start, w["wake_ns"])]
                lines = sorted(lines + others, key=lambda x: line_ts(x) or 0)
            done = {**w, "lines": lines, "policies": _policies(lines), "complete": id(w) in held}
            with self._lock:
                self._done.append(done)
                self.captured += 1
        self.rereads += sum(len(r) - 1 for r in reads.values())
        self.lost_events += sum(int(n or 1) for text in used.values() for n in _LOST.findall(text))

    def info(self) -> dict:
        """What was captured, for the case result ("trace"): --trace's keys and the capture's own."""
        return {
            **super().info(),
            "mode": "capture",
            "over_ns": self.over_ns,
            "per_hour": self.per_hour,
            "keep_ns": self.margin_ns,
            "spikes_analysed": self.captured,
            "captured": self.captured,
            "over_bound": self.over_bound,
            "rereads": self.rereads,
        }


def _holds(read: list[tuple[int, int, str]], before: list[tuple[int, int, str]], w: dict, margin_ns: int) -> bool:
    """Whether a ring read (kept text blocks) holds a spike's window from deadline - margin_ns to the wake-up unbroken
    (Ring._capture); before: the read of the same CPU just before it ([] for the first)."""
    if not read:
        return False
    got = reach(read[0][2], w["deadline_ns"] - margin_ns)
    if got is None:
        return False
    return got >= w["wake_ns"] or (got == read[0][1] and bool(before) and before[0][1] == got)

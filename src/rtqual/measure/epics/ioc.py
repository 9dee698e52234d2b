"""Start and stop rtqual's EPICS IOC (a subprocess running rtqual.measure.epics.iocmain) on loopback.

    with Ioc(preset="aps") as ioc:        # FIFOs, database and free ports in a temp folder
        ioc.trigger()                     # one stimulus: its CLOCK_MONOTONIC time
        ioc.responses(1)                  # [(t_stim, t_wake, t_process, t_out)]

The IOC always stops: SIGINT, wait, then SIGKILL of its process group; it also gets SIGTERM if
rtqual dies (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.measure.epics import env as epics_env
from rtqual.procs import StartBound, die_with_parent, signal_group
from rtqual.util import remove_orphan_dirs

TEMP_PREFIX = "rtqual-ioc-"  # + rtqual's pid + "-": a folder whose rtqual is gone can be found and removed
PRESETS = ("kek", "aps")
RESPONSE = struct.Struct("=4q")  # t_stim, t_wake, t_process, t_out (ns, CLOCK_MONOTONIC)
STIMULUS = struct.Struct("=q")

_BI = """record(bi, "$(P)in") {
    field(DESC, "rtqual input line")
    field(DTYP, "rtqual")
    field(SCAN, "I/O Intr")
    field(INP, "@$(IN) mode=$(MODE) prio=$(PRIO) $(OPTS=)")
    field(ZNAM, "low")
    field(ONAM, "high")
    field(FLNK, "$(P)%s")
}
"""
_CALC = """record(calc, "$(P)%s") {
    field(DESC, "rtqual record chain")
    field(INPA, "$(P)%s NPP")
    field(CALC, "A")
    field(FLNK, "$(P)%s")
}
"""
CHAIN = {"kek": 0, "aps": 1}  # calc records between bi and bo, per preset
_BO = """record(bo, "$(P)out") {
    field(DESC, "rtqual output line")
    field(DTYP, "rtqual")
    field(OUT, "@$(OUT)")
    field(OMSL, "closed_loop")
    field(DOL, "$(P)%s NPP")
    field(ZNAM, "low")
    field(ONAM, "high")
}
"""


# ---- operator view: latency statistics as plain records (docs/epics.md) ----

STAGES = ("wake", "dispatch", "chain", "total")  # as published by the "rtqual latency" ai records
STAT_N, STAT_THR_US = 1000, 100.0  # defaults of $(P)stat:N and $(P)stat:thr
WINDOW = 4096  # max $(P)stat:N; a power of two (the compress record's LIFO index wraps modulo NSAM)
HISTORY = 1000  # points in $(P)lat:<stage>:history
HIST_BINS, HIST_MAX_US = 200, 2000.0  # $(P)lat:total:hist: 10 us bins; larger values land in the last

# What an operator or display reads and writes; everything else in the database is plumbing.
OPERATOR_PVS = (
    "HEARTBEAT",
    "UPTIME",
    "stat:N",
    "stat:thr",
    "stat:count",
    "lat:total:hist",
    *(f"lat:{s}{suffix}" for s in STAGES for suffix in ("", ":min", ":median", ":max", ":over", ":history")),
)

_STAGE_DB = """record(ai, "$(P)lat:{s}") {{
    field(DESC, "{s} latency of the last event")
    field(DTYP, "rtqual latency")
    field(SCAN, "I/O Intr")
    field(PRIO, "LOW")
    field(INP, "@{s}")
    field(EGU, "us")
    field(PREC, "1")
{alarms}    field(FLNK, "$(P)lat:{s}:fan")
}}
record(fanout, "$(P)lat:{s}:fan") {{
    field(LNK1, "$(P)lat:{s}:window")
    field(LNK2, "$(P)lat:{s}:isover")
    field(LNK3, "$(P)lat:{s}:n")
    field(LNK4, "$(P)lat:{s}:min")
    field(LNK5, "$(P)lat:{s}:median")
    field(LNK6, "$(P)lat:{s}:max")
    field(LNK7, "$(P)lat:{s}:over")
    field(LNK8, "$(P)lat:{s}:history"){hist}
}}
record(calc, "$(P)lat:{s}:n") {{
    field(DESC, "{s}: events in min/median/max")
    field(INPA, "$(P)lat:{s}:window.NUSE NPP")
    field(INPB, "$(P)stat:N NPP")
    field(CALC, "A<B?A:B")
    field(FLNK, "$(P)lat:{s}:setn")
}}
record(dfanout, "$(P)lat:{s}:setn") {{
    field(DESC, "running N until stat:N events")
    field(OMSL, "closed_loop")
    field(DOL, "$(P)lat:{s}:n NPP")
    field(OUTA, "$(P)lat:{s}:min.N NPP")
    field(OUTB, "$(P)lat:{s}:median.N NPP")
    field(OUTC, "$(P)lat:{s}:max.N NPP")
    field(OUTD, "$(P)lat:{s}:over.N NPP")
}}
record(compress, "$(P)lat:{s}:window") {{
    field(DESC, "{s}: newest first")
    field(ALG, "Circular Buffer")
    field(BALG, "LIFO Buffer")
    field(NSAM, "{window}")
    field(INP, "$(P)lat:{s} NPP")
}}
record(calc, "$(P)lat:{s}:isover") {{
    field(INPA, "$(P)lat:{s} NPP")
    field(INPB, "$(P)stat:thr NPP")
    field(CALC, "A>B?100:0")
    field(FLNK, "$(P)lat:{s}:overwin")
}}
record(compress, "$(P)lat:{s}:overwin") {{
    field(DESC, "{s} over thr: newest first")
    field(ALG, "Circular Buffer")
    field(BALG, "LIFO Buffer")
    field(NSAM, "{window}")
    field(INP, "$(P)lat:{s}:isover NPP")
}}
{stats}record(compress, "$(P)lat:{s}:history") {{
    field(DESC, "{s} latency, oldest first")
    field(ALG, "Circular Buffer")
    field(NSAM, "{history}")
    field(INP, "$(P)lat:{s} NPP")
    field(EGU, "us")
    field(PREC, "1")
}}
record(dfanout, "$(P)lat:{s}:setN") {{
    field(DESC, "stat:N to {s}'s compress records")
    field(OMSL, "closed_loop")
    field(DOL, "$(P)stat:N NPP")
    field(OUTA, "$(P)lat:{s}:min.N NPP")
    field(OUTB, "$(P)lat:{s}:median.N NPP")
    field(OUTC, "$(P)lat:{s}:max.N NPP")
    field(OUTD, "$(P)lat:{s}:over.N NPP")
    field(OUTE, "$(P)lat:{s}:window.N NPP")
    field(OUTF, "$(P)lat:{s}:overwin.N NPP")
    field(OUTG, "$(P)lat:{s}:history.N NPP")
    field(FLNK, "{next}")
}}
"""
# N to 1 compress of the window's newest N values (a scalar input would give the average, not
# the median: compressRecord.c implements the median only for arrays).
_STAT_DB = """record(compress, "$(P)lat:{s}:{name}") {{
    field(DESC, "{desc}")
    field(ALG, "{alg}")
    field(NSAM, "1")
    field(N, "{n}")
    field(INP, "$(P)lat:{s}:{src} NPP")
    field(EGU, "{egu}")
    field(PREC, "1")
}}
"""
_STATS = (
    ("min", "N to 1 Low Value", "window", "us"),
    ("median", "N to 1 Median", "window", "us"),
    ("max", "N to 1 High Value", "window", "us"),
    ("over", "N to 1 Average", "overwin", "%"),
)

_CONTROL_DB = """record(longout, "$(P)stat:N") {{
    field(DESC, "samples per statistic")
    field(EGU, "events")
    field(VAL, "{n}")
    field(DRVL, "1")
    field(DRVH, "{window}")
    field(PINI, "YES")
    field(FLNK, "$(P)lat:{first}:setN")
}}
record(ao, "$(P)stat:thr") {{
    field(DESC, "over-threshold limit")
    field(VAL, "{thr}")
    field(EGU, "us")
    field(PREC, "1")
    field(DRVL, "0")
    field(DRVH, "1e9")
    field(FLNK, "$(P)stat:N")
}}
record(ai, "$(P)stat:count") {{
    field(DESC, "events published")
    field(DTYP, "rtqual latency")
    field(SCAN, "I/O Intr")
    field(PRIO, "LOW")
    field(INP, "@count")
    field(EGU, "events")
    field(PREC, "0")
}}
record(calc, "$(P)lat:total:clip") {{
    field(DESC, "total, clipped into the histogram")
    field(INPA, "$(P)lat:total NPP")
    field(CALC, "A<{top}?A:{top}")
    field(FLNK, "$(P)lat:total:hist")
}}
record(histogram, "$(P)lat:total:hist") {{
    field(DESC, "total latency histogram (us)")
    field(SVL, "$(P)lat:total:clip NPP")
    field(NELM, "{bins}")
    field(LLIM, "0")
    field(ULIM, "{hmax}")
}}
record(longout, "$(P)lat:total:hist:clear") {{
    field(DESC, "stat:N or stat:thr clear the histogram")
    field(VAL, "1")
    field(OUT, "$(P)lat:total:hist.CMD NPP")
}}
"""


# A requirement's limit as alarm fields: HIHI (MAJOR) at the limit, HIGH (MINOR) at this share of it.
ALARM_WARN_SHARE = 0.5
EPICS_EPOCH_UNIX_S = 631_152_000  # 1990-01-01 UTC, where EPICS time stamps count from
# The requirement statistic whose limit sets an operator PV's alarm fields: every event's total latency
# above a `max` limit breaks it (the case's sample, stimulus to response, is never shorter).
ALARM_STATS = {"lat:total": "max"}


def alarm_fields(limit_us: float | None) -> str:
    """A requirement's limit (µs) as record fields: HIHI (MAJOR) at the limit, HIGH (MINOR) at ALARM_WARN_SHARE
    of it; '' without a limit (nothing invented). The ai records compare with >=, so a value equal to a
    `<=` limit alarms too."""
    if limit_us is None:
        return ""
    return (
        f'    field(HIHI, "{limit_us:.15g}")\n    field(HHSV, "MAJOR")\n'
        f'    field(HIGH, "{limit_us * ALARM_WARN_SHARE:.15g}")\n    field(HSV, "MINOR")\n'
    )


def uptime_db(p: str, who: str, start_unix_s: float | None = None) -> str:
    """{p}UPTIME, seconds since `who` started at start_unix_s (None: at iocInit), recomputed every second by the
    IOC from its clock (devSoft's "Soft Timestamp"), as devIocStats names it (there a string)."""
    start = (
        f'    field(INP, "{start_unix_s - EPICS_EPOCH_UNIX_S:.3f}")\n'
        if start_unix_s is not None
        else '    field(DTYP, "Soft Timestamp")\n    field(INP, "@")\n'
    )
    return (
        f'record(ai, "{p}UPTIME:start") {{\n    field(DESC, "start time, EPICS epoch")\n{start}'
        f'    field(PINI, "YES")\n    field(EGU, "s")\n    field(PREC, "3")\n}}\n'
        f'record(ai, "{p}UPTIME:now") {{\n    field(DTYP, "Soft Timestamp")\n    field(INP, "@")\n}}\n'
        f'record(calc, "{p}UPTIME") {{\n    field(DESC, "seconds since {who} started")\n    field(SCAN, "1 second")\n'
        f'    field(INPA, "{p}UPTIME:now PP")\n    field(INPB, "{p}UPTIME:start NPP")\n    field(CALC, "A-B")\n'
        f'    field(EGU, "s")\n    field(PREC, "0")\n}}\n'
    )


_HEARTBEAT_DB = """record(calc, "$(P)HEARTBEAT") {
    field(DESC, "1 Hz counter since the IOC started")
    field(SCAN, "1 second")
    field(CALC, "VAL+1")
    field(EGU, "counts")
    field(PREC, "0")
}
"""


def clock_db() -> str:
    """HEARTBEAT and UPTIME (macro P): the IOC's two records scanned at 1 Hz."""
    return _HEARTBEAT_DB + uptime_db("$(P)", "the IOC")


def operator_db(max_limit_us: float | None = None, clock: bool = True) -> str:
    """The latency statistics (macro P): per stage a sliding window of the newest stat:N values
    with min/median/max/% over stat:thr, a history; for total a histogram. Writing stat:N (or
    stat:thr) writes .N of every compress record, which resets them, and clears the histogram.
    Until stat:N events have arrived, each event sets the statistics' N to the events so far
    (lat:<stage>:n), so a CA client sees running values from the first event on. max_limit_us: the
    case's `max` requirement, lat:total's alarm limits (alarm_fields). Then HEARTBEAT and UPTIME (clock_db;
    clock=False leaves them out, for benchmarks/ioc_operator_cost.py)."""
    out = []
    for i, s in enumerate(STAGES):
        stats = "".join(
            _STAT_DB.format(s=s, name=name, alg=alg, src=src, egu=egu, n=STAT_N, desc=f"{s} {name} of the last N")
            for name, alg, src, egu in _STATS
        )
        nxt = f"$(P)lat:{STAGES[i + 1]}:setN" if i + 1 < len(STAGES) else "$(P)lat:total:hist:clear"
        hist = '\n    field(LNK9, "$(P)lat:total:clip")' if s == "total" else ""
        alarms = alarm_fields(max_limit_us if ALARM_STATS.get(f"lat:{s}") == "max" else None)
        out.append(
            _STAGE_DB.format(s=s, stats=stats, next=nxt, hist=hist, window=WINDOW, history=HISTORY, alarms=alarms)
        )
    control = _CONTROL_DB.format(
        n=STAT_N,
        thr=STAT_THR_US,
        window=WINDOW,
        first=STAGES[0],
        top=HIST_MAX_US - HIST_MAX_US / HIST_BINS / 2,
        bins=HIST_BINS,
        hmax=HIST_MAX_US,
    )
    return "".join(out) + control + (clock_db() if clock else "")


def make_db(
    preset: str = "kek", operator: bool = True, chain: int | None = None, max_limit_us: float | None = None
) -> str:
    """The database for a preset; macros P, IN, OUT, MODE, PRIO (and OPTS) are filled in by
    iocmain. kek: bi -> bo (KEK's two records); aps: bi -> calc -> bo. chain: that many calc
    records between bi and bo instead (calc, calc2, calc3, ...), each passing the value on.
    operator: add the latency statistics (operator_db, with max_limit_us's alarm limits), published at low
    priority after each response."""
    if preset not in CHAIN:
        raise RtqError(f"unknown IOC preset {preset!r}: choose one of {', '.join(PRESETS)}")
    n = CHAIN[preset] if chain is None else chain
    if not 0 <= n <= 10000:
        raise RtqError(f"IOC record chain: {n} calc records is not in 0..10000")
    names = ["in", *("calc" if i == 0 else f"calc{i + 1}" for i in range(n)), "out"]
    db = _BI % names[1] + "".join(_CALC % (names[i], names[i - 1], names[i + 1]) for i in range(1, n + 1))
    db += _BO % names[-2]
    return db + operator_db(max_limit_us) if operator else db


def random_prefix() -> str:
    return f"rtq{secrets.token_hex(3)}:"


class Ioc:
    def __init__(
        self,
        preset: str = "kek",
        mode: str = "callback",
        prefix: str | None = None,
        prio: int = 90,
        env: dict[str, str] | None = None,
        workdir: str | Path | None = None,
        extra_db: str = "",
        operator: bool = True,
        cpus: str | list[int] | None = None,
        rtprio: int | None = None,
        reader_cpu: int | None = None,
        gpio_in: str | None = None,
        gpio_out: str | None = None,
        uio_in: str | None = None,
        chain: int | None = None,
        max_limit_us: float | None = None,
    ):
        """cpus: the IOC process's CPU list ("0-1" or [0, 1]); rtprio: SCHED_FIFO priority of the
        process before iocInit; reader_cpu: pin the bi's reader thread; gpio_in/gpio_out:
        "/dev/gpiochipN:LINE [edge=...]" instead of the FIFOs (trigger/responses then unused; with
        gpio_out the bo still writes its four times to fifo_out, for a harness on the wires); uio_in:
        "/dev/uioN", the bi woken by that device's interrupt (raised, acknowledged and unmasked by the harness);
        operator: the latency statistics records; chain: calc records between bi and bo (make_db);
        max_limit_us: the case's `max` requirement, alarm limits of lat:total (alarm_fields)."""
        if mode not in ("callback", "immediate"):
            raise RtqError(f"unknown IOC processing mode {mode!r}: callback or immediate")
        self.preset, self.mode, self.prio = preset, mode, prio
        self.extra_db = extra_db  # more records (macro P), e.g. the CA load's (rtqual.measure.epics.ca)
        self.chain, self.max_limit_us = chain, max_limit_us
        make_db(preset, operator=False, chain=chain)  # a bad preset or chain is said now
        self.operator = operator
        self.cpus = ",".join(map(str, cpus)) if isinstance(cpus, (list, tuple)) else cpus
        self.rtprio, self.reader_cpu = rtprio, reader_cpu
        self.gpio_in, self.gpio_out, self.uio_in = gpio_in, gpio_out, uio_in
        if prefix is not None and not re.fullmatch(r"[A-Za-z0-9_:.;<>\[\]+-]{1,40}", prefix):
            raise RtqError(f"IOC prefix {prefix!r}: 1-40 characters of A-Z a-z 0-9 _ : . ; < > [ ] + -")
        self.prefix = prefix or random_prefix()
        self.env = epics_env.epics_env(env)
        self._own_dir = workdir is None  # ours to remove, also by the IOC if rtqual dies first
        if workdir is None:
            remove_orphan_dirs(TEMP_PREFIX)  # a killed rtqual's folder that no bundle recorded
        self.dir = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-") if workdir is None else workdir)
        self.db = self.dir / "ioc.db"
        self.fifo_in = self.dir / "in.fifo"
        self.fifo_out = self.dir / "out.fifo"
        self.log = self.dir / "ioc.log"
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}
        self.end: dict = {}  # the IOC's end message (its callback queues), after stop()
        self._w = self._r = -1
        self._buf = b""

    def pv(self, name: str) -> str:
        return self.prefix + name

    # ---- lifetime ----

    def database(self) -> str:
        """The database the IOC loads (macros unexpanded)."""
        return make_db(self.preset, self.operator, self.chain, self.max_limit_us) + self.extra_db

    def start(self, timeout: float = 30.0) -> Ioc:
        self.db.write_text(self.database())
        for fifo in (self.fifo_in, self.fifo_out):
            if not fifo.exists():
                os.mkfifo(fifo, 0o600)
        cmd = [
            sys.executable,
            "-m",
            "rtqual.measure.epics.iocmain",
            "--db",
            str(self.db),
            "--prefix",
            self.prefix,
            *(
                ("--gpio-in", self.gpio_in)
                if self.gpio_in
                else ("--uio-in", self.uio_in)
                if self.uio_in
                else ("--fifo-in", str(self.fifo_in))
            ),
            *(
                ("--gpio-out", self.gpio_out, "--times-out", str(self.fifo_out))
                if self.gpio_out
                else ("--fifo-out", str(self.fifo_out))
            ),
            "--mode",
            self.mode,
            "--prio",
            str(self.prio),
        ]
        for opt, value in (
            ("--cpus", self.cpus),
            ("--rtprio", self.rtprio),
            ("--reader-cpu", self.reader_cpu),
            ("--orphan-removes", self.dir if self._own_dir else None),
        ):
            if value is not None:
                cmd += [opt, str(value)]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                env=self.env,
                start_new_session=True,
                preexec_fn=lambda: die_with_parent(signal.SIGTERM),
            )
        try:
            self.ready = self._wait_ready(timeout)
            # Read-write opens never block and never see hang-up (Linux FIFOs).
            self._w = os.open(self.fifo_in, os.O_RDWR | os.O_CLOEXEC)
            self._r = os.open(self.fifo_out, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> dict:
        """The IOC's ready message; `timeout` is how long it may go without using the CPU (StartBound)."""
        assert self.proc is not None and self.proc.stdout is not None, "_wait_ready before start()"
        fd = self.proc.stdout.fileno()
        bound = StartBound(self.proc.pid, timeout)
        buf = b""
        while (left := bound.remaining()) > 0:
            if not select.select([fd], [], [], min(left, 1.0))[0]:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RtqError(f"EPICS IOC exited during start (exit {self.proc.wait()}): {self.log_tail()}")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("type") == "ready":
                    return msg
        raise RtqError(f"EPICS IOC not ready after {bound.describe()}: {self.log_tail()}")

    def log_tail(self, lines: int = 5) -> str:
        """The IOC's EPICS error lines (colours removed) if it printed any, else its last lines."""
        try:
            text = re.sub(r"\x1b\[[0-9;]*m", "", self.log.read_text(errors="replace")).strip().splitlines()
        except OSError:
            return ""
        errors = [line for line in text if line.startswith("ERROR")]
        return " | ".join((errors or text)[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGINT, wait, SIGKILL of the process group. Returns the IOC's exit status."""
        for fd in (self._w, self._r):
            if fd >= 0:
                os.close(fd)
        self._w = self._r = -1
        rc = None
        if self.proc is not None:
            pgid = self.proc.pid  # its own session: pgid == pid
            if self.proc.poll() is None:
                signal_group(pgid, signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass
            signal_group(pgid, signal.SIGKILL)  # anything left in the group
            rc = self.proc.wait()
            if self.proc.stdout and not self.proc.stdout.closed:  # a second stop() reads nothing again
                self.end = _end_message(_rest(self.proc.stdout.fileno()))
                self.proc.stdout.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def __enter__(self) -> Ioc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- lines ----

    def trigger(self) -> int:
        """Write one stimulus carrying its CLOCK_MONOTONIC time; returns that time (ns)."""
        t = time.monotonic_ns()
        os.write(self._w, STIMULUS.pack(t))
        return t

    def responses(self, n: int, timeout: float = 5.0) -> list[tuple[int, int, int, int]]:
        """Up to n responses (t_stim, t_wake, t_process, t_out), waiting at most `timeout`."""
        out: list[tuple[int, int, int, int]] = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                break
            try:
                self._buf += os.read(self._r, RESPONSE.size * 256)
            except BlockingIOError:
                continue
            while len(self._buf) >= RESPONSE.size and len(out) < n:
                out.append(RESPONSE.unpack_from(self._buf))
                self._buf = self._buf[RESPONSE.size :]
        return out


def _rest(fd: int, wait_s: float = 1.0) -> bytes:
    """What is left on the IOC's stdout once it exited, never waiting more than wait_s (a process that kept the
    pipe open cannot hold the stop)."""
    out, deadline = b"", time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
    return out


def _end_message(rest: bytes) -> dict:
    """The IOC's last JSON line of type "end" (iocmain: its callback queues), {} if it wrote none."""
    for line in reversed(rest.splitlines()):
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("type") == "end":
            return msg
    return {}

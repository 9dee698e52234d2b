"""Start and stop rtqual's EPICS IOC (a subprocess running rtqual.epics.iocmain) on loopback.

    with Ioc(preset="aps") as ioc:        # FIFOs, database and free ports in a temp folder
        ioc.trigger()                     # one stimulus: its CLOCK_MONOTONIC time
        ioc.responses(1)                  # [(t_stim, t_wake, t_process, t_out)]

The IOC always stops: SIGINT, wait, then SIGKILL of its process group; it also gets SIGTERM if
rtqual dies (PR_SET_PDEATHSIG)."""
from __future__ import annotations

import json
import os
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

from rtqual.epics import env as epics_env
from rtqual.errors import RtqError
from rtqual.procs import die_with_parent

PRESETS = ("kek", "aps")
RESPONSE = struct.Struct("=4q")  # t_stim, t_wake, t_process, t_out (ns, CLOCK_MONOTONIC)
STIMULUS = struct.Struct("=q")

_BI = """record(bi, "$(P)in") {
    field(DESC, "rtqual input line")
    field(DTYP, "rtqual")
    field(SCAN, "I/O Intr")
    field(INP, "@$(IN) mode=$(MODE) prio=$(PRIO)")
    field(ZNAM, "low")
    field(ONAM, "high")
    field(FLNK, "$(P)%s")
}
"""
_CALC = """record(calc, "$(P)calc") {
    field(DESC, "rtqual record chain")
    field(INPA, "$(P)in NPP")
    field(CALC, "A")
    field(FLNK, "$(P)out")
}
"""
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


def make_db(preset: str = "kek") -> str:
    """The database for a preset; macros P, IN, OUT, MODE, PRIO are filled in by iocmain.
    kek: bi -> bo (KEK's two records); aps: bi -> calc -> bo."""
    if preset == "kek":
        return _BI % "out" + _BO % "in"
    if preset == "aps":
        return _BI % "calc" + _CALC + _BO % "calc"
    raise RtqError(f"unknown IOC preset {preset!r}: choose one of {', '.join(PRESETS)}")


def random_prefix() -> str:
    return f"rtq{secrets.token_hex(3)}:"


class Ioc:
    def __init__(self, preset: str = "kek", mode: str = "callback", prefix: str | None = None,
                 prio: int = 90, env: dict[str, str] | None = None, workdir: str | Path | None = None,
                 extra_db: str = ""):
        if mode not in ("callback", "immediate"):
            raise RtqError(f"unknown IOC processing mode {mode!r}: callback or immediate")
        self.preset, self.mode, self.prio = preset, mode, prio
        self.extra_db = extra_db  # more records (macro P), e.g. the CA load's (rtqual.epics.ca)
        self.prefix = prefix or random_prefix()
        self.env = epics_env.epics_env(env)
        self._own_dir = workdir is None
        self.dir = Path(tempfile.mkdtemp(prefix="rtqual-ioc-") if workdir is None else workdir)
        self.db = self.dir / "ioc.db"
        self.fifo_in = self.dir / "in.fifo"
        self.fifo_out = self.dir / "out.fifo"
        self.log = self.dir / "ioc.log"
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}
        self._w = self._r = -1
        self._buf = b""

    def pv(self, name: str) -> str:
        return self.prefix + name

    # ---- lifetime ----

    def start(self, timeout: float = 30.0) -> "Ioc":
        self.db.write_text(make_db(self.preset) + self.extra_db)
        for fifo in (self.fifo_in, self.fifo_out):
            if not fifo.exists():
                os.mkfifo(fifo, 0o600)
        cmd = [sys.executable, "-m", "rtqual.epics.iocmain", "--db", str(self.db), "--prefix", self.prefix,
               "--fifo-in", str(self.fifo_in), "--fifo-out", str(self.fifo_out), "--mode", self.mode,
               "--prio", str(self.prio)]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                         env=self.env, start_new_session=True,
                                         preexec_fn=lambda: die_with_parent(signal.SIGTERM))
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
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            rlist, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not rlist:
                break
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
        raise RtqError(f"EPICS IOC not ready after {timeout:g} s: {self.log_tail()}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

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
                _killpg(pgid, signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass
            _killpg(pgid, signal.SIGKILL)  # anything left in the group
            rc = self.proc.wait()
            if self.proc.stdout:
                self.proc.stdout.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def __enter__(self) -> "Ioc":
        return self.start()

    def __exit__(self, *exc) -> None:
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
                self._buf = self._buf[RESPONSE.size:]
        return out


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass

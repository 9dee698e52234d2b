"""Channel Access clients around rtqual's IOC, all run as `rtqual-ca` subprocesses on loopback.

    ioc = Ioc(preset="aps", extra_db=ca_db(1000))      # load records + the ca-rtt records
    with ioc, Repeater(ioc.env), CaLoad(ioc.prefix, 1000, put_rate_hz=1000, env=ioc.env) as load:
        ...                                              # measure (e.g. rtqual-ca ca-rtt)
    load.result()   # {"records": 1000, "put": {summary}, "monitor": {summary}}

The APS load (seed 001): N records on the IOC, one client putting values to them and one
monitoring their changes. Every process gets its env from rtqual.measure.epics.env.epics_env (loopback,
per-run ports) and always stops: SIGINT, wait, SIGKILL of its process group; PR_SET_PDEATHSIG
stops it if rtqual dies."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from typing import IO

from rtqual.errors import RtqError
from rtqual.measure.epics import env as epics_env
from rtqual.measure.run import native
from rtqual.procs import StartBound, die_with_parent, signal_group

LOAD_RECORD = "load:%04d"  # $(P)load:0000 ... (rtqual-ca put/monitor use the same names)
RTT_PUT = "rtt:put"  # ca-rtt: rtqual-ca ca-rtt --put $(P)rtt:put --monitor $(P)rtt:echo
RTT_ECHO = "rtt:echo"

_LOAD = """record(calc, "$(P)load:%04d") {
    field(DESC, "rtqual CA load")
    field(SCAN, "%s")
    field(CALC, "VAL+1")
}
"""
_RTT = """record(ao, "$(P)rtt:put") {
    field(DESC, "rtqual ca-rtt stimulus")
    field(FLNK, "$(P)rtt:echo")
}
record(calc, "$(P)rtt:echo") {
    field(DESC, "rtqual ca-rtt echo")
    field(INPA, "$(P)rtt:put NPP")
    field(CALC, "A")
}
"""


def ca_db(records: int, scan: str = ".1 second") -> str:
    """Database text (macro P) for Ioc(extra_db=...): `records` calc records $(P)load:NNNN that
    count up each time they process (every `scan` and at every put, which writes their field A
    and so processes them: rtqual-ca put), plus the ca-rtt pair $(P)rtt:put (ao, FLNK) ->
    $(P)rtt:echo (calc, A = the put value) so the round trip passes through record processing."""
    if not 0 <= records <= 100000:
        raise RtqError(f"CA load records: {records} is not in 0..100000")
    if '"' in scan or "\n" in scan:
        raise RtqError(f"CA load scan {scan!r}: not a SCAN value")
    return "".join(_LOAD % (i, scan) for i in range(records)) + _RTT


class CaProcess:
    """One `rtqual-ca COMMAND ARGS` process: JSON Lines on stdout, a ready line at start, a
    summary line at the end; stderr kept in a temp file for error messages."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None):
        self.args = [str(a) for a in args]
        self.env = epics_env.epics_env(env)
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}
        self.records: list[dict] = []
        self._buf = b""
        self._err: IO[bytes] | None = None
        self.stderr = ""  # all of stderr, after stop()

    def start(self, timeout: float = 30.0) -> CaProcess:
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [str(native.ca_path()), *self.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=self.env,
            start_new_session=True,
            preexec_fn=lambda: die_with_parent(signal.SIGTERM),
        )
        try:
            self.ready = self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _read(self, timeout: float) -> bool:
        """Read what stdout has within `timeout`, parse whole lines; False at end of file."""
        assert self.proc is not None and self.proc.stdout is not None, "read before start()"
        fd = self.proc.stdout.fileno()
        if not select.select([fd], [], [], max(0.0, timeout))[0]:
            return True
        chunk = os.read(fd, 65536)
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            try:
                self.records.append(json.loads(line))
            except ValueError:
                pass
        return bool(chunk)

    def _wait_ready(self, timeout: float) -> dict:
        """The client's ready record; `timeout` is how long it may go without using the CPU (StartBound)."""
        assert self.proc is not None, "_wait_ready before start()"
        bound = StartBound(self.proc.pid, timeout)
        while (left := bound.remaining()) > 0:
            if not self._read(min(left, 1.0)):
                raise RtqError(
                    f"rtqual-ca {self.args[0]} exited during start (exit {self.proc.wait()}): {self.stderr_tail()}"
                )
            for r in self.records:
                if r.get("type") == "ready":
                    return r
        raise RtqError(f"rtqual-ca {self.args[0]} not ready after {bound.describe()}: {self.stderr_tail()}")

    def _stderr_text(self) -> str:
        if self._err is None or self._err.closed:
            return self.stderr
        self._err.seek(0)
        return self._err.read().decode(errors="replace")

    def stderr_tail(self, lines: int = 3) -> str:
        return " | ".join(self._stderr_text().strip().splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def summary(self) -> dict | None:
        return next((r for r in reversed(self.records) if r.get("type") == "summary"), None)

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGINT, read stdout to its end (the summary) within `timeout`, SIGKILL of the group."""
        if self.proc is None or self.proc.stdout is None:
            return None
        if self.proc.stdout.closed:  # stopped before
            return self.proc.returncode
        pgid = self.proc.pid  # own session: pgid == pid
        try:
            if self.proc.poll() is None:
                signal_group(pgid, signal.SIGINT)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._read(deadline - time.monotonic()):
                pass
        finally:
            signal_group(pgid, signal.SIGKILL)
            rc = self.proc.wait()
            self.proc.stdout.close()
            self.stderr = self._stderr_text()
            if self._err is not None:
                self._err.close()
        return rc

    def __enter__(self) -> CaProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Repeater(CaProcess):
    """libca's CA repeater (`rtqual-ca repeater`) on env's EPICS_CA_REPEATER_PORT, so clients
    do not try to spawn a caRepeater executable (epicscorelibs ships none)."""

    def __init__(self, env: dict[str, str] | None = None):
        super().__init__(["repeater"], env)


class CaLoad:
    """The APS CA load: `rtqual-ca put` (put_rate_hz puts/s in total, round-robin over the
    records) and, if `monitor`, `rtqual-ca monitor` (DBE_VALUE on every record) against the
    records of ca_db(records) on the IOC with `prefix`. A context manager: both clients are
    ready (all channels connected) inside the block and stopped after it."""

    def __init__(
        self,
        prefix: str,
        records: int,
        put_rate_hz: int,
        monitor: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 30.0,
    ):
        if records < 1 or put_rate_hz < 0 or not (put_rate_hz or monitor):
            raise RtqError(
                f"CA load: {records} records, put rate {put_rate_hz} Hz, monitor {monitor}: want "
                "records >= 1 and a put client (rate >= 1 Hz) or a monitor"
            )
        self.prefix, self.records, self.put_rate_hz, self.timeout = prefix, records, put_rate_hz, timeout
        common = ["--prefix", prefix, "--records", str(records), "--timeout", f"{int(timeout * 1000)}ms"]
        env = epics_env.epics_env(env)
        self.put = CaProcess(["put", *common, "--rate", str(put_rate_hz)], env) if put_rate_hz else None
        self.monitor = CaProcess(["monitor", *common], env) if monitor else None
        self.codes: dict[str, int | None] = {}

    def start(self) -> CaLoad:
        try:
            if self.monitor:
                self.monitor.start(self.timeout + 10)
            if self.put:
                self.put.start(self.timeout + 10)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the put client first (so the monitor sees its last values), then the monitor."""
        for role, p in (("put", self.put), ("monitor", self.monitor)):
            if p is not None and p.proc is not None:
                self.codes[role] = p.stop()

    def result(self) -> dict:
        """{"records": N, "put": put summary or None, "monitor": monitor summary or None} (achieved
        rates); after stop()."""
        put = self.put.summary() if self.put else None
        if self.put and put is None:
            raise RtqError(f"rtqual-ca put gave no summary (exit {self.codes.get('put')}): {self.put.stderr_tail()}")
        mon = self.monitor.summary() if self.monitor else None
        if self.monitor and mon is None:
            raise RtqError(
                f"rtqual-ca monitor gave no summary (exit {self.codes.get('monitor')}): {self.monitor.stderr_tail()}"
            )
        return {"records": self.records, "put": put, "monitor": mon}

    def __enter__(self) -> CaLoad:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

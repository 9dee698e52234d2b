"""Process lifetime helpers shared by the probe spawner, the load drivers, the IOC and the CA clients."""

import ctypes
import os
import signal
import subprocess
import time

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a preexec_fn: the child gets `sig` when rtqual dies, even by SIGKILL, so no probe or
    load outlives the run that started it (processes the child forks later are the load's own)."""
    _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a process group (our children run in their own sessions: pgid == pid);
    a group already gone, or not ours, is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> int:
    """Wait for a probe that was asked to stop (or ends by itself); SIGINT, then SIGKILL its whole group
    if it does not finish within grace_s each. Its exit code."""
    for sig in (None, signal.SIGINT, signal.SIGKILL):
        if sig is not None:
            signal_group(proc.pid, sig)
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def stat_fields(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, session, ...); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) a process has used, from /proc/PID/stat; None once it is gone."""
    fields = stat_fields(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class StartBound:
    """How long to wait for a child to say it is ready: `idle_s` during which it uses no CPU, at most
    `cap_factor` × `idle_s` in all. A hung child uses none and fails after idle_s; a child still working,
    as a Python IOC on an emulated (TCG) or loaded host does for 45 s and more, is waited for."""

    def __init__(self, pid: int, idle_s: float, cap_factor: float = 10.0) -> None:
        self.pid, self.idle_s = pid, idle_s
        self.start = time.monotonic()
        self.deadline = self.start + idle_s
        self.cap = self.start + idle_s * cap_factor
        self.cpu_s = cpu_seconds(pid) or 0.0

    def remaining(self) -> float:
        """Seconds left (0 when the bound is reached); a child that used CPU since the last call gets
        idle_s more, up to the cap."""
        now = time.monotonic()
        cpu_s = cpu_seconds(self.pid)
        if cpu_s is not None and cpu_s > self.cpu_s:
            self.cpu_s = cpu_s
            self.deadline = min(self.cap, now + self.idle_s)
        return max(0.0, self.deadline - now)

    def describe(self) -> str:
        """For the error: how long it waited, and why it stopped."""
        waited = time.monotonic() - self.start
        why = "its limit" if self.deadline >= self.cap else f"{self.idle_s:g} s without using the CPU"
        return f"{waited:.0f} s ({why}; {self.cpu_s:.1f} s of CPU used)"

"""Process lifetime helpers shared by the probe spawner, the load drivers, the IOC and the CA clients."""

import ctypes
import os
import signal
import subprocess

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

"""Process lifetime helpers shared by the probe spawner and the load drivers."""
import ctypes
import signal

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a preexec_fn: the child gets `sig` when rtqual dies, even by SIGKILL, so no probe or
    load outlives the run that started it (processes the child forks later are the load's own)."""
    _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

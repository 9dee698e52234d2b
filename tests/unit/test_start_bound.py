"""StartBound: a child's start is bounded by time without CPU use, not by wall time alone."""

import subprocess
import sys
import time

from rtqual.procs import StartBound, cpu_seconds


def _wait(proc: subprocess.Popen, bound: StartBound) -> bool:
    """True when the child ended (its 'ready') before the bound ran out."""
    while (left := bound.remaining()) > 0:
        try:
            proc.wait(timeout=min(left, 0.1))
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_busy_child_is_waited_for_past_the_idle_bound():
    proc = _child("import time\nt = time.monotonic()\nwhile time.monotonic() - t < 1.5: pass")
    try:
        t0 = time.monotonic()
        assert _wait(proc, StartBound(proc.pid, idle_s=0.5))
        assert time.monotonic() - t0 > 1.0
    finally:
        proc.kill()
        proc.wait()


def test_an_idle_child_fails_after_the_idle_bound():
    proc = _child("import time; time.sleep(3)")
    try:
        time.sleep(0.3)  # past the interpreter's start-up, which uses CPU
        bound = StartBound(proc.pid, idle_s=0.5)
        t0 = time.monotonic()
        assert not _wait(proc, bound)
        assert 0.4 < time.monotonic() - t0 < 2.0
        assert "without using the CPU" in bound.describe()
    finally:
        proc.kill()
        proc.wait()


def test_a_busy_child_stops_at_the_cap():
    proc = _child("while True: pass")
    try:
        bound = StartBound(proc.pid, idle_s=0.2, cap_factor=3)
        t0 = time.monotonic()
        assert not _wait(proc, bound)
        assert 0.5 < time.monotonic() - t0 < 1.5
        assert "its limit" in bound.describe()
    finally:
        proc.kill()
        proc.wait()


def test_cpu_seconds_of_a_gone_process_is_none():
    proc = _child("pass")
    proc.wait()
    assert cpu_seconds(proc.pid) is None

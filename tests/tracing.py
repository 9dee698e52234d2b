"""Helpers of the --trace tests: a tracefs mount of the test's own, the instances of one rtqual process,
and a bounded wait."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def tracefs_view(tmp_path) -> Iterator[Path]:
    """A tracefs mount of the test's own (the same instances as every mount), unmounted after."""
    view = tmp_path / "tracefs"
    view.mkdir()
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(view)], check=True)
    try:
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=False)


def ours(view: Path, pid: int) -> list[str]:
    """The tracefs instances of rtqual process pid."""
    return sorted(n for n in os.listdir(view / "instances") if n.startswith(f"rtqual-{pid}-"))


def wait_for(what, timeout_s: float = 30, proc: subprocess.Popen | None = None):
    """Poll until what() is truthy (its value), failing after timeout_s or when proc ends first."""
    end = time.monotonic() + timeout_s
    while not (value := what()):
        assert time.monotonic() < end, "timed out"
        assert proc is None or proc.poll() is None, f"rtqual ended early: {proc.returncode}"
        time.sleep(0.05)
    return value


def inject_stalls(cpu: int, count: int, stall: str = "10ms", gap: str = "300ms") -> list[dict]:
    """Stall CPU cpu count times with `rtqual-probe inject` (comm rtqual-stall, SCHED_FIFO 90); its stall
    records (start_ns, end_ns on CLOCK_MONOTONIC)."""
    import json

    from rtqual.measure.run import native

    out = subprocess.run(
        [str(native.probe_path()), "inject", "--cpu", str(cpu), "--stall", stall, "--count", str(count),
         "--gap", gap],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [r for r in map(json.loads, out.stdout.splitlines()) if r.get("type") == "stall"]

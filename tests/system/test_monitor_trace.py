"""rtqual monitor --trace for real (root, tracefs): stalls injected on the monitored CPU come out as spike
lines that blame the injecting task, /metrics counts its time, and a killed monitor's tracefs instance is
removed by the next traced rtqual, and so is its private tracefs mount (where no tracefs was mounted)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import needs_probe, needs_root, rtqual_argv, rtqual_run
from rtqual.measure.host.trace import find_tracefs
from tracing import inject_stalls, ours, wait_for


def private_mounts(pid: int) -> list[str]:
    """The private tracefs mounts rtqual process pid made (TMP/rtqual-tracefs-<pid>-*)."""
    fields = [f.split() for f in open("/proc/self/mounts").read().splitlines()]
    return [f[1] for f in fields if f[2] == "tracefs" and os.path.basename(f[1]).startswith(f"rtqual-tracefs-{pid}-")]


pytestmark = [needs_root, needs_probe, pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")]


def test_monitor_trace_blames_the_injected_task(tmp_path, tracefs_view):
    cpu = max(os.sched_getaffinity(0))
    mon = subprocess.Popen(
        rtqual_argv("monitor", "--trace", "--cpus", cpu, "--interval", "1ms", "--threshold", "2ms", "--duration", "6s",
                    "--window", "1s", "--json", "--listen", "off", "--store", "off", "--textfile", tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: ours(tracefs_view, mon.pid), proc=mon)
        time.sleep(1.0)  # the probe is measuring
        stalls = inject_stalls(cpu, 5)
        out, err = mon.communicate(timeout=60)
    finally:
        if mon.poll() is None:
            mon.kill()
    assert mon.returncode == 0, err
    assert ours(tracefs_view, mon.pid) == []
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    spikes = [x for x in lines if x.get("type") == "spike"]
    caught = 0
    for st in stalls:
        over = [s for s in spikes if s["time_ns"] - s["latency_ns"] < st["end_ns"] and s["time_ns"] > st["start_ns"]]
        caught += any(s["culprits"] and s["culprits"][0]["name"] == "rtqual-stall" for s in over)
    assert caught >= 0.8 * len(stalls), (stalls, spikes)
    prom = (tmp_path / "rtqual.prom").read_text()
    assert f'rtqual_spike_culprit_seconds_total{{cpu="{cpu}",kind="task",name="rtqual-stall",probe="timer"}}' in prom
    for s in spikes:
        durations = [c["duration_ns"] for c in s["culprits"]]
        assert durations == sorted(durations, reverse=True)


def test_a_killed_monitors_instance_is_removed_by_the_next_traced_run(tmp_path, tracefs_view):
    mon = subprocess.Popen(
        rtqual_argv("monitor", "--trace", "--duration", "60s", "--listen", "off", "--store", "off"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        left = wait_for(lambda: ours(tracefs_view, mon.pid), proc=mon)
    finally:
        mon.kill()
        mon.wait(timeout=30)
    time.sleep(0.5)  # its probe dies with it (PDEATHSIG)
    assert ours(tracefs_view, mon.pid) == left  # killed: nothing could remove it
    private = find_tracefs(open("/proc/self/mounts").read()) is None  # the monitor mounted tracefs itself
    mounts = private_mounts(mon.pid)
    assert len(mounts) == private
    out = rtqual_run("run", "timer", "--trace", "--duration", "1s", "-o", tmp_path / "b", "-q", timeout=60)
    assert out.returncode in (0, 2), out.stderr
    assert ours(tracefs_view, mon.pid) == []
    assert private_mounts(mon.pid) == [] and not any(map(os.path.exists, mounts))  # unmounted, its folder gone

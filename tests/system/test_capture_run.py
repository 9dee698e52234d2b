"""rtqual run … --capture for real (root, tracefs): injected stalls are captured in the bundle (each case's spikes
with their cause and evidence, `show` in words) and stored with the run, once however often it is stored."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import needs_probe, needs_root, rtqual_argv, rtqual_run, show_json
from tracing import inject_stalls

HAS_TRACEFS = "tracefs" in Path("/proc/filesystems").read_text()
pytestmark = [
    needs_root,
    needs_probe,
    pytest.mark.skipif(not HAS_TRACEFS, reason="no tracefs in this kernel (/proc/filesystems): nothing to capture"),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs (the injector stalls one)"),
]


def test_run_capture_keeps_each_stall_in_the_bundle_and_the_store(tmp_path):
    cpu, out, store = max(os.sched_getaffinity(0)), tmp_path / "b", str(tmp_path / "h.sqlite")
    run = subprocess.Popen(
        rtqual_argv("run", "timer", "--cpus", cpu, "--threshold", "1ms", "--capture", "5ms", "--duration", "3s",
                    "-o", out, "-q", "--store", store),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any('"progress"' in p.read_text() for p in out.glob("cases/*/stream.jsonl")):  # the probe measures
        assert run.poll() is None and time.monotonic() < deadline, "the probe never started measuring"
        time.sleep(0.1)
    stalls = inject_stalls(cpu, 3, stall="12ms", gap="250ms")
    _, err = run.communicate(timeout=60)
    assert run.returncode in (0, 2), err
    case = show_json(out)["cases"][0]
    assert case["trace"]["mode"] == "capture" and case["trace"]["captured"] == len(case["spikes"])
    for st in stalls:
        [s] = [
            s for s in case["spikes"] if s["time_ns"] - s["latency_ns"] < st["end_ns"] and s["time_ns"] > st["start_ns"]
        ]
        assert (s["cause"]["comm"], s["cause"]["cpu"], s["cause"]["priority"]) == ("rtqual-stall", cpu, 90)
        assert (out / "cases" / case["id"] / s["evidence"]["trace_file"]).is_file()
    assert "cause: rtqual-stall pid" in rtqual_run("show", out).stdout
    assert rtqual_run("history", "add", out, "--store", store).returncode == 0  # stored again: replaced, not doubled
    listed = json.loads(rtqual_run("history", "--spikes", "--json", "--store", store).stdout)["spikes"]
    assert len(listed) == len(case["spikes"]) and sum(x["cause"]["comm"] == "rtqual-stall" for x in listed) >= 3
    assert all(x["evidence"]["bundle"] == str(out.resolve()) for x in listed)

"""Short real timer runs (root): invariants only, never absolute latencies."""

import json
import signal
import subprocess
import sys
import time

from conftest import needs_probe, needs_root, run_case

pytestmark = [needs_probe, needs_root]


def test_two_second_run_invariants(tmp_path, rtqual_cmd):
    case = run_case(
        tmp_path / "b", "timer", "--cpus", "0", "--interval", "1ms", "--duration", "2s", "--warmup", "50", "--raw"
    )
    s = case["stats"]
    # every period of the 2 s is either a sample or an overrun
    assert abs(s["count"] + s["overruns"] - 2000) <= 2
    assert s["count"] > 0
    assert s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["p999_ns"] <= s["p9999_ns"] <= s["max_ns"]
    assert s["min_ns"] <= s["mean_ns"] <= s["max_ns"]
    hist = json.loads((tmp_path / "b" / "cases" / "001-timer" / "hist.json").read_text())
    assert sum(c for _, c in hist["per_cpu"]["0"]["counts"]) == s["count"]
    result = json.loads((tmp_path / "b" / "cases" / "001-timer" / "result.json").read_text())
    assert result["rt"]["policy"] == "fifo" and not result["degraded"]
    assert result["overhead"]["clock_read_ns"] > 0
    csv = rtqual_cmd("export", "raw", tmp_path / "b").stdout.splitlines()
    assert len(csv) - 1 == s["count"]
    lat = sorted(int(r.split(",")[3]) for r in csv[1:])
    assert lat[0] == s["min_ns"] and lat[-1] == s["max_ns"]  # raw and histogram saw the same samples


def test_all_cpus_loops(tmp_path):
    case = run_case(tmp_path / "b", "timer", "--interval", "2ms", "--loops", "300", "--warmup", "0")
    import os

    assert sorted(map(int, case["per_cpu"])) == sorted(os.sched_getaffinity(0))
    for s in case["per_cpu"].values():
        assert s["count"] + s["overruns"] == 300
    assert case["stats"]["count"] == sum(s["count"] for s in case["per_cpu"].values())


def test_sigint_during_real_run(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rtqual",
            "run",
            "timer",
            "--cpus",
            "0",
            "--duration",
            "60s",
            "-o",
            str(tmp_path / "b"),
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stream = tmp_path / "b" / "cases" / "001-timer" / "stream.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and '"progress"' not in (stream.read_text() if stream.exists() else ""):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, err
    result = json.loads((tmp_path / "b" / "cases" / "001-timer" / "result.json").read_text())
    assert result["verdict"] == "inconclusive" and result["stats"]["count"] > 0
    assert result["end"]["reason"] == "interrupted"


def test_requirement_fail_exit_2(tmp_path, rtqual_cmd):
    out = rtqual_cmd(
        "run", "timer", "--cpus", "0", "--duration", "200ms", "--max-latency", "1ns", "-o", tmp_path / "b", "-q"
    )
    assert out.returncode == 2 and "FAIL" in out.stdout

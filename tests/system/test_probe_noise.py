"""The noise probe (root) on one CPU of N >= 2, short runs: invariants of gaps, noise per second and the
bounds, never absolute figures."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_probe, needs_root, probe_records, run_case

pytestmark = [
    needs_probe,
    needs_root,
    pytest.mark.skipif(os.cpu_count() < 2, reason="needs >= 2 CPUs (never an RT loop on every one)"),
]
CPU = max(os.sched_getaffinity(0))


def test_gaps_and_noise_per_second():
    out, recs = probe_records("noise", "--cpus", CPU, "--duration", "1s", "--gap", "2us", timeout=30)
    assert out.returncode == 0, out.stderr
    header = next(r for r in recs if r["type"] == "header")
    assert header["params"]["gap_ns"] == 2000 and header["rt"]["policy"] == "fifo"
    (c,) = next(r for r in recs if r["type"] == "summary")["cpus"]
    summary = next(r for r in recs if r["type"] == "summary")
    (h,) = [r for r in recs if r["type"] == "hist"]
    # every sample is a gap above --gap; the histogram holds exactly the gaps
    assert c["gaps"] == c["count"] == sum(n for _, n in h["counts"])
    assert c["count"] == 0 or c["min_ns"] > 2000
    assert c["largest_gap_ns"] == (c["max_ns"] if c["count"] else 0)
    assert c["noise_ns"] == h["sum_ns"] and c["noise_ns"] <= c["measured_ns"]
    # measured: the run less the short sleeps between windows; noise per second is the ratio
    p = header["params"]  # the loop spins window_ns, then sleeps window_sleep_ns (a 90 % duty cycle)
    duty = p["window_ns"] / (p["window_ns"] + p["window_sleep_ns"])
    assert 0.9 * duty * 1e9 <= c["measured_ns"] <= 1.02 * duty * 1e9
    assert c["noise_ns_per_s"] == round(c["noise_ns"] * 1e9 / c["measured_ns"])
    assert c["stopped_by"] == "clock"
    assert c["steal_ns"] is None or c["steal_ns"] >= 0
    n = summary["noise"]
    assert n["largest_gap_ns"] == c["largest_gap_ns"] and n["gaps"] == c["gaps"]
    if c["smi"] is None:
        assert "msr not readable" in n["smi_note"]
    assert "osnoise tracer" in n["tracer_note"]


def test_refuses_rt_on_every_cpu():
    out, recs = probe_records("noise", "--cpus", f"0-{os.sysconf('SC_NPROCESSORS_ONLN') - 1}", "--duration", "1s")
    assert out.returncode == 1 and not recs
    assert out.stderr.startswith("rtqual-probe: error: refusing a SCHED_FIFO busy loop on every online CPU")
    assert out.stderr.count("\n") == 1


def test_bundle_and_sigterm(tmp_path):
    case = run_case(tmp_path / "b", "noise", "--cpus", CPU, "--duration", "3s", timeout=60)
    s = case["stats"]
    assert s["count"] >= 0 and (s["count"] == 0 or s["min_ns"] > 1000)
    n = case["noise"]  # show --json: the summary's noise object
    if not n["osnoise_tracer"]:  # this VM's kernel: nothing beside rtqual's figures, the note says so
        assert "osnoise" not in n and n["tracer_note"].startswith("osnoise tracer absent")
    else:
        assert n["tracer_note"].startswith("osnoise tracer present") and "cpus" in n["osnoise"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", "noise", "--cpus", str(CPU), "--duration", "60s"]
        + ["-o", str(tmp_path / "c"), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stream = tmp_path / "c" / "cases" / "001-noise" / "stream.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and '"progress"' not in (stream.read_text() if stream.exists() else ""):
        time.sleep(0.05)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 1.5  # the probe ends within a second; rtqual writes the bundle
    assert proc.returncode == 4, err
    result = json.loads((tmp_path / "c" / "cases" / "001-noise" / "result.json").read_text())
    assert result["end"]["reason"] == "interrupted" and result["verdict"] == "inconclusive"

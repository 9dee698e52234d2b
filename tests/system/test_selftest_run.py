"""`rtqual selftest` for real (root, 2 CPUs): a short subset passes here and is kept in a bundle that show
and verify read; it fails (exit 2) when its injector lies; without CAP_SYS_NICE it is a skip (exit 3)
naming what to grant. The injector alone: its records and its refusal. Invariants only."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import needs_probe, needs_root, probe_records

pytestmark = [
    needs_probe,
    needs_root,
    pytest.mark.skipif(os.cpu_count() < 2, reason="needs >= 2 CPUs (never stall the only one)"),
]
# The tests' subset: two probes, one size, three stalls (about 15 s).
SHORT = ["--probes", "timer,event", "--sizes", "10ms", "--count", "3", "-q"]
UNPRIVILEGED = ["prlimit", "--rtprio=0", "setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"]
needs_setpriv = pytest.mark.skipif(
    not (shutil.which("setpriv") and shutil.which("prlimit")), reason="setpriv/prlimit (util-linux) missing"
)


def test_the_short_selftest_passes_and_its_bundle_is_read_by_show_and_verify(rtqual_cmd, tmp_path):
    out = rtqual_cmd("selftest", *SHORT, "-o", tmp_path / "b", timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "verdict: pass" in out.stdout and "timer" in out.stdout and "event" in out.stdout
    result = json.loads((tmp_path / "b" / "selftest.json").read_text())
    assert result["verdict"] == "pass" and result["clock"]["backward_steps"] == 0
    for case in result["cases"]:
        assert case["caught"] == case["count"] == 3 and case["stalls"] == 3
        assert not case["checks"]["hist"] and not case["checks"]["percentiles"]
    shown = rtqual_cmd("show", tmp_path / "b", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["selftest"]["verdict"] == "pass"
    assert "verdict: pass" in rtqual_cmd("show", tmp_path / "b").stdout
    assert rtqual_cmd("verify", tmp_path / "b").returncode == 0


def test_the_selftest_fails_when_its_injector_lies(rtqual_cmd, tmp_path):
    out = rtqual_cmd("selftest", *SHORT, "--probes", "timer", "--claim", "30ms", "--json", "-o", tmp_path / "b")
    assert out.returncode == 2, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["verdict"] == "fail"
    case = result["cases"][0]
    assert case["claimed_ns"] == 30_000_000 and case["caught"] == 0 and not case["ok"]


@needs_setpriv
def test_without_cap_sys_nice_the_selftest_is_a_skip_saying_what_to_grant(tmp_path):
    out = subprocess.run(
        [*UNPRIVILEGED, sys.executable, "-m", "rtqual", "selftest", *SHORT, "-o", tmp_path / "b"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and "CAP_SYS_NICE" in out.stderr, out.stderr


@needs_setpriv
def test_the_injector_without_cap_sys_nice_exits_3_naming_the_grant():
    from rtqual.measure.run import native

    out = subprocess.run(
        [*UNPRIVILEGED, str(native.probe_path()), "inject", "--stall", "1ms", "--count", "1"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 3 and "CAP_SYS_NICE" in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_the_injector_records_its_stalls_on_the_probes_clock():
    out, recs = probe_records("inject", "--stall", "5ms", "--count", "3", "--gap", "20ms", "--claim", "7ms")
    assert out.returncode == 0, out.stderr
    header = recs[0]
    assert header["clock"] == "CLOCK_MONOTONIC" and header["params"]["comm"] == "rtqual-stall"
    assert header["rt"]["policy"] == "fifo" and header["rt"]["priority"] == 90
    stalls = [r for r in recs if r["type"] == "stall"]
    assert [s["index"] for s in stalls] == [0, 1, 2]
    for s in stalls:
        assert s["claimed_ns"] == 7_000_000 and s["end_ns"] - s["start_ns"] >= 5_000_000
    assert recs[-1] == {"type": "end", "status": 0, "reason": "completed", "message": ""}

"""`rtqual advise --measure` for real (root, the timer on one CPU): every setting it may change reads the same
after a normal end, after SIGINT in the middle of a fix's round, and after SIGKILL + `rtqual restore`.
Run under the latency lock: flock /work/latency.lock pytest tests/system/test_advise_live.py"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import needs_probe, needs_root, rtqual_argv, rtqual_run
from rtqual.answers.advice import advise
from rtqual.measure.host import facts as hf
from rtqual.measure.host import tuning

pytestmark = [
    needs_probe,
    needs_root,
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs >= 2 CPUs (the timer runs on CPU 1 only)"),
]
ARGS = ("advise", "--measure", "--cpus", "1", "--duration", "1s", "--rounds", "2", "-q")


def settings() -> dict[str, str | None]:
    """Every file a run-time fix of this host would write, with its value now."""
    found = advise.advise(hf.collect(), tuning.tuning(), [1])["findings"]
    knobs = sorted({k["knob"] for f in advise.measurable(found) for k in f["knobs"]})
    return {k: (Path(k).read_text().strip() if Path(k).exists() else None) for k in knobs}


@pytest.fixture
def before():
    values = settings()
    if not values:
        pytest.skip("no run-time fix applies on this host")
    return values


def wait_for_change(before: dict, proc: subprocess.Popen, limit_s: float = 120) -> bool:
    """Wait until some fix is applied (a value differs from before) while proc runs."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        if {k: (Path(k).read_text().strip() if Path(k).exists() else None) for k in before} != before:
            return True
        time.sleep(0.02)
    return False


def test_normal_end_changes_nothing(tmp_path, before):
    out = rtqual_run(*ARGS, "-o", tmp_path / "b", "--json", timeout=600)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {m["id"] for m in data["measured"]} == {f["id"] for f in advise.measurable(data["findings"])}
    for m in data["measured"]:
        assert m["rounds"] == 2 and m["effect"] in ("better", "worse", "mixed", "no measurable effect", "not applied")
        assert m["before"]["p50_ns"] <= m["before"]["p99_ns"] <= m["before"]["max_ns"]
    assert settings() == before


@pytest.mark.parametrize("signame", ["INT", "KILL"])
def test_interrupted_run_changes_nothing(tmp_path, before, signame):
    bundle = tmp_path / "b"
    proc = subprocess.Popen(rtqual_argv(*ARGS, "-o", bundle), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for_change(before, proc), "a fix was applied while its round ran"
        proc.send_signal(getattr(signal, f"SIG{signame}"))
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if signame == "KILL":
        time.sleep(1.5)  # the probe notices its parent is gone and ends
        restored = rtqual_run("restore", bundle)
        assert restored.returncode == 0, restored.stderr
    else:
        assert proc.returncode == 4
    assert settings() == before

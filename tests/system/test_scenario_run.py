"""Real scenario runs (root): loads start and stop, dead loads are caught, interrupts keep finished cases."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import needs_probe, needs_root

pytestmark = [needs_probe, needs_root]

SCENARIO = """
[run]
name = "t"
[defaults.timer]
cpus = "0"
interval = "1ms"
duration = "1s"
warmup = 10
[loads.dies]
type = "command"
argv = ["sh", "-c", "sleep 0.2; exit 3"]
[[case]]
label = "hog"
loads = [{type = "cpu-hog", cpus = "1"}]
conditions = { settle = "200ms" }
[[case]]
label = "dying load"
loads = ["dies"]
conditions = { settle = "500ms" }
"""


def leftovers(bundle):
    """Load processes recorded in the bundle that still exist (there must be none)."""
    alive = []
    for result in bundle.glob("cases/*/result.json"):
        for load in json.loads(result.read_text())["loads"]:
            for inst in load["instances"]:
                try:
                    os.kill(inst["pid"], 0)
                    alive.append(inst)
                except ProcessLookupError:
                    pass
    return alive


def test_scenario_with_loads_and_dead_load(tmp_path, rtqual_cmd):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    out = rtqual_cmd("run", f, "-o", tmp_path / "b", "-q")
    assert out.returncode == 4, out.stderr + out.stdout
    cases = {c["label"]: c for c in json.loads(rtqual_cmd("show", tmp_path / "b", "--json").stdout)["cases"]}
    assert cases["hog"]["verdict"] == "pass" and cases["hog"]["stats"]["count"] > 0
    assert cases["dying load"]["verdict"] == "inconclusive"
    assert "exited with code 3" in cases["dying load"]["reason"]
    result = json.loads(next((tmp_path / "b" / "cases").glob("001-*/result.json")).read_text())
    assert result["loads"][0]["alive_until_stop"] and result["loads"][0]["instances"][0]["stopped_by"] == "SIGINT"
    assert (tmp_path / "b" / "scenario.toml").read_text() == SCENARIO
    assert not leftovers(tmp_path / "b")


def test_typo_is_one_line_and_runs_nothing(tmp_path, rtqual_cmd):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.replace("interval =", "intervall ="))
    out = rtqual_cmd("run", f, "-o", tmp_path / "b")
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert "intervall" in out.stderr and "interval" in out.stderr
    assert not (tmp_path / "b").exists()


def test_interrupt_keeps_finished_cases_and_stops_loads(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.replace('duration = "1s"', 'duration = "20s"').replace(
        'label = "hog"', 'label = "first"\nparams = {duration = "1s"}\n[[case]]\nlabel = "hog"'))
    proc = subprocess.Popen([sys.executable, "-m", "rtqual", "run", str(f), "-o", str(tmp_path / "b"), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list((tmp_path / "b" / "cases").glob("002-*/stream.jsonl")):
        time.sleep(0.1)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    verdicts = [c["verdict"] for c in manifest["cases"]]
    assert verdicts == ["pass", "inconclusive"]  # the third case never started
    assert not leftovers(tmp_path / "b")
    assert os.path.exists(tmp_path / "b" / "host" / "facts-after.json")

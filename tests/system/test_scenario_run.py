"""Real scenario runs (root): loads start and stop, dead loads are caught, interrupts keep finished cases."""

import json
import os
import signal
import subprocess
import sys
import time

from conftest import needs_probe, needs_root, show_json

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
    cases = {c["label"]: c for c in show_json(tmp_path / "b")["cases"]}
    assert cases["hog"]["verdict"] == "completed" and cases["hog"]["stats"]["count"] > 0
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
    f.write_text(
        SCENARIO.replace('duration = "1s"', 'duration = "20s"').replace(
            'label = "hog"', 'label = "first"\nparams = {duration = "1s"}\n[[case]]\nlabel = "hog"'
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", str(f), "-o", str(tmp_path / "b"), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    assert verdicts == ["completed", "inconclusive"]  # the third case never started
    assert not leftovers(tmp_path / "b")
    assert os.path.exists(tmp_path / "b" / "host" / "facts-after.json")


def test_sigkill_then_restore(tmp_path, rtqual_cmd):
    """rtqual killed with SIGKILL: its probe and loads die with it, `rtqual restore` removes the cpusets."""
    f = tmp_path / "s.toml"
    f.write_text(
        '[defaults.timer]\ncpus = "1"\nduration = "60s"\n[[case]]\nlabel = "k"\n'
        'loads = [{type = "cpu-hog", cpus = "0"}]\n'
        'conditions = { settle = "100ms", cpuset = { probe = "1", loads = "0" } }\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", str(f), "-o", str(tmp_path / "b"), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stream = tmp_path / "b" / "cases" / "001-k" / "stream.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and '"progress"' not in (stream.read_text() if stream.exists() else ""):
        time.sleep(0.1)
    changes = json.loads((tmp_path / "b" / "host" / "changes.json").read_text())["changes"]
    cpusets = [c["knob"] for c in changes if c["kind"] == "cpuset"]
    assert len(cpusets) == 2 and all(os.path.isdir(p) for p in cpusets)
    tasks = [int(t) for p in cpusets for t in open(os.path.join(p, "tasks")).read().split()]
    assert tasks
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(t) for t in tasks):
        time.sleep(0.1)
    assert not any(_alive(t) for t in tasks), "probe or load outlived a SIGKILLed rtqual"
    out = rtqual_cmd("restore", tmp_path / "b")
    assert out.returncode == 0, out.stderr + out.stdout
    assert not any(os.path.exists(p) for p in cpusets)
    assert "nothing to restore" in rtqual_cmd("restore", tmp_path / "b").stdout


def _alive(pid: int) -> bool:
    """A live, non-zombie process (PID 1 here may not reap orphans)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_run_timer_under_hackbench_from_the_command_line(tmp_path, rtqual_cmd):
    """`rtqual run timer --load hackbench`: the load runs around the measurement, is stopped after it,
    and the bundle's scenario.toml plans back to the same case."""
    b = tmp_path / "b"
    out = rtqual_cmd("run", "timer", "--cpus", "0", "--duration", "1s", "--load", "hackbench,groups=1", "--settle",
                     "300ms", "-o", b, "-q")  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    result = json.loads(next((b / "cases").glob("001-*/result.json")).read_text())
    assert result["verdict"] == "completed" and result["stats"]["count"] > 0 and result["run_as"] == "timer"
    load = result["loads"][0]
    assert load["type"] == "hackbench" and load["alive_until_stop"] and load["instances"][0]["stopped_by"] == "SIGINT"
    assert result["label"].endswith("under hackbench") and not leftovers(b)
    plan = rtqual_cmd("plan", b / "scenario.toml", "--json")
    (case,) = json.loads(plan.stdout)["cases"]
    params = json.loads(next((b / "cases").glob("001-*/params.json")).read_text())
    assert {k: case[k] for k in ("probe", "args", "loads")} == {
        "probe": "timer",
        "args": params["args"],
        "loads": [{"type": "hackbench", "groups": 1}],
    }

"""`rtqual advise --measure` through the real run with the fake probe: each fix's writes go through the change
journal into a hand-made /proc and /sys tree, the fix's effect is scripted (one script per arm and round), the
verdict is checked, and every value is back after a normal end and after a SIGKILL + restore."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import needs_probe
from rtqual.advise import measure as measuring
from rtqual.answers.advice import advise
from rtqual.measure.conditions import journal as journal_mod
from rtqual.measure.conditions import restore
from rtqual.measure.host import facts as hf
from rtqual.measure.host import tuning
from rtqual.probes.catalog import check_params, probe_case
from rtqual.publish import advise as shown
from rtqual.publish import htmlreport
from rtqual.results import bundle as bundle_mod

pytestmark = needs_probe

KNOBS = {
    "proc/sys/kernel/sched_rt_runtime_us": "950000",
    "proc/sys/kernel/timer_migration": "1",
    "sys/devices/virtual/workqueue/cpumask": "f",
}


def tree(root: Path) -> Path:
    """A 4-CPU host whose run-time fixes are rt-throttling, timer-migration and workqueue."""
    files = {
        "proc/cmdline": "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1",
        "proc/cpuinfo": "model name\t: Test\nflags\t\t: fpu\n",
        "proc/sys/kernel/sched_rt_period_us": "1000000",
        "sys/devices/system/cpu/online": "0-3",
        "sys/devices/system/cpu/isolated": "2-3",
        **KNOBS,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def script(path: Path, typical_ns: int, sleep_ms: int = 0) -> Path:
    """A fake probe's run: 2000 samples around typical_ns and one at 4x (the max)."""
    path.write_text(
        f"repeat 1000\nsample 0 {typical_ns}\nsample 0 {typical_ns * 2}\nend\nsample 0 {typical_ns * 4}\nprogress\n"
        + (f"sleep {sleep_ms}\n" if sleep_ms else "")
    )
    return path


def planned(tmp_path: Path, root: Path, sleep_ms: int = 0) -> tuple[list[dict], list[dict]]:
    """The findings of the tree and the rounds, each arm's script chosen by its effect: rt-throttling halves the
    latency, timer-migration changes nothing (the baseline's own round-to-round variation), workqueue doubles it."""
    findings = advise.advise(hf.collect(root=root), tuning.tuning(root))["findings"]
    base = probe_case("fake", check_params("fake", {"script": str(tmp_path / "x")}, ""), [0], "001-fake")
    cases = measuring.plan(base, findings, rounds=3, root=str(root))
    scale = {"baseline": 1.0, "timer-migration": 1.0, "rt-throttling": 0.5, "workqueue": 2.0}
    for case in cases:
        arm, r = case["advise"]["arm"], case["advise"]["round"]
        typical = int(100_000 * scale[arm] * (1.0, 1.1, 1.05)[r - 1])  # every arm varies by round alike
        path = script(tmp_path / f"{case['id']}.txt", typical, sleep_ms)
        case["args"][case["args"].index("--script") + 1] = str(path)
    return findings, cases


def test_measured_effects_are_scripted_and_nothing_stays_changed(tmp_path):
    root = tree(tmp_path / "root")
    findings, cases = planned(tmp_path, root)
    assert {f["id"] for f in advise.measurable(findings)} == {"rt-throttling", "timer-migration", "workqueue"}
    assert [c["advise"]["arm"] for c in cases[:4]] == ["baseline", "rt-throttling", "timer-migration", "workqueue"]
    assert cases[4]["advise"]["arm"] == "workqueue" and cases[7]["advise"]["arm"] == "baseline"  # alternating
    model, measured = measuring.run_plan(cases, findings, ["rtqual", "advise", "--measure"], str(tmp_path / "b"), True)
    effects = {m["id"]: m for m in measured}
    assert effects["rt-throttling"]["effect"] == "better" and effects["rt-throttling"]["rounds"] == 3
    assert effects["timer-migration"]["effect"] == "no measurable effect"
    assert effects["workqueue"]["effect"] == "worse"
    assert effects["rt-throttling"]["after"]["p50_ns"] < effects["rt-throttling"]["before"]["p50_ns"]
    for key in ("p50_ns", "p99_ns", "p999_ns", "max_ns", "max_spread_ns"):
        assert key in effects["rt-throttling"]["before"]
    # nothing stays changed; every write was journaled with its value before, and put back
    assert {rel: (root / rel).read_text() for rel in KNOBS} == KNOBS
    journal = json.loads((model.path / journal_mod.CHANGES_FILE).read_text())["changes"]
    assert len(journal) == 3 * 3 and all(r["restored"] and r["kind"] == "tunable" for r in journal)
    assert {r["after"] for r in journal if r["condition"] == "advise:workqueue"} == {"3"}
    # the bundle holds every round; the report ends with What to change, with the measured effects
    assert len(model.cases) == 12 and bundle_mod.load(model.path).verify()[0] == []
    html = (model.path / "report.html").read_text()
    section = html[html.index('id="what-to-change"') :]
    assert "rt-throttling" in section and "measured: better" in section and "no measurable effect" in section
    findings2, measured2 = htmlreport.advice_of(bundle_mod.load(model.path))
    assert measured2 == measured and findings2 == findings
    assert shown.emit(findings, measured, "sysctl")[0].splitlines()[1:] == ["kernel.sched_rt_runtime_us = -1"]


def test_a_killed_measurement_is_put_back_by_restore(tmp_path):
    """SIGKILL while a fix is applied (the fake probe sleeps in its case): the journal has the value before,
    restore_from_bundle writes it back."""
    root = tree(tmp_path / "root")
    findings, cases = planned(tmp_path, root, sleep_ms=5_000)
    cases = [c for c in cases if c["advise"]["arm"] == "rt-throttling"][:1]
    (tmp_path / "cases.json").write_text(json.dumps({"cases": cases, "findings": findings}))
    code = (
        "import json, sys; from rtqual.advise import measure as m; d = json.load(open(sys.argv[1])); "
        "m.run_plan(d['cases'], d['findings'], ['rtqual'], sys.argv[2], True)"
    )
    bundle = tmp_path / "b"
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cases.json"), str(bundle)])
    knob = root / "proc/sys/kernel/sched_rt_runtime_us"
    deadline = time.monotonic() + 60
    while knob.read_text() != "-1" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert knob.read_text() == "-1", "the fix was applied while its case ran"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert knob.read_text() == "-1", "killed: nothing ran its finally"
    actions = restore.restore_from_bundle(bundle, root=root)
    assert [a["restored"] for a in actions] == [True] and knob.read_text() == "950000"
    assert restore.restore_from_bundle(bundle, root=root) == []  # a second restore does nothing

"""Inside each lab guest (tests/kernels/run): rtqual sees the kernel it runs on, and its probes, --trace, a
scenario and timerlat run there. Latencies under TCG are the emulator's: only invariants are asserted."""

import json

from lab import KERNEL, RT, case_results, lab_out, mount_debugfs

from conftest import rtqual_run

PREEMPT = KERNEL.partition(":")[2]  # the std kernel's preempt= mode, "" for its default


def facts() -> dict:
    mount_debugfs()
    p = rtqual_run("host", "--json", timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_host_facts_see_the_preemption_model_and_the_emulator():
    f = facts()
    pre = f["preempt"]
    if RT:
        assert pre["model"] == "PREEMPT_RT"
    else:
        assert pre["model"] == "PREEMPT_DYNAMIC"
        if PREEMPT:
            assert pre["cmdline_preempt"] == PREEMPT
            assert pre["dynamic_mode"] == PREEMPT
    v = f["virtualization"]
    assert v["virtualized"] is True
    assert "qemu" in f"{v['dmi_sys_vendor']} {v['dmi_product_name']}".lower()


def test_timer_runs():
    out = lab_out()
    p = rtqual_run("run", "timer", "--duration", "2s", "-q", "-o", out / "timer", timeout=180)
    assert p.returncode == 0, p.stderr
    (case,) = case_results(out / "timer")
    assert case["stats"]["count"] > 0 and case["verdict"] in ("pass", "completed")


def test_trace_runs_and_names_its_source():
    out = lab_out()
    p = rtqual_run(
        "run", "timer", "--cpus", "1", "--duration", "2s", "--threshold", "1ms", "--trace", "-q",
        "-o", out / "trace", timeout=180,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    (case,) = case_results(out / "trace")
    assert case["trace"]["timerlat"] == (
        "available, used by `rtqual run timerlat` (docs/trace.md)" if RT else "not in this kernel"
    )
    assert all(s["source"] == "sched/irq events" for s in case["spikes"])


def test_small_scenario_runs(tmp_path):
    toml = tmp_path / "lab.toml"
    toml.write_text(
        '[run]\nname = "lab"\n[defaults.timer]\nduration = "1s"\n'
        '[[case]]\nlabel = "idle"\nprobe = "timer"\n'
        '[[case]]\nlabel = "hog"\nprobe = "timer"\nloads = ["cpu-hog"]\n'
    )
    out = lab_out()
    p = rtqual_run("run", toml, "-q", "-o", out / "scenario", timeout=240)
    assert p.returncode == 0, p.stderr + p.stdout
    assert [c["label"] for c in case_results(out / "scenario")] == ["idle", "hog"]

"""Inside each lab guest (tests/kernels/run): rtqual sees the kernel it runs on; the timer probe, --trace, a load
and a scenario run there; on the RT kernel `rtqual run timerlat` measures its stages and is cross-checked against
the timer probe run right after it, on the standard kernel it exits 3 naming the missing option. Latencies under
TCG are the emulator's: only invariants are asserted."""

import json

import pytest
from lab import KERNEL, RT, lab_out, mount_debugfs, run_or_dump, scenario

from conftest import rtqual_argv, rtqual_run

PREEMPT = KERNEL.partition(":")[2]  # the std kernel's preempt= mode, "" for its default


def test_host_facts_see_the_preemption_model_and_the_emulator():
    mount_debugfs()
    p = rtqual_run("host", "--json", timeout=120)
    assert p.returncode == 0, p.stderr
    f = json.loads(p.stdout)
    (lab_out() / "host.json").write_text(p.stdout)
    pre = f["preempt"]
    if RT:
        assert pre["model"] == "PREEMPT_RT"
    else:
        assert pre["model"] == "PREEMPT_DYNAMIC"
        if PREEMPT:
            assert pre["cmdline_preempt"] == PREEMPT and pre["dynamic_mode"] == PREEMPT
    v = f["virtualization"]
    assert v["virtualized"] is True
    assert "qemu" in f"{v['dmi_sys_vendor']} {v['dmi_product_name']}".lower()


def test_scenario_runs_timer_traced_and_loaded():
    code, err, cases = scenario()
    assert code == 0, err
    labels = ["timer traced"] if RT else ["timer traced", "timer cpu-hog"]  # the load in the std guest only
    assert set(labels) <= set(cases)
    for label in labels:
        assert cases[label]["stats"]["count"] > 0 and cases[label]["verdict"] in ("pass", "completed")
    traced = cases["timer traced"]
    want = "available, used by `rtqual run timerlat` (docs/trace.md)" if RT else "not in this kernel"
    assert traced["trace"]["timerlat"] == want
    assert all(s["source"] == "sched/irq events" for s in traced["spikes"])


@pytest.mark.skipif(RT, reason="the standard kernel's guest runs SCHED_DEADLINE (the RT guest's time goes to timerlat)")
def test_scenario_runs_the_timer_under_sched_deadline():
    code, err, cases = scenario()
    assert code == 0, err
    dl = cases["timer deadline"]
    assert dl["params"]["policy"] == "deadline" and dl["stats"]["count"] > 0
    assert (dl["params"]["deadline"]["runtime_ns"], dl["params"]["deadline"]["period_ns"]) == (200_000, 1_000_000)
    assert dl["verdict"] in ("pass", "completed"), dl.get("reason")


@pytest.mark.skipif(RT, reason="the RT kernel has the timerlat tracer")
def test_timerlat_says_which_kernel_option_is_missing():
    p = rtqual_run("run", "timerlat", "--duration", "1s", "-q", "-o", lab_out() / "timerlat", timeout=120)
    assert p.returncode == 3, p.stderr
    assert "CONFIG_TIMERLAT_TRACER" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not RT, reason="only the RT kernel has the timerlat tracer")
def test_timerlat_measures_stages_and_matches_the_timer_probe():
    code, err, cases = scenario()
    assert code == 0, err
    tl, tm = cases["timerlat"], cases["timer after timerlat"]
    stages = tl["probe_summary"]["stages"]
    assert set(stages) >= {"irq", "thread"} and tl["stats"]["count"] > 0
    assert stages["irq"]["count"] == stages["thread"]["count"] == tl["stats"]["count"]
    assert stages["irq"]["min_ns"] + stages["thread"]["min_ns"] <= tl["stats"]["min_ns"]  # the split adds up
    assert tl["probe_summary"]["timerlat"]["lost_events"] == 0
    periods = len(tl["params"]["cpus"]) * tl["params"]["duration_ns"] // tl["params"]["interval_ns"]
    assert tl["stats"]["count"] + tl["stats"]["overruns"] >= periods - len(tl["params"]["cpus"])  # none unaccounted
    ratio = {k: round(tl["stats"][k] / tm["stats"][k], 3) for k in ("p50_ns", "p99_ns", "max_ns") if tm["stats"][k]}
    summary = {"timerlat": tl["stats"], "timer": tm["stats"], "ratio": ratio, "stages": stages}
    (lab_out() / "timerlat-vs-timer.json").write_text(json.dumps(summary))
    print("timerlat/timer", ratio)


@pytest.mark.skipif(not RT, reason="only the RT kernel has the timerlat tracer")
def test_timerlat_trace_uses_timerlat_split():
    code, err, cases = scenario()
    tl = cases["timerlat"]
    assert tl["trace"]["timerlat"].startswith("used") or not tl["spikes"]
    for s in tl["spikes"]:
        assert s["source"] == "timerlat + sched/irq events"
        assert set(s["stages"]) >= {"irq_ns", "thread_ns"}


def test_noise_records_gaps_and_the_kernels_osnoise_figures_beside():
    code, err, cases = scenario()
    assert code == 0, err
    case = cases["noise"]
    ps = case["probe_summary"]
    (c,) = ps["cpus"]
    assert c["gaps"] == c["count"] > 0 and c["noise_ns"] <= c["measured_ns"]  # TCG: the tick alone is a gap
    noise = ps["noise"]
    if not RT:  # the standard kernel has neither tracer: nothing beside, the note says so
        assert "osnoise" not in noise and noise["tracer_note"] == "osnoise tracer absent; hwlat tracer absent"
        return
    osn = noise["osnoise"]
    assert osn["note"] is None and noise["tracer_note"].startswith("osnoise tracer present: its figures beside")
    (row,) = osn["cpus"]
    assert row["cpu"] == c["cpu"] and row["periods"] > 0 and 0 < row["runtime_ns"] <= osn["duration_ns"]
    assert 0 <= row["max_single_noise_ns"] <= row["noise_ns"] <= row["runtime_ns"]
    assert all(n >= 0 for n in row["counts"].values()) and row["rtqual_noise_ns_per_s"] == c["noise_ns_per_s"]
    summary = {"rtqual": c, "osnoise": osn, "ratio": osn["ratio"]}
    (lab_out() / "noise-vs-osnoise.json").write_text(json.dumps(summary))
    print("noise rtqual/osnoise", c["noise_ns_per_s"], row["noise_ns_per_s"], osn["ratio"])


def test_noise_hw_runs_the_hwnoise_mode_or_says_why_not_in_one_line():
    """`rtqual run noise --hw` (issue 39): the osnoise tracer with interrupts off (OSNOISE_IRQ_DISABLE) after the
    loop, so no IRQ, softirq or thread interference is counted; refused in one line where the kernel cannot."""
    out = lab_out() / "hwnoise"
    code, err = run_or_dump(
        rtqual_argv("run", "noise", "--hw", "--duration", "500ms", "--cpus", "1", "-q", "-o", out), 120
    )
    if not RT:  # the standard kernel has no osnoise tracer
        assert code == 1 and "no osnoise tracer" in err and len(err.strip().splitlines()) == 1
        return
    if code == 1:  # a kernel whose osnoise lacks the option (Debian 12's 6.1 RT kernel has it)
        assert "OSNOISE_IRQ_DISABLE" in err and len(err.strip().splitlines()) == 1, err
        return
    assert code == 0, err
    (result,) = [json.loads(f.read_text()) for f in out.glob("cases/*/result.json")]
    hw = result["probe_summary"]["noise"]["hwnoise"]
    assert hw["mode"] == "hwnoise" and hw["note"] is None and hw["periods"] > 0, hw
    assert hw["counts"]["irq"] == hw["counts"]["sirq"] == hw["counts"]["thread"] == 0  # interrupts were off
    assert result["smi"]["per_cpu"] is not None or result["smi"]["note"].startswith("not readable")
    (lab_out() / "hwnoise.json").write_text(json.dumps(hw))

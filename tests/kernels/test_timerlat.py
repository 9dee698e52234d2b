"""`rtqual run timerlat` inside each lab guest: the RT kernel has the tracer (stages, --trace with timerlat's
split, the cross-check against the timer probe run right after it), the standard one has not (exit 3 naming
the kernel option)."""

import json

import pytest
from lab import RT, case_results, lab_out

from conftest import rtqual_run


@pytest.mark.skipif(RT, reason="the RT kernel has the timerlat tracer")
def test_timerlat_says_which_kernel_option_is_missing():
    out = lab_out()
    p = rtqual_run("run", "timerlat", "--duration", "1s", "-q", "-o", out / "timerlat", timeout=120)
    assert p.returncode == 3, p.stderr
    assert "CONFIG_TIMERLAT_TRACER" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not RT, reason="only the RT kernel has the timerlat tracer")
def test_timerlat_measures_stages_and_matches_the_timer_probe():
    out = lab_out()
    p = rtqual_run("run", "timerlat", "--duration", "3s", "-q", "-o", out / "timerlat", timeout=180)
    assert p.returncode == 0, p.stderr
    p = rtqual_run("run", "timer", "--duration", "3s", "-q", "-o", out / "timer-after", timeout=180)
    assert p.returncode == 0, p.stderr
    (tl,) = case_results(out / "timerlat")
    (tm,) = case_results(out / "timer-after")
    stages = tl["probe_summary"]["stages"]
    assert set(stages) >= {"irq", "thread"} and tl["stats"]["count"] > 0
    assert stages["irq"]["count"] == stages["thread"]["count"] == tl["stats"]["count"]
    assert stages["irq"]["min_ns"] + stages["thread"]["min_ns"] <= tl["stats"]["min_ns"]  # the split adds up
    assert tl["probe_summary"]["timerlat"]["lost_events"] == 0
    ratio = {k: round(tl["stats"][k] / tm["stats"][k], 3) for k in ("p50_ns", "p99_ns", "max_ns") if tm["stats"][k]}
    (out / "timerlat-vs-timer.json").write_text(
        json.dumps({"timerlat": tl["stats"], "timer": tm["stats"], "ratio": ratio})
    )
    print("timerlat/timer", ratio)
    shown = rtqual_run("show", out / "timerlat", timeout=120).stdout
    assert "stages (timerlat tracer)" in shown


@pytest.mark.skipif(not RT, reason="only the RT kernel has the timerlat tracer")
def test_timerlat_trace_uses_timerlat_split():
    out = lab_out()
    p = rtqual_run(
        "run", "timerlat", "--cpus", "1", "--duration", "2s", "--threshold", "500us", "--trace", "-q",
        "-o", out / "timerlat-trace", timeout=180,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    (case,) = case_results(out / "timerlat-trace")
    assert case["trace"]["timerlat"].startswith("used") or not case["spikes"]
    for s in case["spikes"]:
        assert s["source"] == "timerlat + sched/irq events"
        assert set(s["stages"]) >= {"irq_ns", "thread_ns"}

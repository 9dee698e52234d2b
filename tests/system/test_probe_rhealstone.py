"""Real `rtqual-probe rhealstone` runs (root): one Rhealstone component per run.

Invariants only, never absolute latencies: exactly --loops samples after the warm-up in
one slot (the measured CPU), histogram and summary agree, one response per stimulus
for interrupt-latency, and the priority-inheritance semantics of deadlock-break.
"""

import os
import subprocess

import pytest

from conftest import interrupt, needs_probe, needs_root, one, probe_records, start_probe, wait_measured

pytestmark = [needs_probe, needs_root]


def run(*args, timeout=60):
    return probe_records("rhealstone", *args, timeout=timeout)


CPUS = sorted(os.sched_getaffinity(0))
COMPONENTS = (
    "task-switch",
    "preemption",
    "semaphore-shuffle",
    "deadlock-break",
    "intertask-message",
    "interrupt-latency",
)
TWO_CPUS = pytest.mark.skipif(len(CPUS) < 2, reason="needs two usable CPUs")
LOOPS, WARMUP = 200, 20


def probe() -> str:
    from rtqual.measure.run import native

    return str(native.probe_path())


def component_param(c):
    # the spinning components refuse a one-CPU host; interrupt-latency needs a peer CPU
    needs_two = c in ("preemption", "deadlock-break", "interrupt-latency")
    return pytest.param(c, marks=[TWO_CPUS] if needs_two else [], id=c)


@pytest.mark.parametrize("component", [component_param(c) for c in COMPONENTS])
def test_component_invariants(component):
    cpu = CPUS[-1]
    out, recs = run(
        "--component",
        component,
        "--cpu",
        cpu,
        "--loops",
        LOOPS,
        "--warmup",
        WARMUP,
        "--interval",
        "200us",
        "--progress-ms",
        60000,
    )
    assert out.returncode == 0, out.stderr
    assert one(recs, "end")["status"] == 0
    header, summ, hist = one(recs, "header"), one(recs, "summary"), one(recs, "hist")
    p = header["params"]
    assert p["component"] == component and p["cpus"] == [cpu]
    assert header["rt"]["policy"] == "fifo" and not header["rt"]["degraded"]
    assert all(t["priority"] < 50 or t["role"] in ("high", "receiver", "responder") for t in p["threads"])
    assert [s["cpu"] for s in summ["cpus"]] == [cpu] == [hist["cpu"]]  # one distribution, one slot
    s = summ["cpus"][0]
    assert s["count"] == LOOPS  # exactly --loops samples after the warm-up
    assert s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["p999_ns"] <= s["p9999_ns"] <= s["max_ns"]
    assert s["min_ns"] <= s["mean_ns"] <= s["max_ns"] and s["min_ns"] > 0
    assert s["out_of_range"] == 0
    assert hist["count"] == s["count"] == sum(c for _, c in hist["counts"])
    rh = summ["rhealstone"]
    assert rh["component"] == component
    assert rh["warmup_samples"] == WARMUP
    # every round gave its samples or was counted as discarded
    assert rh["rounds"] * rh["samples_per_round"] >= LOOPS + WARMUP
    if component == "interrupt-latency":
        assert p["peer_cpu"] != cpu
        assert rh["stimuli"] == rh["responses"] >= LOOPS + WARMUP  # exactly one response per stimulus
        assert rh["coalesced"] == 0


@TWO_CPUS
@pytest.mark.parametrize("pi", ["on", "off"])
def test_deadlock_break_priority_inheritance(pi):
    spin_ns = 2_000_000
    out, recs = run(
        "--component",
        "deadlock-break",
        "--pi",
        pi,
        "--spin",
        "2ms",
        "--hold",
        "5us",
        "--interval",
        "3ms",
        "--loops",
        50,
        "--warmup",
        5,
        "--cpu",
        CPUS[-1],
    )
    assert out.returncode == 0, out.stderr  # finishes either way: the medium spinner is bounded
    summ = one(recs, "summary")
    s = summ["cpus"][0]
    assert s["count"] == 50 and summ["rhealstone"]["pi"] == (pi == "on")
    if pi == "off":
        # no inheritance: the high thread always waits out the medium thread's whole spin
        assert s["min_ns"] >= spin_ns
    else:
        # inheritance: the low holder runs above the medium spinner and releases first
        assert s["p50_ns"] < spin_ns


@TWO_CPUS
def test_sigint_is_inconclusive():
    proc, _ = start_probe("rhealstone", "--component", "preemption", "--duration", "60s", "--progress-ms", "100")
    wait_measured(proc)
    recs = interrupt(proc)
    assert one(recs, "end")["reason"] == "interrupted"
    assert one(recs, "summary")["cpus"][0]["count"] > 0


@pytest.mark.parametrize(
    "args, text",
    [
        (["--component", "nosuch"], "--component"),
        (["--component", "preemption", "--policy", "other"], "needs --policy fifo or rr"),
        (["--component", "task-switch", "--pi", "off"], "--pi applies"),
        (["--component", "intertask-message", "--interval", "1"], "--interval"),
        (["--component", "semaphore-shuffle", "--priority", "90"], "--priority"),
    ],
)
def test_bad_options_one_line_exit_1(args, text):
    out = subprocess.run([probe(), "rhealstone", "--check", *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual-probe: error:") and text in lines[0]

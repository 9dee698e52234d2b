"""--trace for real (root, tracefs): injected stalls blamed on the injecting task, an IRQ storm on the timer
interrupt, idle-vCPU spikes unaccounted, the tracefs instance always removed (normal end, SIGINT, SIGKILL +
`rtqual restore`), and an unwritable tracefs a warning while the run goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import needs_probe, needs_root, rtqual_argv, rtqual_run, show_json
from tracing import inject_stalls, ours, wait_for

HERE = Path(__file__).parent
pytestmark = [needs_root, needs_probe]
two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs (the tracer reads on another)")


def private_mounts(pid_journal: list[dict]) -> list[str]:
    """The private tracefs mounts of a run's journal that are still mounted."""
    mounts = Path("/proc/self/mounts").read_text()
    return [r["knob"] for r in pid_journal if r["kind"] == "mount" and f" {r['knob']} " in mounts]


def result(bundle: Path) -> dict:
    return json.loads(next((bundle / "cases").glob("*/result.json")).read_text())


def gap(s: dict) -> tuple[int, int]:
    return s["time_ns"] - s["latency_ns"], s["time_ns"]


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def traced_timer(b: Path, cpu: int, interval: str, duration: str, threshold: str) -> list[str]:
    """argv of `rtqual run timer --trace` on one CPU into bundle B, spikes above THRESHOLD."""
    return rtqual_argv("run", "timer", "--trace", "--cpus", cpu, "--interval", interval, "--duration", duration,
                       "--threshold", threshold, "-o", b, "-q")  # fmt: skip


def start_traced_timer(b: Path, cpu: int, interval: str, duration: str, threshold: str) -> subprocess.Popen:
    """traced_timer started, returned once its probe runs (killed if it never does)."""
    argv = traced_timer(b, cpu, interval, duration, threshold)
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: started(b), proc=run)
    except BaseException:
        run.kill()
        raise
    return run


def started(bundle: Path) -> bool:
    """The probe of the run's case has written its header (tracing is armed before the probe starts)."""
    streams = list((bundle / "cases").glob("*/stream.jsonl")) if (bundle / "cases").is_dir() else []
    return bool(streams) and streams[0].stat().st_size > 0


@two_cpus
def test_injected_stalls_are_blamed_on_the_injecting_task(tmp_path):
    """`rtqual-probe inject` (comm rtqual-stall, SCHED_FIFO 90) stalls the timer's CPU 20 times for 10 ms:
    at least 90 % of the spikes it causes name it first, with its time within 10 % of the stall's part
    of the gap. Twenty, not eight: with eight stalls "90 %" meant every one, and one spike in about fifty whose
    culprit time a hypervisor tick stretched past 10 % failed the test on a healthy host (1 run in 6, before
    and after the session change)."""
    cpu = max(os.sched_getaffinity(0))
    b = tmp_path / "b"
    run = start_traced_timer(b, cpu, "1ms", "9s", "2ms")
    try:
        time.sleep(0.5)
        stalls = inject_stalls(cpu, 20)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode in (0, 2), err
    assert len(stalls) == 20
    r = result(b)
    assert r["trace"]["source"] == "sched/irq events" and r["trace"]["lost_events"] == 0, r["trace"]
    hits, good = 0, 0
    for st in stalls:
        window = (st["start_ns"], st["end_ns"])
        for s in (s for s in r["spikes"] if s["cpu"] == cpu and overlap(gap(s), window) > 0):
            hits += 1
            want = overlap(gap(s), window)
            top = s["culprits"][0]
            good += top["name"] == "rtqual-stall" and abs(top["duration_ns"] - want) <= 0.1 * want
            assert top["name"] != "rtqual-stall" or (top["policy"] in ("fifo", "rt") and top["priority"] == 90), top
    assert hits >= 0.9 * len(stalls), (hits, r["spikes"])
    assert good >= 0.9 * hits, [s["culprits"][:2] for s in r["spikes"]]
    assert (b / "cases/001-timer" / r["spikes"][0]["trace_file"]).is_file()
    shown = rtqual_run("show", b, timeout=60).stdout
    assert "held by task rtqual-stall (pid" in shown and "fifo 90)" in shown, shown
    doc = show_json(b)
    spikes = doc["cases"][0]["spikes"]
    assert spikes and set(spikes[0]) >= {"cpu", "time_ns", "latency_ns", "culprits"}
    for s in spikes:
        durations = [c["duration_ns"] for c in s["culprits"]]
        assert durations == sorted(durations, reverse=True)
        assert abs(sum(durations) - s["latency_ns"]) <= 1_000  # every ns of the gap goes to one culprit
    verify = rtqual_run("verify", b, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@two_cpus
def test_an_irq_storm_is_blamed_on_the_timer_interrupt(tmp_path):
    """19 000 timerfds on the timer's CPU expiring together: that CPU's timer interrupt runs for about a
    millisecond or more; the spikes that overlap a burst name the interrupt (local_timer) first."""
    cpu = max(os.sched_getaffinity(0))
    b = tmp_path / "b"
    run = start_traced_timer(b, cpu, "200us", "5s", "500us")
    try:
        storm = subprocess.run(
            [sys.executable, HERE / "irqstorm.py", str(cpu), "19000", "12", "150"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert storm.returncode == 0, storm.stderr
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    bursts = [json.loads(x)["at_ns"] for x in storm.stdout.splitlines() if x.startswith("{")]
    assert len(bursts) == 12
    r = result(b)
    hit = [
        s for s in r["spikes"] if s["cpu"] == cpu and any(gap(s)[0] <= t + 3_000_000 and gap(s)[1] >= t for t in bursts)
    ]
    assert len(hit) >= len(bursts) // 2, r["spikes"]
    irq_first = [s for s in hit if s["culprits"][0]["kind"] in ("irq", "softirq")]
    assert len(irq_first) >= 0.8 * len(hit), [s["culprits"][:2] for s in hit]
    assert all(s["culprits"][0]["name"] == "local_timer" for s in irq_first)


@two_cpus
def test_spikes_on_an_idle_vcpu_are_unaccounted(tmp_path):
    """No guest activity on the timer's CPU: a wake-up late while the CPU idled is "unaccounted" (this
    VM's hypervisor). Natural spikes only: when none happens while idle, there is nothing to check (the
    attribution itself is unit-tested on recorded text)."""
    cpu = max(os.sched_getaffinity(0))
    b = tmp_path / "b"
    out = subprocess.run(traced_timer(b, cpu, "1ms", "15s", "1500us"), capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 2), out.stderr
    r = result(b)
    for s in r["spikes"]:
        assert abs(sum(c["duration_ns"] for c in s["culprits"]) - s["latency_ns"]) <= 1_000
    idle = [s for s in r["spikes"] if any(c["kind"] == "unaccounted" for c in s["culprits"])]
    if not idle:
        pytest.skip(f"no spike on an idle vCPU in 15 s ({len(r['spikes'])} spikes, all with a task or IRQ)")
    for s in idle:
        c = next(c for c in s["culprits"] if c["kind"] == "unaccounted")
        assert c["pid"] is None and ("hypervisor" in c["name"]) and c["duration_ns"] > 0


def test_the_instance_is_gone_after_a_normal_end(tmp_path, tracefs_view):
    b = tmp_path / "b"
    out = rtqual_run("run", "timer", "--trace", "--duration", "1s", "-o", b, "-q", timeout=60)
    assert out.returncode in (0, 2), out.stderr
    journal = json.loads((b / "host/changes.json").read_text())
    records = [c for c in journal["changes"] if c["condition"] == "trace"]
    assert any(c["kind"] == "trace-instance" for c in records) and all(c["restored"] for c in records)
    assert ours(tracefs_view, journal["pid"]) == [] and private_mounts(records) == []
    trace = result(b)["trace"]
    assert trace["instance"].startswith(f"rtqual-{journal['pid']}-")
    assert isinstance(trace["reader_cpu_ns"], int) and 0 < trace["reader_cpu_ns"] < 1_000_000_000  # what it cost


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_the_instance_is_gone_after_sigint_and_after_sigkill_plus_restore(tmp_path, tracefs_view, sig):
    b = tmp_path / "b"
    proc = subprocess.Popen(
        rtqual_argv("run", "timer", "--trace", "--duration", "60s", "-o", b, "-q"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        names = wait_for(lambda: ours(tracefs_view, proc.pid), proc=proc)
        wait_for(lambda: started(b), proc=proc)
    finally:
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
    records = [c for c in json.loads((b / "host/changes.json").read_text())["changes"] if c["condition"] == "trace"]
    if sig == signal.SIGINT:
        assert code == 4
        assert ours(tracefs_view, proc.pid) == [] and private_mounts(records) == []
        assert all(c["restored"] for c in records)
        return
    assert ours(tracefs_view, proc.pid) == names  # killed: nothing could remove it
    out = rtqual_run("restore", b, timeout=60)
    assert out.returncode == 0, out.stderr
    assert ours(tracefs_view, proc.pid) == [] and private_mounts(records) == []
    again = rtqual_run("restore", b, timeout=60)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("where", ["read-only", "missing"])
def test_an_unwritable_tracefs_is_one_warning_and_the_run_goes_on(tmp_path, tracefs_view, where):
    ro = tmp_path / "ro"
    ro.mkdir()
    if where == "read-only":  # a read-only bind mount of tracefs (the other mounts stay writable)
        subprocess.run(["mount", "--bind", str(tracefs_view), str(ro)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
    else:
        ro = tmp_path / "nowhere"
    try:
        b = tmp_path / "b"
        env = {**os.environ, "RTQUAL_TRACEFS": str(ro)}
        out = rtqual_run("run", "timer", "--trace", "--duration", "1s", "-o", b, "-q", timeout=60, env=env)
    finally:
        if where == "read-only":
            subprocess.run(["umount", str(ro)], check=False)
    assert out.returncode in (0, 2), out.stderr
    r = result(b)
    assert "trace" not in r and r["stats"]["count"] > 0
    warned = [w for w in r["warnings"] if w.startswith("--trace:")]
    assert len(warned) == 1 and "the case ran without tracing" in warned[0], r["warnings"]
    assert ("read-only" in warned[0]) if where == "read-only" else ("not a tracefs folder" in warned[0])
    assert out.stdout.count("--trace:") == 1, out.stdout

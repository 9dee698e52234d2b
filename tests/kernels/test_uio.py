"""A real interrupt in each lab guest (tests/kernels/run boots them with `--device edu`: qemu's edu PCI device bound
to uio_pci_generic, $RTQUAL_LAB_UIO its /dev/uioN): `rtqual run event --source uio`, active (rtqual writes edu's
raise register) and passive (another process writes it, `rtqual-probe pio`; t0 is the kernel's irq_handler_entry),
and the IOC over UIO (`ioc --input uio:DEV`: the IOC's bi woken by the interrupt, the kernel's stages in front of the
IOC's), active and passive (the interrupt from another process, t0 its irq_handler_entry), all in one scenario run
(each rtqual command costs minutes of Python start-up under TCG).
Each: every interrupt a sample or a counted miss, the stages in timeline order and summing to the total, the IRQ
thread named where the kernel has one (the RT kernel), absent where it runs the handler in the hard interrupt. TCG:
the figures are the emulator's, only invariants are asserted."""

import json
import os
from functools import cache
from pathlib import Path

import pytest
from lab import RT, lab_out

from conftest import rtqual_run

UIO = os.environ.get("RTQUAL_LAB_UIO", "")
pytestmark = pytest.mark.skipif(not UIO, reason="the guest has no edu device bound to UIO (kernel-lab --device edu)")
TRIGGER = "0:0x60=1"  # edu: a write of 1 to 0x60 raises its interrupt, of bits to 0x64 clears them
STAGES = ("hardirq", "irq_thread_woken", "irq_thread_running", "reader_woken", "reader_running", "read_returned")


def raiser() -> list[str]:
    """edu's raise register written from outside the reader every 10 ms: a pio sweep of 0x58..0x63, whose only
    register is 0x60 (it receives pass + 2, never 0: a raise of those status bits); 32-bit accesses, as edu wants.
    It runs until killed (the passive case's command load: rtqual stops it after the case)."""
    from rtqual.measure.run import native

    return [str(native.probe_path()), "pio", "--uio", UIO, "--bar", "0", "--offset", "0x58", "--size", "12",
            "--width", "32", "--op", "write", "--pause", "10ms", "--policy", "other", "--duration", "1h"]  # fmt: skip


ACK_ALL = "0:0x64=0xffffffff"  # the raiser sets several bits of edu's status: every case clears them all
# The passive cases come before the active ones of their probe: an interrupt the raiser (their load) raises after the
# probe's last unmask is masked by uio_pci_generic's handler with no one to unmask it; the active case after unmasks it.
CASES = """[run]
name = "uio"

[[case]]
label = "event uio passive"
probe = "event"
loads = [{{ type = "command", argv = {raiser} }}]
[case.params]
source = "uio"
uio = "{uio}"
ack = "{ack}"
cpu = 1
duration = "2s"
warmup = 5
timeout = "10s"

[[case]]
label = "event uio active"
probe = "event"
[case.params]
source = "uio"
uio = "{uio}"
trigger = "{trigger}"
ack = "{ack}"
cpu = 1
rate = 100
duration = "2s"
warmup = 10

[[case]]
label = "ioc uio passive"
probe = "ioc"
loads = [{{ type = "command", argv = {raiser} }}]
[case.params]
input = "uio:{uio}"
ack = "{ack}"
cpu = 0
reader_cpu = 1
duration = "2s"
warmup = 5
timeout = "10s"

[[case]]
label = "ioc uio"
probe = "ioc"
[case.params]
input = "uio:{uio}"
trigger = "{trigger}"
ack = "{ack}"
cpu = 0
reader_cpu = 1
rate = 50
duration = "2s"
warmup = 5
"""


def uio_run() -> tuple[dict[str, dict], dict]:
    """_uio_outcome()'s cases and what was left, asserting the run exited 0 (each test fails with its output)."""
    failed, cases, left = _uio_outcome()
    assert not failed, failed
    return cases, left


@cache
def _uio_outcome() -> tuple[str, dict[str, dict], dict]:
    """The guest's one run of the UIO cases (each rtqual command costs minutes of Python start-up under TCG):
    event over UIO passive (the interrupt from another process, `rtqual-probe pio` writing edu's raise register,
    a command load of that case) and active, then the IOC over UIO passive (the same raiser) and active; each case
    as show --json gives it, by label, and what was left right after the run (tracefs instances, processes holding
    the device, its mask bit), and its output if it did not exit 0 (kept, so no test runs it again)."""
    toml, bundle = lab_out() / "uio.toml", lab_out() / "uio"
    toml.write_text(CASES.format(raiser=json.dumps(raiser()), uio=UIO, trigger=TRIGGER, ack=ACK_ALL))
    p = rtqual_run("run", toml, "-q", "-o", bundle, timeout=900)
    config = Path(f"/sys/class/uio/{Path(UIO).name}/device/config").read_bytes()
    left = {
        "instances": sorted(p.name for p in Path("/sys/kernel/tracing/instances").glob("rtqual-*")),
        "holders": [fd.parent.parent.name for fd in Path("/proc").glob("[0-9]*/fd/*") if _target(fd) == UIO],
        "masked": bool(int.from_bytes(config[4:6], "little") & 0x400),  # the PCI command's interrupt-disable bit
    }
    if p.returncode != 0:
        return p.stderr + p.stdout, {}, left
    cases = {c["label"]: c for c in json.loads(rtqual_run("show", bundle, "--json").stdout)["cases"]}
    for label, case in cases.items():
        (lab_out() / f"{label.replace(' ', '-')}.json").write_text(json.dumps(case))
    return "", cases, left


def run_uio(mode: str) -> dict:
    """The event case over UIO, active or passive."""
    return uio_run()[0][f"event uio {mode}"]


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_uio_event_every_interrupt_accounted_for(mode):
    case = run_uio(mode)
    n = case["interrupts"]
    assert case["verdict"] in ("pass", "completed") and case["stats"]["count"] == n["samples"] > 0
    assert n["samples"] + n["warmup"] + n["missed"] == n["raised"]  # every interrupt a sample or a counted miss
    assert mode == "passive" or n["missed"] == 0  # active: one trigger, one interrupt; passive may coalesce
    assert case["params"]["mode"] == mode and not n["timed_out"]


@pytest.mark.parametrize("mode", ["active", "passive"])
def test_uio_event_stages_in_timeline_order_sum_to_the_total(mode):
    case = run_uio(mode)
    n, stages, irq = case["interrupts"], case["stages"], case["irq"]
    want = [s for s in STAGES if (mode == "active" or s != "hardirq") and (RT or "irq_thread" not in s)]
    assert list(stages) == want  # the hard interrupt first, the read's return last
    assert n["staged"] > 0 and all(s["count"] == n["staged"] for s in stages.values())
    assert n["staged_stages_ns"] == n["staged_total_ns"]  # per sample the stages add up to its total
    assert sum(s["min_ns"] for s in stages.values()) <= case["stats"]["max_ns"]
    assert irq["number"] > 0
    if RT:  # PREEMPT_RT: every device interrupt is an IRQ thread, SCHED_FIFO 50 by default
        assert irq["thread"].startswith(f"irq/{irq['number']}-") and irq["policy"] == "fifo" and irq["priority"] > 0
    else:  # the standard kernel without threadirqs: the handler runs in the hard interrupt
        assert irq["thread"] is None and irq["policy"] is None


def test_ioc_over_uio_every_interrupt_a_sample_and_its_stages_sum_to_the_total():
    case = uio_run()[0]["ioc uio"]
    n, stages, irq = case["interrupts"], case["stages"], case["irq"]
    assert case["verdict"] in ("pass", "completed") and case["stats"]["count"] == n["samples"] > 0
    assert n["samples"] + n["warmup"] == n["raised"] and n["missed"] == 0 and not n["timed_out"]
    assert n["seen"] == n["raised"]  # the device's own count: one interrupt per trigger, none besides
    # the interrupt's stages (the hard interrupt first, the IOC reader's read last), then the IOC's own
    want = [s for s in STAGES if RT or "irq_thread" not in s] + ["dispatch", "chain", "return"]
    assert list(stages) == want and "wake" not in stages  # the interrupt's stages are the wake stage's parts
    assert n["staged"] > 0 and all(s["count"] == n["staged"] for s in stages.values())
    assert n["staged_stages_ns"] == n["staged_total_ns"]  # per sample all stages add up to its total
    assert sum(s["min_ns"] for s in stages.values()) <= case["stats"]["max_ns"]
    assert case["params"]["mode"] == "active" and case["params"]["uio"] == UIO and irq["number"] > 0
    if RT:  # the IOC's reader is woken by the input's IRQ thread
        assert irq["thread"].startswith(f"irq/{irq['number']}-") and irq["policy"] == "fifo"
    else:
        assert irq["thread"] is None


def test_ioc_over_uio_passive_every_interrupt_accounted_for_and_its_stages_sum_to_the_total():
    """The IOC's input from an interrupt rtqual does not raise (the raiser, the case's command load): t0 is the
    kernel's irq_handler_entry, so there is no hardirq stage; every interrupt the device counted is a sample, a
    warm-up one, one without its entry in the trace (unmatched), or the one that came as the run ended."""
    case = uio_run()[0]["ioc uio passive"]
    n, stages, irq = case["interrupts"], case["stages"], case["irq"]
    assert case["verdict"] in ("pass", "completed") and case["stats"]["count"] == n["samples"] > 0
    assert case["params"]["mode"] == "passive" and "irq_handler_entry" in case["params"]["t0"]
    assert "trigger" not in case["params"] or case["params"]["trigger"] is None
    assert n["raised"] == n["seen"]  # passive: raised is the device's own count over the run
    assert n["samples"] + n["warmup"] + n["missed"] == n["raised"] and not n["timed_out"]
    assert n["missed"] <= n["unmatched"] + 1  # each miss has no t0 in the trace, or came as the run ended
    want = [s for s in STAGES if s != "hardirq" and (RT or "irq_thread" not in s)] + ["dispatch", "chain", "return"]
    assert list(stages) == want  # from the hard interrupt's entry to the harness's read of the response
    assert n["staged"] > 0 and all(s["count"] == n["staged"] for s in stages.values())
    assert n["staged_stages_ns"] == n["staged_total_ns"]  # per sample all stages add up to its total
    assert sum(s["min_ns"] for s in stages.values()) <= case["stats"]["max_ns"]
    assert irq["number"] > 0
    if RT:  # the IOC's reader is woken by the input's IRQ thread
        assert irq["thread"].startswith(f"irq/{irq['number']}-") and irq["policy"] == "fifo"
    else:
        assert irq["thread"] is None


def test_nothing_left_masked_or_running_after_the_active_and_passive_uio_runs():
    left = uio_run()[1]
    assert left["instances"] == []  # rtqual's tracefs instances removed
    assert left["holders"] == []  # no IOC, no probe left holding the device
    assert not left["masked"]  # the interrupt unmasked (by the last case, an active one: the raiser had stopped)


def test_a_passive_run_whose_interrupt_never_comes_is_bounded_and_leaves_nothing():
    """The passive source with nothing raising (after the scenario: its raisers are stopped, the last case
    acknowledged and unmasked the device): exit 4 with what was seen, within the bound, nothing left behind."""
    import subprocess
    import time

    from rtqual.measure.run import native

    uio_run()  # the scenario first: its raiser must not be running
    argv = [str(native.probe_path()), "event", "--source", "uio", "--uio", UIO, "--ack", ACK_ALL, "--cpu", "1"]
    t0 = time.monotonic()
    p = subprocess.run([*argv, "--timeout", "2s", "--loops", "3", "--json-fd", "1"], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    took_s = time.monotonic() - t0
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    assert p.returncode == 4, p.stderr
    assert f"no interrupt from {UIO}" in line and "within --timeout 2000 ms:" in line, line  # passive: no trigger
    assert "0 raised, 0 samples" in line, line
    summary = next(json.loads(x) for x in p.stdout.splitlines() if '"summary"' in x)
    assert summary["interrupts"]["samples"] == 0 and summary["interrupts"]["timed_out"] is True
    assert took_s < 60  # bounded by --timeout (and TCG's start-up), not by the 3 loops that never come
    config = Path(f"/sys/class/uio/{Path(UIO).name}/device/config").read_bytes()
    assert not int.from_bytes(config[4:6], "little") & 0x400  # left unmasked
    assert sorted(Path("/sys/kernel/tracing/instances").glob("rtqual-*")) == []
    assert [fd for fd in Path("/proc").glob("[0-9]*/fd/*") if _target(fd) == UIO] == []


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""

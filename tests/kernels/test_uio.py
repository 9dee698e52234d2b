"""A real interrupt in each lab guest (tests/kernels/run boots them with `--device edu`: qemu's edu PCI device bound
to uio_pci_generic, $RTQUAL_LAB_UIO its /dev/uioN): `rtqual run event --source uio`, active (rtqual writes edu's
raise register) and passive (another process writes it, `rtqual-probe pio`; t0 is the kernel's irq_handler_entry).
Each: every interrupt a sample or a counted miss, the stages in timeline order and summing to the total, the IRQ
thread named where the kernel has one (the RT kernel), absent where it runs the handler in the hard interrupt. TCG:
the figures are the emulator's, only invariants are asserted."""

import json
import os
import subprocess
from functools import cache

import pytest
from lab import RT, lab_out

from conftest import rtqual_run

UIO = os.environ.get("RTQUAL_LAB_UIO", "")
pytestmark = pytest.mark.skipif(not UIO, reason="the guest has no edu device bound to UIO (kernel-lab --device edu)")
TRIGGER, ACK = "0:0x60=1", "0:0x64=1"  # edu: a write of 1 to 0x60 raises its interrupt, to 0x64 clears it
STAGES = ("hardirq", "irq_thread_woken", "irq_thread_running", "reader_woken", "reader_running", "read_returned")


def raiser() -> list[str]:
    """edu's raise register written from outside the reader every 10 ms: a pio sweep of 0x58..0x63, whose only
    register is 0x60 (it receives pass + 2, never 0: a raise of those status bits); 32-bit accesses, as edu wants.
    It runs until killed: the reader's rtqual may take minutes to start under TCG."""
    from rtqual.measure.run import native

    return [str(native.probe_path()), "pio", "--uio", UIO, "--bar", "0", "--offset", "0x58", "--size", "12",
            "--width", "32", "--op", "write", "--pause", "10ms", "--policy", "other", "--duration", "1h"]  # fmt: skip


ACK_ALL = "0:0x64=0xffffffff"


@cache
def run_uio(mode: str) -> dict:
    """One case of `rtqual run event --source uio` in this guest (cached: each runs once), as show --json gives it."""
    bundle = lab_out() / f"uio-{mode}"
    args = ["run", "event", "--source", "uio", "--uio", UIO, "--ack", ACK, "--cpu", 1, "-q", "-o", bundle]
    source = None
    if mode == "active":
        args += ["--trigger", TRIGGER, "--rate", 100, "--duration", "2s", "--warmup", 10]
    else:  # passive: the interrupt comes from another process, `rtqual-probe pio` writing edu's raise register
        source = subprocess.Popen(raiser(), start_new_session=True, stdout=subprocess.DEVNULL)
        args[args.index(ACK)] = ACK_ALL  # the raiser sets several bits of edu's status: clear them all
        args += ["--duration", "2s", "--warmup", 5, "--timeout", "10s"]
    try:
        p = rtqual_run(*args, timeout=300)
    finally:
        if source:
            os.killpg(source.pid, 9)
            source.wait()
    assert p.returncode == 0, p.stderr + p.stdout
    case = json.loads(rtqual_run("show", bundle, "--json").stdout)["cases"][0]
    (lab_out() / f"uio-{mode}.json").write_text(json.dumps(case))
    return case


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

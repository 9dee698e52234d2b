"""A real interrupt in each lab guest (tests/kernels/run boots them with `--device edu`: qemu's edu PCI device bound
to uio_pci_generic, $RTQUAL_LAB_UIO its /dev/uioN): `rtqual run event --source uio`, active (rtqual writes edu's
raise register) and passive (another process writes it, `rtqual-probe pio`; t0 is the kernel's irq_handler_entry),
and the IOC over UIO (`ioc --input uio:DEV`: the IOC's bi woken by the interrupt, the kernel's stages in front of the
IOC's), the active cases in one scenario run (each rtqual command costs minutes of Python start-up under TCG).
Each: every interrupt a sample or a counted miss, the stages in timeline order and summing to the total, the IRQ
thread named where the kernel has one (the RT kernel), absent where it runs the handler in the hard interrupt. TCG:
the figures are the emulator's, only invariants are asserted."""

import json
import os
import subprocess
from functools import cache
from pathlib import Path

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


ACTIVE = f"""[run]
name = "uio"

[[case]]
label = "event uio active"
probe = "event"
[case.params]
source = "uio"
uio = "{UIO}"
trigger = "{TRIGGER}"
ack = "{ACK}"
cpu = 1
rate = 100
duration = "2s"
warmup = 10

[[case]]
label = "ioc uio"
probe = "ioc"
[case.params]
input = "uio:{UIO}"
trigger = "{TRIGGER}"
ack = "{ACK}"
cpu = 0
reader_cpu = 1
rate = 50
duration = "2s"
warmup = 5
"""


@cache
def active_cases() -> dict[str, dict]:
    """The active cases (event over UIO, the IOC over UIO), one scenario run, by label as show --json gives them."""
    toml, bundle = lab_out() / "uio-active.toml", lab_out() / "uio-active"
    toml.write_text(ACTIVE)
    p = rtqual_run("run", toml, "-q", "-o", bundle, timeout=400)
    assert p.returncode == 0, p.stderr + p.stdout
    cases = {c["label"]: c for c in json.loads(rtqual_run("show", bundle, "--json").stdout)["cases"]}
    for label, case in cases.items():
        (lab_out() / f"{label.replace(' ', '-')}.json").write_text(json.dumps(case))
    return cases


@cache
def run_uio(mode: str) -> dict:
    """One case of `rtqual run event --source uio` in this guest (cached: each runs once), as show --json gives it:
    active from the scenario run; passive with the interrupt from another process, `rtqual-probe pio` writing
    edu's raise register."""
    if mode == "active":
        return active_cases()["event uio active"]
    bundle = lab_out() / f"uio-{mode}"
    args = ["run", "event", "--source", "uio", "--uio", UIO, "--ack", ACK_ALL, "--cpu", 1, "-q", "-o", bundle]
    args += ["--duration", "2s", "--warmup", 5, "--timeout", "10s"]  # ACK_ALL: the raiser sets several status bits
    source = subprocess.Popen(raiser(), start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        p = rtqual_run(*args, timeout=300)
    finally:
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


def test_ioc_over_uio_every_interrupt_a_sample_and_its_stages_sum_to_the_total():
    case = active_cases()["ioc uio"]
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


def test_nothing_left_masked_or_running_after_the_uio_runs():
    active_cases()
    run_uio("passive")
    left = sorted(p.name for p in Path("/sys/kernel/tracing/instances").glob("rtqual-*"))
    assert left == []  # rtqual's tracefs instances removed
    device = Path(UIO).name
    holders = [fd.parent.parent.name for fd in Path("/proc").glob("[0-9]*/fd/*") if _target(fd) == UIO]
    assert holders == [], f"{UIO} still open by {holders}"  # no IOC, no probe left holding the device
    config = Path(f"/sys/class/uio/{device}/device/config").read_bytes()
    assert not int.from_bytes(config[4:6], "little") & 0x400  # the PCI interrupt-disable bit clear: unmasked


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""

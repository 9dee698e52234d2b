"""The `irq-thread-priority` fix on a real IRQ thread (tests/kernels/run boots each guest with qemu's edu device bound
to uio_pci_generic): the journaled condition raises the thread(s) of the device's IRQ (irq/N-uio_pci_generic, FIFO
50 on PREEMPT_RT) to FIFO 91 and `rtqual restore`'s path puts them back; a kernel without IRQ threads (the standard
one without threadirqs) says the fix does not apply. In the RT guest `rtqual advise --measure --fix
irq-thread-priority` measures it A/B over the event probe's UIO case (two short rounds: the figures are the
emulator's, only the mechanism is asserted). The unit tests (tests/unit/test_advise_irq_threads.py) cover the rest
with a fake thread table."""

import json
import os
import re
from pathlib import Path

import pytest
from lab import RT, lab_out

from conftest import rtqual_run
from rtqual.measure.conditions import applier, irqthreads, journal, restore
from rtqual.units import parse_kernel_cpulist

UIO = os.environ.get("RTQUAL_LAB_UIO", "")
pytestmark = pytest.mark.skipif(not UIO, reason="the guest has no edu device bound to UIO (kernel-lab --device edu)")
FIX = "advise:irq-thread-priority"
CASE = """[run]
name = "irq-thread-priority"

[[case]]
label = "event uio"
probe = "event"
[case.params]
source = "uio"
uio = "{uio}"
trigger = "0:0x60=1"
ack = "0:0x64=0xffffffff"
cpu = {cpu}
priority = 90
rate = 100
duration = "1s"
warmup = 5
"""


def irq() -> int:
    return int(Path(f"/sys/class/uio/{Path(UIO).name}/device/irq").read_text())


def thread_cpu(pid: int) -> int:
    """The first CPU a thread may run on (an IRQ thread follows its IRQ's affinity)."""
    allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    return parse_kernel_cpulist(allowed.group(1) if allowed else "0")[0]


def setting(pid: int) -> str:
    """A thread's policy and priority as the kernel gives them ("fifo 50")."""
    policy = {os.SCHED_OTHER: "other", os.SCHED_FIFO: "fifo", os.SCHED_RR: "rr"}[os.sched_getscheduler(pid)]
    return f"{policy} {os.sched_getparam(pid).sched_priority}"


def test_the_irq_thread_is_raised_journaled_and_restore_puts_it_back():
    """Apply the condition as a run does (the journal in a bundle cut by a kill: status running), see the thread at
    FIFO 91, then `rtqual restore`'s undo of that bundle: the thread as it was."""
    bundle = lab_out() / "irq-thread-killed"
    (bundle / "host").mkdir(parents=True, exist_ok=True)
    (bundle / "manifest.json").write_text(json.dumps({"status": "running"}))
    threads = irqthreads.of_irq(irq())
    before = {t["pid"]: setting(t["pid"]) for t in threads}
    cond = applier.Conditions(state_path=bundle / journal.CHANGES_FILE)
    records = cond.apply({"irq_threads": [{"irq": irq(), "priority": 91, "condition": FIX}]})
    if not RT:  # the standard kernel runs the handler in the hard interrupt: no thread, the fix does not apply
        assert threads == [] and [r["applied"] for r in records] == [False]
        assert "no irq/" in records[0]["reason"] and restore.restore_from_bundle(bundle) == []
        return
    assert threads and all(t["comm"].startswith(f"irq/{irq()}-") for t in threads)
    assert all(r["applied"] and r["before"] == before[r["pid"]] for r in records), records
    assert all(setting(pid) == "fifo 91" for pid in before)  # the kernel's own view of the thread
    actions = restore.restore_from_bundle(bundle)
    assert [a["action"] for a in actions] == ["set"] * len(before) and all(a["restored"] for a in actions)
    assert {pid: setting(pid) for pid in before} == before
    assert restore.restore_from_bundle(bundle) == []


@pytest.mark.skipif(not RT, reason="the standard kernel has no IRQ thread to raise")
def test_advise_measure_applies_the_irq_thread_priority_fix_and_puts_it_back():
    toml, bundle = lab_out() / "irq-prio.toml", lab_out() / "advise-irq-prio"
    pid = irqthreads.of_irq(irq())[0]["pid"]
    before, cpu = setting(pid), thread_cpu(pid)  # the reader where the IRQ thread may run: they share the CPU
    toml.write_text(CASE.format(uio=UIO, cpu=cpu))
    argv = ["advise", "--measure", "--case", toml, "--fix", "irq-thread-priority", "--rounds", "2"]
    p = rtqual_run(*argv, "--cpus", cpu, "--priority", "90", "--json", "-o", bundle, timeout=900)
    assert p.returncode == 0, p.stderr + p.stdout
    out = json.loads(p.stdout)
    (lab_out() / "advise-irq-prio.json").write_text(p.stdout)
    [fix] = [f for f in out["findings"] if f["id"] == "irq-thread-priority"]
    assert fix["knobs"] == [{"irq": irq(), "priority": 91}] and f"chrt -f -p 91 {pid}" in fix["fix"]
    [measured] = out["measured"]
    assert measured["id"] == "irq-thread-priority" and measured["rounds"] == 2
    assert measured["effect"] in ("better", "worse", "mixed", "no measurable effect")
    # each arm's case saw the IRQ thread as the arm set it; the journal holds every change, each put back
    cases = json.loads(rtqual_run("show", bundle, "--json").stdout)["cases"]
    seen = {(c["label"].split("·")[-1].strip(), c["irq"]["priority"]) for c in cases}
    assert seen == {("baseline", int(before.split()[1])), ("with irq-thread-priority", 91)}
    changes = json.loads((bundle / journal.CHANGES_FILE).read_text())["changes"]
    raised = [r for r in changes if r["kind"] == "irq-thread"]
    assert len(raised) == 2 and all(r["before"] == before and r["restored"] and r["pid"] == pid for r in raised)
    assert setting(pid) == before  # nothing stays changed

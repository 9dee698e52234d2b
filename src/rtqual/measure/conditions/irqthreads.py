"""The threads that serve an interrupt and their scheduling: on PREEMPT_RT (or with `threadirqs`) a device's handler
runs in kernel threads named `irq/N-NAME` (`irq/N-s-NAME` for a secondary one), SCHED_FIFO 50 by default; a kernel
that runs handlers in the hard interrupt has none. Found below a root's /proc (kernel threads only: a user process
may name itself `irq/...`), set with sched_setscheduler, and put back by pid only while that pid is still the same
kernel thread (the journal's "irq-thread" records: rtqual advise --measure's `irq-thread-priority` fix)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from rtqual.answers.advice.hostchecks import IRQ_THREAD
from rtqual.units import SCHED_POLICY_NAMES
from rtqual.util import read_text

PF_KTHREAD = 0x00200000  # task flags (stat field 9): a kernel thread
SETTING = re.compile(r"(?:fifo|rr) (?:[1-9]|[1-9][0-9])|other 0")  # what is set and written back: "fifo 50"
POLICIES = {"other": os.SCHED_OTHER, "fifo": os.SCHED_FIFO, "rr": os.SCHED_RR}


def _setscheduler(pid: int, policy: int, priority: int) -> None:
    """sched_setscheduler(2) of one thread (tests replace it: no real IRQ thread exists on their host)."""
    os.sched_setscheduler(pid, policy, os.sched_param(priority))


def kernel_thread(proc: Path) -> dict | None:
    """pid, comm, policy ("fifo", "rr", "other", else the kernel's number as text) and rt priority of the kernel
    thread whose /proc folder is proc; None when it is gone, unreadable or no kernel thread."""
    text, _ = read_text(proc / "stat")
    head, sep, tail = (text or "").rpartition(")")
    fields = tail.split()
    try:
        flags, priority, policy = int(fields[6]), int(fields[37]), int(fields[38])
        pid = int(proc.name)
    except (IndexError, ValueError):
        return None
    if not sep or "(" not in head or not flags & PF_KTHREAD:
        return None
    return {
        "pid": pid,
        "comm": head.partition("(")[2],
        "policy": SCHED_POLICY_NAMES.get(policy, str(policy)),
        "priority": priority,
    }


def of_irq(irq: int, root: str | os.PathLike = "/") -> list[dict]:
    """The kernel threads serving IRQ irq below root's /proc, by pid, each with its "proc" folder; [] on a kernel
    that runs the IRQ's handler in the hard interrupt."""
    out: list[dict] = []
    try:
        procs = [p for p in (Path(root) / "proc").iterdir() if p.name.isdigit()]
    except OSError:
        return out
    for proc in procs:
        t = kernel_thread(proc)
        m = IRQ_THREAD.fullmatch(t["comm"]) if t else None
        if t and m and int(m.group(1)) == irq:
            out.append(t | {"proc": str(proc)})
    return sorted(out, key=lambda t: t["pid"])


def setting(thread: dict) -> str | None:
    """A thread's policy and priority as the journal keeps them ("fifo 50", "other 0"); None for a policy rtqual
    does not write back (deadline, batch, idle)."""
    text = f"{thread['policy']} {thread['priority']}"
    return text if SETTING.fullmatch(text) else None


def apply(pid: int, text: str) -> None:
    """Set a thread's policy and priority from a setting text ("fifo 91"); OSError when the kernel refuses."""
    if not SETTING.fullmatch(text):
        raise ValueError(f"not a policy and priority: {text!r}")
    policy, priority = text.split()
    _setscheduler(pid, POLICIES[policy], int(priority))


def put_back(record: dict) -> dict:
    """Undo an "irq-thread" record: its thread's policy and priority written back when the record's pid is still
    that kernel thread (same comm); a thread that is gone took its setting with it (restored, nothing done)."""
    proc = Path(record["knob"])
    now = kernel_thread(proc)
    if now is None or now["comm"] != record.get("comm"):
        return {"knob": record["knob"], "action": "gone", "restored": True}
    apply(now["pid"], record["before"])
    return {"knob": record["knob"], "action": "set", "value": record["before"], "restored": True}

"""`rtqual advise --measure`'s `irq-thread-priority` fix: the IRQ's kernel threads (irq/N-*) raised to SCHED_FIFO
for the fix's rounds, each thread's policy and priority journaled by pid and comm before the change and put back
after its case, by `rtqual restore` after a kill, never on a process that only took an IRQ thread's name. This host
has no threaded IRQs: the threads are a fake /proc table below a root, sched_setscheduler a function that rewrites
their stat files (the real thing runs in the kernel tier, tests/kernels/test_uio.py)."""

import json

import pytest

from rtqual.advise import command
from rtqual.advise import measure as measuring
from rtqual.answers.advice import advise, hostchecks
from rtqual.errors import RtqError
from rtqual.measure.conditions import applier, irqthreads, journal, restore

POLICY = {"other": 0, "fifo": 1, "rr": 2}
CONDITION = {"irq": 22, "priority": 91, "condition": "advise:irq-thread-priority"}


def stat_line(pid: int, comm: str, policy: int, priority: int, kthread: bool = True) -> str:
    """A /proc/PID/stat line: field 9 the flags (PF_KTHREAD for a kernel thread), 40 the rt priority, 41 the policy."""
    fields = ["S", *["0"] * 5, str(irqthreads.PF_KTHREAD if kthread else 0), *["0"] * 30, str(priority), str(policy)]
    return f"{pid} ({comm}) " + " ".join(fields + ["0"] * 10)


@pytest.fixture
def threads(tmp_path, monkeypatch):
    """A fake thread table below tmp_path/root: IRQ 22's thread and its secondary at FIFO 50, IRQ 23's, and a user
    process that named itself like IRQ 22's thread; sched_setscheduler rewrites their stat files (and fails on a
    pid that is not there). Returns (root, the table: pid -> [comm, policy, priority, kthread], the calls)."""
    root = tmp_path / "root"
    table = {
        345: ["irq/22-uio_pci_generic", "fifo", 50, True],
        346: ["irq/22-s-uio_pc", "fifo", 50, True],
        347: ["irq/23-eth0", "fifo", 50, True],
        400: ["irq/22-evil", "other", 0, False],
    }
    calls: list[tuple[int, int, int]] = []

    def write(pid: int) -> None:
        comm, policy, prio, kthread = table[pid]
        (root / f"proc/{pid}").mkdir(parents=True, exist_ok=True)
        (root / f"proc/{pid}/stat").write_text(stat_line(pid, comm, POLICY[policy], prio, kthread))

    def setscheduler(pid: int, policy: int, priority: int) -> None:
        if pid not in table:
            raise ProcessLookupError(3, "No such process")
        calls.append((pid, policy, priority))
        table[pid][1:3] = [{v: k for k, v in POLICY.items()}[policy], priority]
        write(pid)

    for pid in table:
        write(pid)
    monkeypatch.setattr(irqthreads, "_setscheduler", setscheduler)
    return root, table, calls


def test_the_irqs_kernel_threads_are_raised_journaled_first_and_put_back(threads, tmp_path):
    root, table, calls = threads
    state = tmp_path / "changes.json"
    cond = applier.Conditions(root=root, state_path=state)
    seen_before_write = []
    set_real = irqthreads._setscheduler

    def checked(pid, policy, priority):  # the journal holds the thread's setting before it is changed
        saved = json.loads(state.read_text())["changes"]
        seen_before_write.append([(r["pid"], r["comm"], r["before"]) for r in saved if r.get("pid") == pid])
        set_real(pid, policy, priority)

    irqthreads._setscheduler = checked
    records = cond.apply({"irq_threads": [CONDITION]})
    assert [(r["pid"], r["comm"], r["before"], r["after"], r["applied"]) for r in records] == [
        (345, "irq/22-uio_pci_generic", "fifo 50", "fifo 91", True),
        (346, "irq/22-s-uio_pc", "fifo 50", "fifo 91", True),
    ]
    assert seen_before_write == [[(345, "irq/22-uio_pci_generic", "fifo 50")], [(346, "irq/22-s-uio_pc", "fifo 50")]]
    assert table[345][1:3] == ["fifo", 91] and table[346][1:3] == ["fifo", 91]
    assert table[347][1:3] == ["fifo", 50] and table[400][1:3] == ["other", 0], "only IRQ 22's kernel threads"
    assert all(journal.refusal(r, root) is None for r in records)  # rtqual restore would act on them
    actions = cond.restore()
    assert [a["action"] for a in actions] == ["set", "set"]
    assert table[345][1:3] == ["fifo", 50] and table[346][1:3] == ["fifo", 50]
    assert cond.restore() == []  # once


def test_restore_puts_a_killed_runs_threads_back_and_leaves_a_reused_pid_alone(threads, tmp_path):
    """A run killed while the fix held (its journal cut, status running): `rtqual restore` sets each thread back;
    a pid that is no longer that thread (the device unbound, the pid reused) is left alone."""
    root, table, calls = threads
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({"status": "running"}))
    applier.Conditions(root=root, state_path=bundle / journal.CHANGES_FILE).apply({"irq_threads": [CONDITION]})
    table[346][0] = "kworker/1:2"  # 346 is now another thread
    (root / "proc/346/stat").write_text(stat_line(346, "kworker/1:2", 1, 91))
    planned = restore.restore_from_bundle(bundle, dry_run=True, root=root)
    assert [(a["action"], a["value"]) for a in planned] == [("would set", "fifo 50")] * 2
    actions = restore.restore_from_bundle(bundle, root=root)
    assert [a["action"] for a in actions] == ["gone", "set"] and all(a["restored"] for a in actions)
    assert table[345][1:3] == ["fifo", 50] and table[346][1:3] == ["fifo", 91], "the other thread untouched"
    assert restore.restore_from_bundle(bundle, root=root) == []


@pytest.mark.parametrize(
    "change, why",
    [
        ({"comm": "bash"}, "not an IRQ thread's name"),
        ({"before": "fifo 50; reboot"}, "not a policy and priority"),
        ({"before": "deadline 0"}, "not a policy and priority"),
        ({"pid": 1}, "not the /proc folder"),
        ({"knob": "/etc/passwd"}, "not the /proc folder"),
        ({"pid": "345"}, "no pid"),
    ],
)
def test_restore_refuses_an_irq_thread_record_rtqual_never_writes(threads, change, why):
    root = threads[0]
    record = {"knob": str(root / "proc/345"), "kind": "irq-thread", "pid": 345, "comm": "irq/22-uio_pci_generic"}
    record["before"] = "fifo 50"
    assert journal.refusal(record, root) is None
    assert why in journal.refusal(record | change, root)


def test_a_kernel_without_irq_threads_says_the_fix_does_not_apply(tmp_path):
    """A standard kernel without threadirqs runs the handler in the hard interrupt: nothing to raise, nothing
    journaled to undo, the case says why."""
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/1/stat").write_text(stat_line(1, "systemd", 0, 0, kthread=False))
    cond = applier.Conditions(root=tmp_path, state_path=tmp_path / "changes.json")
    [record] = cond.apply({"irq_threads": [CONDITION]})
    assert not record["applied"] and "no irq/22-* thread" in record["reason"] and "does not apply" in record["reason"]
    assert "not applied" in applier.not_applied([record])[0]
    assert cond.restore() == []


# ---------------------------------------------------------------- the finding, its fix line and the A/B plan


def context(input_irqs, comm="irq/22-uio_pci_generic", model="PREEMPT_RT"):
    tasks = [
        {"pid": 345, "tid": 345, "comm": comm, "policy": "fifo", "rt_priority": 50, "cpus": "0-1"},
        {"pid": 347, "tid": 347, "comm": "irq/23-eth0", "policy": "fifo", "rt_priority": 50, "cpus": "0-1"},
    ]
    return hostchecks.Context({"preempt": {"model": model}}, {"rt_tasks": tasks}, [1], 90, None, input_irqs)


def test_the_inputs_irq_thread_is_the_fix_measured_and_its_line_is_built_from_its_pid():
    f = hostchecks.irq_thread_priority(context([22]))
    assert f["knobs"] == [{"irq": 22, "priority": 91}] and advise.measurable([f]) == [f]
    assert "chrt -f -p 91 345;" in f["fix"] and "pgrep" not in f["fix"]
    assert hostchecks.irq_thread_priority(context(None))["knobs"] == []  # no input known: the fix is words only
    hostile = hostchecks.irq_thread_priority(context([22], comm="irq/22-$(reboot)"))
    assert "chrt -f -p 91 345;" in hostile["fix"] and "reboot" not in hostile["fix"]  # the name is never printed
    assert hostchecks.irq_thread_priority(context([22], model="PREEMPT_DYNAMIC")) is None


def test_the_plan_raises_the_irq_threads_in_the_fix_arm_only():
    finding = hostchecks.irq_thread_priority(context([22]))
    base = {"id": "001-ioc", "label": "ioc", "probe": "iocresp", "args": [], "params": {}, "conditions": {}}
    cases = measuring.plan(base, [finding], rounds=2)
    assert [c["advise"]["arm"] for c in cases] == ["baseline", "irq-thread-priority", "irq-thread-priority", "baseline"]
    fixed = [c["conditions"] for c in cases if c["advise"]["arm"] != "baseline"]
    assert all(c["irq_threads"] == [CONDITION] and c["tunables"] == [] for c in fixed)
    assert all("irq_threads" not in c["conditions"] for c in cases if c["advise"]["arm"] == "baseline")


def test_the_cases_input_irq_and_what_advise_says_when_there_is_no_thread(tmp_path):
    assert command.input_irq({"params": {"uio": "/dev/uio0", "irq": 22}}) == 22
    assert command.input_irq({"params": {"input": "uio:/dev/../etc", "irq": None}}) is None
    assert command.input_irq({"params": {"duration_ns": 1}}) is None
    result = {"findings": [], "priority": 90, "cpus": "1"}
    assert "has no irq/22-* thread" in command.input_irq_note(result, {"rt_tasks": []}, 22)
    assert "does not apply" in command.input_irq_note(result, {"rt_tasks": []}, 22)
    rt = {"findings": [hostchecks.irq_thread_priority(context([22]))], "priority": 90, "cpus": "1"}
    assert command.input_irq_note(rt, {}, 22) is None
    with pytest.raises(RtqError, match="--fix governor: not a fix advise can apply"):
        command.fixes_to_measure(rt["findings"], ["governor"])
    assert command.fixes_to_measure(rt["findings"], ["irq-thread-priority"]) == rt["findings"]


def test_a_finding_with_an_irq_knob_passes_the_bundles_door():
    from rtqual.results.bundle import schema

    found: list = []
    f = hostchecks.irq_thread_priority(context([22]))
    assert schema.FINDING(json.loads(json.dumps(f)), "f", found)["knobs"] == [{"irq": 22, "priority": 91}]
    assert found == []

"""Per-case host conditions: CPU governor, fixed frequency, cgroup cpusets, and `rtqual advise --measure`'s
tunables and IRQ thread priorities, applied and restored.

Every change is a record, kept before the knob is touched:

    {"knob": "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "kind": "file",
     "condition": "governor", "cpu": 0, "before": "schedutil", "after": "performance",
     "applied": True}

A condition that cannot be applied gives a record with "applied": False and a "reason"
("no cpufreq on this host", "permission denied", "governor 'x' not available (have: ...)"):
the runner stores the records in the case result and marks the case, so a case is never
silently measured under other conditions. restore() writes every "before" back in reverse
order and marks the record "restored". With a state_path the records are saved (journal.py)
before and after every change, so `rtqual restore BUNDLE` (restore.py) can put the host back after rtqual
itself was killed with SIGKILL; the run seals the journal (its sha256 in the manifest) when it ends.


Governor and frequency are set on every online CPU (cpus=None), as docs/scenario.md
promises: a load on another CPU shares the power and thermal budget, and many boards share
one cpufreq policy between all CPUs anyway. CPUs that share a policy are written once.
Knob paths are the files actually written (below `root`, default "/").
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.measure.conditions import irqthreads, objects
from rtqual.measure.conditions.journal import restore_from_records, write_state
from rtqual.measure.conditions.objects import (
    CPUSET_NAMES,
    Cpuset,
    _reason,
    cpuset_mount,
    enable_cpuset_controller,
    make_cpuset,
)
from rtqual.units import format_cpulist, parse_kernel_cpulist
from rtqual.util import read_text

log = logging.getLogger("rtqual.measure.conditions.applier")


# ---------------------------------------------------------------- small pieces


def _cpufreq_dir(root: Path, cpu: int) -> Path:
    return root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"


def order_min_max(target_khz: int, cur_min_khz: int) -> tuple[str, str]:
    """Order of the scaling_* writes that keeps min <= max after each one.

    Going down below the current min: min first; otherwise max first.
    """
    if target_khz < cur_min_khz:
        return "scaling_min_freq", "scaling_max_freq"
    return "scaling_max_freq", "scaling_min_freq"


def selected_value(text: str | None) -> str | None:
    """The value of a kernel file as it is written back: the selected word of a choice file
    ('always [madvise] never' -> 'madvise'), other text as is."""
    m = re.fullmatch(r"[^\[]*\[([^\]]+)\].*", text or "", re.S)
    return m.group(1) if m else text


def same_value(knob: Path, now: str | None, value: str) -> bool:
    """Whether a kernel file reads back the value written (a hex CPU mask in any width: '1' is '00000001')."""
    if now == value:
        return True
    if knob.name == "cpumask" and now is not None:
        try:
            return int(now.replace(",", ""), 16) == int(value.replace(",", ""), 16)
        except ValueError:
            return False
    return False


def not_applied(records: list[dict]) -> list[str]:
    """One warning line per condition that does not hold, for the case result."""
    out = []
    for r in records:
        if r.get("applied") is False:
            where = f" on cpu{r['cpu']}" if r.get("cpu") is not None else ""
            out.append(
                f"condition {r.get('condition', '?')} ({r.get('after', '?')}) not applied{where}: "
                f"{r.get('reason', 'unknown reason')}; the case ran without it"
            )
    return out


# ---------------------------------------------------------------- applying


class Conditions:
    """Applies one case's conditions and restores them; one object can serve case after case.

    records: every change so far (restored ones marked). cpusets: name -> Cpuset of the
    current case, for the runner's add_pid. state_path: where the records are saved before
    and after each change (the bundle's host/changes.json).
    """

    def __init__(
        self,
        root: str | os.PathLike = "/",
        state_path: str | os.PathLike | None = None,
        cgroup_mount: tuple[Path, int] | None = None,
    ):
        self.root = Path(root)
        self.state_path = Path(state_path) if state_path else None
        self.cgroup_mount = cgroup_mount
        self.records: list[dict] = []
        self.cpusets: dict[str, Cpuset] = {}

    # -- bookkeeping

    def save_state(self, path: str | os.PathLike | None = None) -> None:
        """Save all records to path (default state_path); nothing without a path."""
        path = path or self.state_path
        if path is not None:
            write_state(path, self.records)

    def _note(self, record: dict) -> dict:
        """Keep a record and save it before the change it describes is made."""
        self.records.append(record)
        self.save_state()
        return record

    def note(self, record: dict) -> dict:
        """Journal a change another part makes (the network load's namespace), saved before it is made;
        restore() undoes it unless the maker marked it restored (then call save_state())."""
        return self._note(record)

    def _set(
        self, knob: Path, value: str, condition: str, cpu: int | None, restore: bool = True, kind: str = "file"
    ) -> dict:
        """Write one knob: record (with before, unless restore is False) saved first, then written,
        then read back."""
        before, reason = read_text(knob)
        before = selected_value(before)
        record = {
            "knob": str(knob),
            "kind": kind,
            "condition": condition,
            "cpu": cpu,
            "before": before if restore else None,
            "after": value,
            "applied": True,
        }
        if before is None:
            record.update(applied=False, reason=reason)
            return self._note(record)
        self._note(record)
        try:
            objects._write(knob, value)
        except OSError as e:
            record.update(applied=False, reason=_reason(e))
            if kind == "tunable" and selected_value(read_text(knob)[0]) == before:
                record["restored"] = True  # the kernel refused it (an IRQ it manages): nothing to put back
        else:
            now, _ = read_text(knob)
            if not same_value(knob, selected_value(now), value):
                record.update(applied=False, reason=f"the kernel kept {now!r}")
        self.save_state()
        return record

    # -- cpufreq

    def online_cpus(self) -> list[int]:
        """Online CPUs below root (CPU 0 when the file is missing)."""
        return parse_kernel_cpulist(read_text(self.root / "sys/devices/system/cpu/online")[0]) or [0]

    def _policies(self, cpus: list[int]) -> list[tuple[int, Path | None]]:
        """(cpu, cpufreq dir or None) with CPUs sharing one policy listed once."""
        seen: set[Path] = set()
        out: list[tuple[int, Path | None]] = []
        for cpu in cpus:
            d = _cpufreq_dir(self.root, cpu)
            if not d.is_dir():
                out.append((cpu, None))
                continue
            real = d.resolve()
            if real not in seen:
                seen.add(real)
                out.append((cpu, d))
        return out

    def _cpufreq(self, cond: dict, cpus: list[int]) -> list[dict]:
        governor, khz = cond.get("governor"), cond.get("frequency_khz")
        policies = self._policies(cpus)
        if all(d is None for _, d in policies):
            return [
                self._note(
                    _missing(cond, None, self.root / "sys/devices/system/cpu/cpufreq", "no cpufreq on this host")
                )
            ]
        out = []
        for cpu, d in policies:
            if d is None:
                out.append(self._note(_missing(cond, cpu, _cpufreq_dir(self.root, cpu), f"no cpufreq on cpu{cpu}")))
            else:
                out += self._cpufreq_one(d, cpu, governor, khz)
        return out

    def _cpufreq_one(self, d: Path, cpu: int, governor: str | None, khz: int | None) -> list[dict]:
        """Governor and/or fixed frequency of one cpufreq policy."""
        out = []
        available = (read_text(d / "scaling_available_governors")[0] or "").split()
        if khz is not None and governor is None and "userspace" in available:
            governor, condition = "userspace", "frequency"
        else:
            condition = "governor"
        if governor is not None:
            if available and governor not in available:
                return [
                    self._note(
                        {
                            "knob": str(d / "scaling_governor"),
                            "kind": "file",
                            "condition": condition,
                            "cpu": cpu,
                            "after": governor,
                            "applied": False,
                            "reason": f"governor '{governor}' not available (have: {' '.join(available)})",
                        }
                    )
                ]
            out.append(self._set(d / "scaling_governor", governor, condition, cpu))
            if not out[-1]["applied"]:
                return out
        if khz is None:
            return out
        problem = self._frequency_problem(d, khz)
        if problem:
            return out + [
                self._note(
                    {
                        "knob": str(d / "scaling_max_freq"),
                        "kind": "file",
                        "condition": "frequency",
                        "cpu": cpu,
                        "after": str(khz),
                        "applied": False,
                        "reason": problem,
                    }
                )
            ]
        cur_min = int(read_text(d / "scaling_min_freq")[0] or 0)
        for name in order_min_max(khz, cur_min):
            out.append(self._set(d / name, str(khz), "frequency", cpu))
            if not out[-1]["applied"]:
                return out
        if governor == "userspace" and (d / "scaling_setspeed").exists():
            # reads '<unsupported>' outside userspace: restoring the governor is enough
            out.append(self._set(d / "scaling_setspeed", str(khz), "frequency", cpu, restore=False))
        return out

    def _frequency_problem(self, d: Path, khz: int) -> str | None:
        """Why this policy cannot run at khz exactly (the kernel would clamp or round), or None."""
        lo, _ = read_text(d / "cpuinfo_min_freq")
        hi, _ = read_text(d / "cpuinfo_max_freq")
        if lo and hi and lo.isdigit() and hi.isdigit() and not int(lo) <= khz <= int(hi):
            return f"frequency {khz} kHz outside this CPU's range {lo}-{hi} kHz"
        table, _ = read_text(d / "scaling_available_frequencies")
        if table and str(khz) not in table.split():
            return f"frequency {khz} kHz not available (have: {table})"
        for name in ("scaling_min_freq", "scaling_max_freq"):
            text, reason = read_text(d / name)
            if text is None or not text.isdigit():
                return reason or f"{d / name}: not a number"
        return None

    # -- cpusets

    def _cpusets(self, sets: dict) -> list[dict]:
        """The probe and/or loads cpusets: {"probe": [1], "loads": "0,2-3"}."""
        sets = {
            name: parse_kernel_cpulist(cpus) if isinstance(cpus, str) else sorted(cpus)
            for name, cpus in sets.items()
            if name in CPUSET_NAMES
        }
        out = []
        try:
            mount = self.cgroup_mount or cpuset_mount()
        except RtqError as e:
            return [
                self._note(
                    {
                        "knob": "cpuset",
                        "kind": "cpuset",
                        "condition": f"cpuset.{name}",
                        "after": format_cpulist(sets[name]),
                        "applied": False,
                        "reason": str(e),
                    }
                )
                for name in CPUSET_NAMES
                if name in sets
            ]
        if mount[1] == 2:
            try:
                record = enable_cpuset_controller(mount[0])
            except RtqError as e:
                record = {
                    "knob": str(mount[0] / "cgroup.subtree_control"),
                    "kind": "file",
                    "condition": "cpuset",
                    "after": "+cpuset",
                    "applied": False,
                    "reason": str(e),
                }
            if record is not None:
                out.append(self._note(record))
                if not record["applied"]:
                    return out
        for name in CPUSET_NAMES:
            if name not in sets:
                continue
            cpus = sets[name]
            path = mount[0] / f"rtqual-{os.getpid()}-{name}"
            record = self._note(
                {
                    "knob": str(path),
                    "kind": "cpuset",
                    "condition": f"cpuset.{name}",
                    "before": None,
                    "after": format_cpulist(cpus),
                    "applied": True,
                }
            )
            try:
                self.cpusets[name] = make_cpuset(path.name, cpus, mount)
            except RtqError as e:
                record.update(applied=False, reason=str(e))
            self.save_state()
            out.append(record)
        return out

    # -- the two entry points

    def apply(self, case_conditions: dict, cpus: list[int] | None = None) -> list[dict]:
        """Apply a case's conditions (plan.py keys: governor, frequency_khz, cpuset{probe,loads}; tunables:
        [{"knob": absolute path, "value", "condition"}] from `rtqual advise --measure`, written below root;
        irq_threads: [{"irq", "priority", "condition"}] from it too, the IRQ's kernel threads at SCHED_FIFO priority;
        settle_ns is the runner's). cpus: CPUs whose cpufreq is set (default all online).
        Returns this case's records; the ones with applied False must mark the case."""
        out = []
        if "governor" in case_conditions or "frequency_khz" in case_conditions:
            out += self._cpufreq(case_conditions, self.online_cpus() if cpus is None else list(cpus))
        if case_conditions.get("cpuset"):
            out += self._cpusets(case_conditions["cpuset"])
        for t in case_conditions.get("tunables") or ():
            out.append(
                self._set(self.root / t["knob"].lstrip("/"), str(t["value"]), t["condition"], None, kind="tunable")
            )
        for t in case_conditions.get("irq_threads") or ():
            out += self._irq_threads(int(t["irq"]), int(t["priority"]), t["condition"])
        return out

    def _irq_threads(self, irq: int, priority: int, condition: str) -> list[dict]:
        """SCHED_FIFO priority for every kernel thread of IRQ irq (irq/N-*), each thread's policy and priority
        journaled by pid and comm before the change; none (a kernel that runs the handler in the hard interrupt):
        one record not applied, saying so."""
        after = f"fifo {priority}"
        found = irqthreads.of_irq(irq, self.root)
        if not found:
            reason = (
                f"IRQ {irq} has no irq/{irq}-* thread: this kernel runs its handler in the hard interrupt "
                "(no PREEMPT_RT, no threadirqs), the fix does not apply"
            )
            record = {"knob": str(self.root / "proc"), "kind": "irq-thread", "condition": condition, "irq": irq}
            return [self._note(record | {"after": after, "applied": False, "reason": reason})]
        out = []
        for t in found:
            before = irqthreads.setting(t)
            record = self._note(
                {
                    "knob": t["proc"],
                    "kind": "irq-thread",
                    "condition": condition,
                    "irq": irq,
                    "pid": t["pid"],
                    "comm": t["comm"],
                    "before": before,
                    "after": after,
                    "applied": before is not None,
                }
            )
            out.append(record)
            if before is None:
                record["reason"] = f"{t['comm']} runs under policy {t['policy']}, which rtqual does not write back"
                self.save_state()
                continue
            try:
                irqthreads.apply(t["pid"], after)
            except OSError as e:
                record.update(applied=False, reason=_reason(e))
            now = irqthreads.kernel_thread(Path(t["proc"]))
            now_setting = irqthreads.setting(now) if now else None
            if record["applied"] and now_setting != after:
                record.update(applied=False, reason=f"the kernel kept {now_setting or 'no such thread'}")
            if not record["applied"] and now_setting == before:
                record["restored"] = True  # nothing changed: nothing to put back
            self.save_state()
        return out

    def note_temp(self, path: str | os.PathLike) -> dict:
        """Journal a temp folder the run made (the IOC's FIFOs): removed at the run's end, or by
        `rtqual restore` after a kill."""
        return self._note({"knob": str(path), "kind": "tempdir", "scope": "run", "applied": True})

    def restore(self, final: bool = False) -> list[dict]:
        """Write back every change not yet restored, newest first; errors are in the actions
        (and the log), never raised. Idempotent. Temp folders only when final (the run's end)."""
        actions = restore_from_records(self.records, keep_run_scoped=not final)
        self.cpusets = {}
        if actions:
            self.save_state()
        return actions


def _missing(cond: dict, cpu: int | None, knob: Path, reason: str) -> dict:
    """Not-applied record for a CPU (or host) without cpufreq."""
    parts = []
    if "governor" in cond:
        parts.append(str(cond["governor"]))
    if "frequency_khz" in cond:
        parts.append(f"{cond['frequency_khz']} kHz")
    return {
        "knob": str(knob),
        "kind": "file",
        "condition": "frequency" if "frequency_khz" in cond else "governor",
        "cpu": cpu,
        "after": ", ".join(parts),
        "applied": False,
        "reason": reason,
    }

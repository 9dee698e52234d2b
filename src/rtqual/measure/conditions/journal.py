"""The journal of host changes: every change is a record kept (write + rename) before the knob is touched, with the
boot id and host name it was written under; restore_from_records puts records back in reverse order, and
refusal() says which records `rtqual restore` may act on (only rtqual's own kinds and names).

Kinds: "file" (write "before" back; before None = nothing to write back), "tunable" (a kernel setting
`rtqual advise --measure` changes for a while, written back the same way; TUNABLES lists which), "cpuset" (a cgroup
directory rtqual created: move its tasks to the parent, rmdir), "controller" (cgroup v2
subtree_control: before is "-cpuset"), "netns" and "veth" (a network namespace or veth pair the
network load made: deleted; one already gone counts as removed), "trace-instance" and "mount" (the tracefs
instance of --trace and a private tracefs mount it made: removed, unmounted; gone already counts as removed),
"osnoise" (a global osnoise/ knob or tracing_thresh the osnoise run beside the noise probe set: written back),
"irq-thread" (an IRQ's kernel thread whose policy and priority `rtqual advise --measure` raised: knob its /proc
folder, with pid, comm and the "before" policy and priority, written back while that pid is still that thread)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from rtqual.errors import RtqError
from rtqual.measure.conditions import irqthreads, objects
from rtqual.measure.conditions.objects import CPUSET_NAMES, Cpuset, _reason, remove_net_object
from rtqual.util import read_text, write_text_atomic

STATE_SCHEMA_VERSION = 1
CHANGES_FILE = "host/changes.json"

log = logging.getLogger("rtqual.measure.conditions.journal")


def _undo(record: dict) -> dict:
    """Put one change back; the action taken, never raises."""
    knob, kind = record["knob"], record.get("kind", "file")
    try:
        if kind in ("netns", "veth"):
            remove_net_object(kind, knob)
            log.info("removed %s %s", kind, knob)
            return {"knob": knob, "action": "removed", "restored": True}
        if kind in ("trace-instance", "mount"):  # rtqual's tracefs instance (--trace), a private tracefs mount
            from rtqual.measure.host import trace

            trace.remove_instance(knob) if kind == "trace-instance" else trace.unmount(knob)
            log.info("removed %s %s", kind, knob)
            return {"knob": knob, "action": "removed", "restored": True}
        if kind == "tempdir":
            if os.path.islink(knob):
                raise RtqError("a symbolic link, not a folder rtqual made: left alone")
            shutil.rmtree(knob, ignore_errors=True)
            if os.path.lexists(knob):
                raise RtqError("could not remove it")
            log.info("removed temp folder %s", knob)
            return {"knob": knob, "action": "removed", "restored": True}
        if kind == "irq-thread":
            action = irqthreads.put_back(record)
            log.info("%s %s %s", action["action"], knob, record["before"])
            return action
        if kind == "cpuset":
            Cpuset(knob).remove()
            log.info("removed cpuset %s", knob)
            return {"knob": knob, "action": "removed", "restored": True}
        objects._write(knob, str(record["before"]))
        log.info("restored %s = %s", knob, record["before"])
        return {"knob": knob, "action": "wrote", "value": record["before"], "restored": True}
    except (OSError, RtqError, ValueError) as e:
        reason = _reason(e) if isinstance(e, OSError) else str(e)
        log.warning("could not restore %s: %s", knob, reason)
        return {"knob": knob, "restored": False, "reason": reason}


def _needs_undo(record: dict) -> bool:
    """Whether a record changed something that is not put back yet.

    A record is saved before its write, so one with applied False may still have written
    (e.g. the kernel kept another value): anything with a "before" is written back.
    """
    if record.get("restored"):
        return False
    if record.get("kind") in ("cpuset", "netns", "veth", "tempdir", "trace-instance", "mount"):
        return record.get("applied") is True
    return record.get("before") is not None


def restore_from_records(records: list[dict], keep_run_scoped: bool = False) -> list[dict]:
    """Undo every change not yet restored, newest first; marks each record restored (in place)
    and returns the actions, failures included. Safe to call again. keep_run_scoped: leave the
    records that live as long as the run (temp folders) for the run's end."""
    actions = []
    for record in reversed(records):
        if not _needs_undo(record) or (keep_run_scoped and record.get("scope") == "run"):
            continue
        action = _undo(record)
        record["restored"] = action["restored"]
        actions.append(action)
    return actions


def host_identity() -> dict:
    """This machine and boot, as the journal records them: a journal is only ever restored where it was written."""
    boot_id, _ = read_text(BOOT_ID_FILE)
    return {"boot_id": boot_id, "hostname": socket.gethostname()}


def write_state(path: str | os.PathLike, records: list[dict], pid: int | None = None) -> None:
    """Write the change records atomically (write + rename), so a kill never leaves half a file; with this
    machine's boot id and host name, which `rtqual restore` checks."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "schema_version": STATE_SCHEMA_VERSION,
        "pid": os.getpid() if pid is None else pid,
        **host_identity(),
        "changes": records,
    }
    write_text_atomic(path, json.dumps(state, indent=1) + "\n")


# ---------------------------------------------------------------- what `rtqual restore` may act on
#
# A bundle travels: its journal is someone else's input, and restore runs as root. It acts only on what rtqual
# itself changes (docs/bundle.md "Restoring after a kill"), each kind under rtqual's own names. The writers:
#   file        Conditions._set from _cpufreq_one: cpufreq files of a CPU (the values they held before)
#   controller  enable_cpuset_controller: cgroup.subtree_control of the cgroup v2 root, before "-cpuset"
#   cpuset      Conditions._cpusets: ROOT/rtqual-<pid>-probe|loads right below a cpuset hierarchy's root
#   netns, veth loads/network.py _make_path: namespace rtqual-<pid>n<K>, veth rq<pid>n<K>h
#   trace-instance, mount   trace.py Tracer: TRACEFS/instances/rtqual-<pid>-<n>, TMP/rtqual-tracefs-<pid>-XXXXXXXX
#   tempdir     run.py note_temp of a service's temp_paths (epics/ioc.py TEMP_PREFIX); the monitor's folder
#   tunable     Conditions.apply from a case's "tunables" (rtqual advise --measure): the files of TUNABLES
#   osnoise     osnoise.py Knobs (the osnoise run beside the noise probe): TRACEFS/osnoise/KNOB, tracing_thresh
#   irq-thread  Conditions.apply from a case's "irq_threads" (rtqual advise --measure): ROOT/proc/PID of an irq/N-*
#               kernel thread, its comm and policy and priority before

CPUFREQ_VALUES = {  # cpufreq file -> the shape of the value written back
    "scaling_governor": re.compile(r"[A-Za-z0-9_-]{1,32}"),
    "scaling_min_freq": re.compile(r"[0-9]{1,12}"),
    "scaling_max_freq": re.compile(r"[0-9]{1,12}"),
}
CPUFREQ_KNOB = re.compile(r"sys/devices/system/cpu/cpu[0-9]{1,5}/cpufreq/([a-z_]+)")  # below root
NAMES = {
    "cpuset": re.compile(r"rtqual-[0-9]{1,10}-(?:" + "|".join(CPUSET_NAMES) + ")"),
    "netns": re.compile(r"rtqual-[0-9]{1,10}n[0-9]{1,3}"),
    "veth": re.compile(r"rq[0-9]{1,10}n[0-9]{1,3}h"),
    "trace-instance": re.compile(r"rtqual-[0-9]{1,10}-[0-9]{1,10}"),
    "mount": re.compile(r"rtqual-tracefs-(?:[0-9]{1,10}-)?[A-Za-z0-9_]{1,32}"),
    "tempdir": re.compile(r"(?:rtqual-ioc-|rtqual-monitor-)[0-9]{1,10}-[A-Za-z0-9_]{1,32}"),
}
TUNABLES = {  # file below root that `rtqual advise --measure` sets for a while -> the shape of the value written back
    re.compile(r"proc/sys/kernel/sched_rt_runtime_us"): re.compile(r"-?[0-9]{1,10}"),
    re.compile(r"proc/sys/kernel/(?:timer_migration|watchdog|numa_balancing)"): re.compile(r"[0-9]{1,3}"),
    re.compile(r"sys/kernel/mm/transparent_hugepage/enabled"): re.compile(r"always|madvise|never"),
    re.compile(r"sys/kernel/mm/ksm/run"): re.compile(r"[0-2]"),
    re.compile(r"sys/devices/system/cpu/(?:cpufreq/boost|intel_pstate/no_turbo)"): re.compile(r"[01]"),
    re.compile(r"sys/devices/system/cpu/cpu[0-9]{1,5}/cpuidle/state[0-9]{1,3}/disable"): re.compile(r"[01]"),
    re.compile(r"sys/devices/system/cpu/cpu[0-9]{1,5}/cpufreq/scaling_governor"): re.compile(r"[A-Za-z0-9_-]{1,32}"),
    re.compile(r"proc/irq/[0-9]{1,6}/smp_affinity_list"): re.compile(r"[0-9,-]{1,1024}"),
    re.compile(r"sys/devices/virtual/workqueue/cpumask"): re.compile(r"[0-9a-fA-F,]{1,1024}"),
    re.compile(r"sys/devices/system/clocksource/clocksource0/current_clocksource"): re.compile(r"[a-z0-9_-]{1,32}"),
}
OSNOISE_KNOBS = {  # tracefs file (osnoise/ knobs, the top-level tracing_thresh) -> the shape of the value written back
    "osnoise/cpus": re.compile(r"[0-9,-]{1,1024}"),
    **{f"osnoise/{n}": re.compile(r"[0-9]{1,12}") for n in ("period_us", "runtime_us", "stop_tracing_us")},
    "osnoise/stop_tracing_total_us": re.compile(r"[0-9]{1,12}"),
    "osnoise/options": re.compile(r"(NO_)?OSNOISE_IRQ_DISABLE"),  # --hw's one option (osnoise.Knobs.option)
    "tracing_thresh": re.compile(r"[0-9]{1,12}"),
}
KINDS = {"file", "tunable", "controller", "osnoise", "irq-thread", *NAMES}
JOURNAL_MAX_BYTES = 16 << 20  # about 80 000 records: far more than any run writes
MANIFEST_MAX_BYTES = 64 << 20
JSON_MAX_DEPTH = 8  # a journal is 3 deep (state, changes, record)
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


def _mount_points(mounts_text: str, fstypes: set[str], option: str | None = None) -> set[Path]:
    """Mount points of the given file system types in /proc/self/mounts text (with option, when given)."""
    out = set()
    for f in map(str.split, mounts_text.splitlines()):
        if len(f) > 3 and f[2] in fstypes and (option is None or option in f[3].split(",")):
            out.add(Path(f[1]))
    return out


def _in_temp_dir(path: Path) -> bool:
    """Whether path is right inside the temp folder (tempfile.gettempdir(), where mkdtemp makes rtqual's)."""
    return os.path.realpath(path.parent) == os.path.realpath(tempfile.gettempdir())


def record_shape_problem(record: Any) -> str | None:
    """Why a journal record does not have the shape rtqual writes (a dict with a string knob, known kind,
    string or null before, boolean flags), or None."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not a record"
    knob = record.get("knob")
    if not isinstance(knob, str) or not knob or len(knob) > 4096 or "\x00" in knob:
        return "no 'knob' string"
    kind = record.get("kind", "file")
    if not isinstance(kind, str) or kind not in KINDS:
        return f"unknown kind {str(record.get('kind'))[:40]!r}"
    if record.get("before") is not None and not isinstance(record["before"], str):
        return "'before' is not a string"
    for flag in ("applied", "restored"):
        if record.get(flag) is not None and not isinstance(record[flag], bool):
            return f"'{flag}' is not true or false"
    return None


def refusal(record: dict, root: Path = Path("/"), mounts_text: str | None = None) -> str | None:
    """Why `rtqual restore` must not act on this (well-shaped) record: it names something rtqual never
    changes, or not under rtqual's own names; None when it is rtqual's. root: "/" (tests: a fake sysfs tree)."""
    knob, kind = record["knob"], record.get("kind", "file")
    if kind in ("netns", "veth"):
        return None if NAMES[kind].fullmatch(knob) else f"{kind} {knob!r} is not one rtqual makes"
    path = Path(knob)
    if not path.is_absolute() or os.path.normpath(knob) != knob:
        return f"{knob!r} is not a plain absolute path"
    if mounts_text is None:
        mounts_text = read_text("/proc/self/mounts")[0] or ""
    if kind == "file":
        m = CPUFREQ_KNOB.fullmatch(os.path.relpath(knob, root)) if knob.startswith(str(root)) else None
        shape = CPUFREQ_VALUES.get(m.group(1)) if m else None
        if shape is None:
            return f"{knob} is not a cpufreq file rtqual sets"
        if not shape.fullmatch(record.get("before") or ""):
            return f"{knob}: {str(record.get('before'))[:40]!r} is not a value rtqual writes back there"
        cpu_dir = os.path.realpath(root / "sys/devices/system/cpu")
        return None if os.path.realpath(knob).startswith(cpu_dir + "/") else f"{knob} leads out of {cpu_dir}"
    if kind == "tunable":
        return tunable_refusal(knob, record.get("before"), root)
    if kind == "osnoise":
        return osnoise_refusal(path, record.get("before"), mounts_text)
    if kind == "irq-thread":
        return irq_thread_refusal(record, root)
    if kind == "controller":
        roots = _mount_points(mounts_text, {"cgroup2"})
        if path.name != "cgroup.subtree_control" or path.parent not in roots or record.get("before") != "-cpuset":
            return f"{knob}: not the cgroup v2 root's cpuset controller rtqual enables"
        return None
    if not NAMES[kind].fullmatch(path.name):
        return f"{kind} {knob} is not named as rtqual names its own"
    if os.path.islink(knob):
        return f"{kind} {knob} is a symbolic link"
    if kind == "cpuset":
        roots = _mount_points(mounts_text, {"cgroup2"}) | _mount_points(mounts_text, {"cgroup"}, "cpuset")
        return None if path.parent in roots else f"cpuset {knob} is not right below a cgroup cpuset hierarchy"
    if kind == "trace-instance":
        roots = _tracefs_roots(mounts_text)
        return None if path.parent.name == "instances" and path.parent.parent in roots else f"{knob}: not in a tracefs"
    return None if _in_temp_dir(path) else f"{kind} {knob} is not in the temp folder {tempfile.gettempdir()}"


def _tracefs_roots(mounts_text: str) -> set[Path]:
    """The mounted tracefs roots, and the one a run was told to use (trace.TRACEFS_ENV)."""
    forced = os.environ.get("RTQUAL_TRACEFS")
    return _mount_points(mounts_text, {"tracefs"}) | ({Path(forced)} if forced else set())


def osnoise_refusal(path: Path, before: Any, mounts_text: str) -> str | None:
    """Why an "osnoise" record is none the osnoise run writes: not one of OSNOISE_KNOBS right in a mounted
    tracefs, or its value not of that knob's shape; None when it is."""
    roots = _tracefs_roots(mounts_text)
    root = next((r for r in roots if str(path).startswith(str(r) + "/")), None)
    shape = OSNOISE_KNOBS.get(os.path.relpath(path, root)) if root is not None else None
    if shape is None:
        return f"{path} is not an osnoise knob of a mounted tracefs"
    if not shape.fullmatch(before or ""):
        return f"{path}: {str(before)[:40]!r} is not a value rtqual writes back there"
    return None if not os.path.islink(path) else f"{path} is a symbolic link"


def tunable_refusal(knob: str, before: Any, root: Path) -> str | None:
    """Why a "tunable" record is none `rtqual advise --measure` writes: its file not in TUNABLES below root,
    its value not of that file's shape, or the path leading out of root's /proc and /sys; None when it is."""
    rel = os.path.relpath(knob, root) if knob.startswith(str(root)) else None
    shape = next((v for k, v in TUNABLES.items() if rel is not None and k.fullmatch(rel)), None)
    if shape is None:
        return f"{knob} is not a setting rtqual advise changes"
    if not shape.fullmatch(before or ""):
        return f"{knob}: {str(before)[:40]!r} is not a value rtqual writes back there"
    trees = [os.path.realpath(root / name) + "/" for name in ("proc", "sys")]
    real = os.path.realpath(knob)
    return None if any(real.startswith(t) for t in trees) else f"{knob} leads out of {root}'s /proc and /sys"


def irq_thread_refusal(record: dict, root: Path) -> str | None:
    """Why an "irq-thread" record is none `rtqual advise --measure` writes: its knob not root's /proc/PID of the
    record's pid, its comm not an IRQ thread's, or its "before" not a policy and priority rtqual writes back."""
    knob, pid = record["knob"], record.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= 4_194_304:
        return f"{knob}: no pid"
    if knob != str(root / "proc" / str(pid)) or os.path.islink(knob):
        return f"{knob} is not the /proc folder of pid {pid}"
    comm = record.get("comm")
    if not isinstance(comm, str) or not irqthreads.IRQ_THREAD.fullmatch(comm):
        return f"{knob}: {str(comm)[:40]!r} is not an IRQ thread's name"
    if not irqthreads.SETTING.fullmatch(record.get("before") or ""):
        return f"{knob}: {str(record.get('before'))[:40]!r} is not a policy and priority rtqual writes back"
    return None

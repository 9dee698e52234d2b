"""Per-case host conditions: CPU governor, fixed frequency and cgroup cpusets, applied and restored.

Every change is a record, kept before the knob is touched:

    {"knob": "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "kind": "file",
     "condition": "governor", "cpu": 0, "before": "schedutil", "after": "performance",
     "applied": True}

A condition that cannot be applied gives a record with "applied": False and a "reason"
("no cpufreq on this host", "permission denied", "governor 'x' not available (have: ...)"):
the runner stores the records in the case result and marks the case, so a case is never
silently measured under other conditions. restore() writes every "before" back in reverse
order and marks the record "restored". With a state_path the records are saved (write +
rename) before and after every change, so `rtqual restore BUNDLE` (restore_from_bundle) can
put the host back after rtqual itself was killed with SIGKILL. The journal carries the boot id and host
name it was written under, and the run seals it (its sha256 in the manifest) when it ends. Restore treats it
as someone else's input: it acts only on a journal of this host and boot, sealed or cut by a kill, whose
records to undo are all kinds and names rtqual makes (refusal); otherwise one line and nothing touched.

Kinds: "file" (write "before" back; before None = nothing to write back), "tunable" (a kernel setting
`rtqual advise --measure` changes for a while, written back the same way; TUNABLES lists which), "cpuset" (a cgroup
directory rtqual created: move its tasks to the parent, rmdir), "controller" (cgroup v2
subtree_control: before is "-cpuset"), "netns" and "veth" (a network namespace or veth pair the
network load made: deleted; one already gone counts as removed), "trace-instance" and "mount" (the tracefs
instance of --trace and a private tracefs mount it made: removed, unmounted; gone already counts as removed),
"osnoise" (a global osnoise/ knob or tracing_thresh the osnoise run beside the noise probe set: written back).

Governor and frequency are set on every online CPU (cpus=None), as docs/scenario.md
promises: a load on another CPU shares the power and thermal budget, and many boards share
one cpufreq policy between all CPUs anyway. CPUs that share a policy are written once.
Knob paths are the files actually written (below `root`, default "/").
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from rtqual.errors import RtqError
from rtqual.results.bundle import files
from rtqual.units import format_cpulist, parse_kernel_cpulist
from rtqual.util import read_text, write_text_atomic

STATE_SCHEMA_VERSION = 1
CHANGES_FILE = "host/changes.json"
CPUSET_NAMES = ("probe", "loads")
_RMDIR_TRIES = 20
_RMDIR_WAIT_S = 0.05

log = logging.getLogger("rtqual.measure.conditions")


# ---------------------------------------------------------------- small pieces


def _reason(e: OSError) -> str:
    """Short reason of a failed sysfs/cgroup write."""
    if isinstance(e, PermissionError) or e.errno in (errno.EPERM, errno.EACCES):
        return "permission denied"
    if e.errno == errno.EROFS:
        return "read-only file system"
    return e.strerror or str(e)


def _write(path: str | os.PathLike, value: str) -> None:
    """Write one value to a kernel file (one write call, as sysfs wants)."""
    with open(path, "w") as f:
        f.write(value)


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


# ---------------------------------------------------------------- cgroup cpusets


def find_cpuset_mount(mounts_text: str) -> tuple[Path, int] | None:
    """(mount point, cgroup version) of the cpuset hierarchy in /proc/self/mounts text, or None.

    v2 counts only when its root lists cpuset in cgroup.controllers (on a hybrid host cpuset
    may be bound to v1 instead); v1 is a `cgroup` mount with the cpuset option.
    """
    v1 = v2 = None
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point, fstype, options = fields[1], fields[2], fields[3].split(",")
        if fstype == "cgroup" and "cpuset" in options and v1 is None:
            v1 = Path(point)
        elif fstype == "cgroup2" and v2 is None:
            controllers, _ = read_text(Path(point) / "cgroup.controllers")
            if controllers and "cpuset" in controllers.split():
                v2 = Path(point)
    if v2 is not None:
        return v2, 2
    if v1 is not None:
        return v1, 1
    return None


def cpuset_mount() -> tuple[Path, int]:
    """The live cpuset hierarchy, or RtqError saying none is mounted."""
    text, reason = read_text("/proc/self/mounts")
    found = find_cpuset_mount(text or "")
    if found is None:
        raise RtqError(
            "cpuset: no cgroup cpuset hierarchy mounted (need cgroup v2 with the cpuset "
            "controller, or v1 mounted with -o cpuset)" + (f": {reason}" if reason else "")
        )
    return found


class Cpuset:
    """A cgroup cpuset directory rtqual created; remove() puts its tasks back in the parent."""

    def __init__(self, path: str | os.PathLike, version: int = 0):
        self.path = Path(path)
        self.version = version

    def __repr__(self) -> str:
        return f"Cpuset({str(self.path)!r}, v{self.version})"

    def cpus(self) -> list[int] | None:
        """CPUs of the set as the kernel reads them back."""
        text, _ = read_text(self.path / "cpuset.cpus")
        return parse_kernel_cpulist(text)

    def pids(self) -> list[int]:
        """Processes in the set (empty when the directory is gone)."""
        text, _ = read_text(self.path / "cgroup.procs")
        return [int(x) for x in (text or "").split()]

    def add_pid(self, pid: int) -> None:
        """Move a process (all its threads) into the set; the kernel narrows its affinity to the set.

        Pin threads (sched_setaffinity) after this, not before: joining a v1 cpuset resets affinity.
        """
        try:
            _write(self.path / "cgroup.procs", str(pid))
        except OSError as e:
            raise RtqError(f"cpuset {self.path}: cannot add pid {pid}: {_reason(e)}") from None

    def remove(self) -> None:
        """Move remaining tasks to the parent, then rmdir; nothing to do when already gone."""
        if not self.path.exists():
            return
        parent_procs = self.path.parent / "cgroup.procs"
        last = ""
        for _ in range(_RMDIR_TRIES):
            for pid in self.pids():
                try:
                    _write(parent_procs, str(pid))
                except OSError as e:
                    if e.errno != errno.ESRCH:
                        last = f"cannot move pid {pid} to {self.path.parent}: {_reason(e)}"
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                last = last or _reason(e)
                time.sleep(_RMDIR_WAIT_S)  # exiting tasks leave the set a moment later
        raise RtqError(f"cpuset {self.path}: cannot remove: {last}")


def enable_cpuset_controller(mount: Path) -> dict | None:
    """cgroup v2: enable +cpuset in the mount root's subtree_control when it is not; the change
    record (before '-cpuset', so restoring disables it again), or None when already enabled."""
    knob = mount / "cgroup.subtree_control"
    text, reason = read_text(knob)
    if text is None:
        raise RtqError(f"cpuset: {reason}")
    if "cpuset" in text.split():
        return None
    try:
        _write(knob, "+cpuset")
    except OSError as e:
        raise RtqError(f"cpuset: cannot enable the cpuset controller in {knob}: {_reason(e)}") from None
    return {
        "knob": str(knob),
        "kind": "controller",
        "condition": "cpuset",
        "before": "-cpuset",
        "after": "+cpuset",
        "applied": True,
    }


def make_cpuset(name: str, cpus: list[int], mount: tuple[Path, int] | None = None) -> Cpuset:
    """Create cgroup cpuset `name` (e.g. 'rtqual-123-probe') right below the hierarchy root.

    cpuset.mems is copied from the parent. mount: (path, version) as find_cpuset_mount gives
    (default: the live one). On cgroup v2 the cpuset controller must already be enabled in the
    root's subtree_control (enable_cpuset_controller). RtqError with the reason on failure,
    and nothing left behind.
    """
    root, version = mount or cpuset_mount()
    if not cpus:
        raise RtqError(f"cpuset {name}: empty CPU list")
    parent_cpus_file = "cpuset.cpus" if version == 1 else "cpuset.cpus.effective"
    parent_cpus = parse_kernel_cpulist(read_text(root / parent_cpus_file)[0])
    if parent_cpus is not None and not set(cpus) <= set(parent_cpus):
        raise RtqError(
            f"cpuset {name}: CPU {format_cpulist(sorted(set(cpus) - set(parent_cpus)))} "
            f"not in the parent cpuset ({format_cpulist(parent_cpus)})"
        )
    mems = None
    for mems_file in ("cpuset.mems", "cpuset.mems.effective"):
        mems, _ = read_text(root / mems_file)
        if mems:
            break
    path = root / name
    try:
        path.mkdir()
    except OSError as e:
        raise RtqError(f"cpuset {name}: cannot create {path}: {_reason(e)}") from None
    cpuset = Cpuset(path, version)
    try:
        _write(path / "cpuset.cpus", format_cpulist(cpus))
        if mems:
            _write(path / "cpuset.mems", mems)
    except OSError as e:
        try:
            cpuset.remove()
        except RtqError:
            pass
        raise RtqError(f"cpuset {name}: cannot set CPUs {format_cpulist(cpus)} in {path}: {_reason(e)}") from None
    return cpuset


# ---------------------------------------------------------------- restoring records


def _ip(*args: str) -> tuple[int, str]:
    """Run `ip ARGS`: (exit code, its error text); 127 when iproute2 is missing."""
    try:
        p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, p.stderr.strip()


def remove_net_object(kind: str, name: str) -> None:
    """Delete a network namespace ("netns") or a veth pair by one end ("veth"); absent is fine,
    any other failure is RtqError."""
    exists = name in net_objects(kind)
    if not exists:
        return
    rc, err = _ip("netns", "delete", name) if kind == "netns" else _ip("link", "delete", name)
    if rc != 0 and name in net_objects(kind):
        raise RtqError(f"cannot delete {kind} {name}: {err}")


def net_objects(kind: str) -> list[str]:
    """Names of the network namespaces ("netns") or links ("veth") on this host."""
    if kind == "netns":
        try:
            return sorted(os.listdir("/run/netns"))
        except OSError:
            return []
    try:
        return sorted(os.listdir("/sys/class/net"))
    except OSError:
        return []


def _undo(record: dict) -> dict:
    """Put one change back; the action taken, never raises."""
    knob, kind = record["knob"], record.get("kind", "file")
    try:
        if kind in ("netns", "veth"):
            remove_net_object(kind, knob)
            log.info("removed %s %s", kind, knob)
            return {"knob": knob, "action": "removed", "restored": True}
        if kind in ("trace-instance", "mount"):  # rtqual's tracefs instance (--trace), a private tracefs mount
            from rtqual.measure import trace

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
        if kind == "cpuset":
            Cpuset(knob).remove()
            log.info("removed cpuset %s", knob)
            return {"knob": knob, "action": "removed", "restored": True}
        _write(knob, str(record["before"]))
        log.info("restored %s = %s", knob, record["before"])
        return {"knob": knob, "action": "wrote", "value": record["before"], "restored": True}
    except (OSError, RtqError) as e:
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
#   trace-instance, mount   trace.py Tracer: TRACEFS/instances/rtqual-<pid>-<n>, TMP/rtqual-tracefs-XXXXXXXX
#   tempdir     run.py note_temp of a service's temp_paths (epics/ioc.py TEMP_PREFIX); the monitor's folder
#   tunable     Conditions.apply from a case's "tunables" (rtqual advise --measure): the files of TUNABLES
#   osnoise     osnoise.py Knobs (the osnoise run beside the noise probe): TRACEFS/osnoise/KNOB, tracing_thresh

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
    "mount": re.compile(r"rtqual-tracefs-[A-Za-z0-9_]{1,32}"),
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
    "tracing_thresh": re.compile(r"[0-9]{1,12}"),
}
KINDS = {"file", "tunable", "controller", "osnoise", *NAMES}
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


# ---------------------------------------------------------------- reading a bundle's journal safely


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file that is no symbolic link, at most max_bytes, read by the bundle's one reader
    (rtqual.results.bundle.files: never blocks on a FIFO or device, never reads /dev/zero forever); RtqError
    saying why not."""
    try:
        return files.read_bytes(path.parent, path.name, max_bytes)
    except files.Refused as e:
        raise RtqError(f"{path}: {e}: refused") from None
    except OSError as e:
        raise RtqError(f"{path}: {e.strerror or e}") from None


def parse_json(path: Path, data: bytes, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """JSON text of a bundle file, its nesting limited (parsing recurses); RtqError if bad."""
    try:
        return files.parse_json(data, max_depth)
    except files.Refused as e:
        raise RtqError(f"{path}: {e}: not one rtqual wrote, refused") from None
    except ValueError as e:
        raise RtqError(f"{path}: not JSON ({e})") from None


def load_state(path: str | os.PathLike, data: bytes | None = None) -> dict:
    """The changes file written by Conditions (its bytes: data, or read safely: regular file, size cap), its
    depth and shape checked; RtqError when unreadable or not of the shape rtqual writes."""
    path = Path(path)
    state = parse_json(path, read_capped(path, JOURNAL_MAX_BYTES) if data is None else data)
    if not isinstance(state, dict) or not isinstance(state.get("changes"), list):
        raise RtqError(f"{path}: no 'changes' list: not an rtqual changes file")
    for i, record in enumerate(state["changes"]):
        problem = record_shape_problem(record)
        if problem:
            raise RtqError(f"{path}: record {i + 1}: {problem}: refused, nothing restored")
    return state


def _journal_path(bundle: Path) -> Path | None:
    """BUNDLE/host/changes.json, or None when the bundle has none; RtqError when the bundle is no folder or a
    folder on the way (host/) or the journal is a symbolic link (it would lead restore elsewhere)."""
    if not bundle.is_dir():
        raise RtqError(f"{bundle}: {'no such bundle' if not os.path.lexists(bundle) else 'not a bundle folder'}")
    path = bundle
    for part in Path(CHANGES_FILE).parts:
        path = path / part
        if os.path.islink(str(path)):
            raise RtqError(f"{path}: a symbolic link: refused, nothing restored")
        if not os.path.lexists(path):
            return None
    return path


def _check_sealed(bundle: Path, journal: bytes) -> str | None:
    """The journal's sha256 from the manifest when the run sealed it (it must match: RtqError otherwise), or
    None when the run was cut (status running: a kill came before the seal, what restore exists for)."""
    path = bundle / "manifest.json"
    if not os.path.lexists(path):
        raise RtqError(f"{bundle}: no manifest.json: not an rtqual bundle, journal refused")
    manifest = parse_json(path, read_capped(path, MANIFEST_MAX_BYTES), max_depth=64)
    sums = manifest.get("checksums") if isinstance(manifest, dict) else None
    digest = sums.get(CHANGES_FILE) if isinstance(sums, dict) else None
    if digest is not None:
        if digest != hashlib.sha256(journal).hexdigest():
            raise RtqError(f"{bundle}/{CHANGES_FILE}: damaged (sha256 differs from the manifest's): refused")
        return digest
    status = manifest.get("status") if isinstance(manifest, dict) else None
    if status != "running":
        raise RtqError(
            f"{bundle}/{CHANGES_FILE}: no checksum although the run ended (status {str(status)[:20]}): "
            "not sealed by rtqual, refused"
        )
    return None


def _check_origin(path: Path, state: dict) -> None:
    """RtqError unless the journal was written on this host in this boot (what it names exists only there)."""
    here = host_identity()
    if "boot_id" not in state or "hostname" not in state:
        raise RtqError(
            f"{path}: no boot id or host name (written by an older rtqual): cannot tell it is from this "
            "boot, refused (undo its records by hand if needed)"
        )
    if state["hostname"] != here["hostname"]:
        raise RtqError(f"{path}: written on host {str(state['hostname'])[:64]!r}, not this one: refused")
    if state["boot_id"] != here["boot_id"]:
        raise RtqError(f"{path}: written in another boot of this host: nothing of it is left, refused")


def _write_back(bundle: Path, path: Path, state: dict, sealed: bool) -> None:
    """Save the journal with its records marked restored (the tmp file made anew, never followed: a planted
    link cannot redirect it); a sealed journal gets its new checksum in the manifest."""
    text = json.dumps(state, indent=1) + "\n"
    _replace_file(path, text)
    if sealed:
        manifest_path = bundle / "manifest.json"
        manifest = parse_json(manifest_path, read_capped(manifest_path, MANIFEST_MAX_BYTES), max_depth=64)
        manifest["checksums"][CHANGES_FILE] = hashlib.sha256(text.encode()).hexdigest()
        _replace_file(manifest_path, json.dumps(manifest, indent=1) + "\n")


def _replace_file(path: Path, text: str) -> None:
    """Atomic write + rename through a fresh temp file created with O_EXCL|O_NOFOLLOW."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _planned(record: dict) -> dict:
    """What undoing a record would do, for --dry-run."""
    if record.get("kind", "file") in ("file", "tunable", "controller"):
        return {"knob": record["knob"], "action": "would write", "value": record["before"]}
    return {"knob": record["knob"], "action": f"would remove {record.get('kind')}"}


def _checked(bundle: Path, root: Path) -> tuple[Path, dict, bool, list[dict]] | None:
    """Every check restore makes before it acts: (journal path, state, sealed, records to undo), or None when
    the bundle has no journal; RtqError naming the first problem."""
    path = _journal_path(bundle)
    if path is None:
        return None
    data = read_capped(path, JOURNAL_MAX_BYTES)
    state = load_state(path, data)
    sealed = _check_sealed(bundle, data) is not None
    _check_origin(path, state)
    todo = [r for r in state["changes"] if _needs_undo(r)]
    mounts_text = read_text("/proc/self/mounts")[0] or ""
    for record in todo:
        why = refusal(record, root, mounts_text)
        if why:
            raise RtqError(f"{path}: {why}: refused, nothing restored")
    return path, state, sealed, todo


def _one_line(text: str, limit: int = 400) -> str:
    """A message as one printable line (names from a journal may hold newlines or escapes)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def restore_from_bundle(
    bundle_path: str | os.PathLike, dry_run: bool = False, root: str | os.PathLike = "/"
) -> list[dict]:
    """`rtqual restore BUNDLE`: undo what a killed run left changed; the file is updated so a second call
    does nothing. A bundle without host/changes.json changed nothing: []. Every check comes before any action
    (one-line RtqError, nothing touched): no symbolic link on the journal's way, a regular file of bounded
    size and depth, sealed by its checksum or cut by a kill, written on this host in this boot, and each record
    to undo one rtqual makes (refusal). dry_run: the actions it would take, nothing changed. root: "/" (tests:
    a fake sysfs tree)."""
    bundle = Path(bundle_path)
    try:
        checked = _checked(bundle, Path(root))
    except RtqError as e:
        raise RtqError(_one_line(str(e))) from None
    if checked is None:
        return []
    path, state, sealed, todo = checked
    if dry_run:
        return [_planned(r) for r in reversed(todo)]
    actions = restore_from_records(state["changes"])
    if actions:
        _write_back(bundle, path, state, sealed)
    return actions


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
            _write(knob, value)
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

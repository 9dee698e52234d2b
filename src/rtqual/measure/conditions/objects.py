"""The kernel objects rtqual makes for a case and removes after it: cgroup cpusets (the probe's and the loads'
CPUs) and, for the network load, network namespaces and veth pairs."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import time
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.units import format_cpulist, parse_kernel_cpulist
from rtqual.util import read_text

CPUSET_NAMES = ("probe", "loads")
_RMDIR_TRIES = 20
_RMDIR_WAIT_S = 0.05

log = logging.getLogger("rtqual.measure.conditions.objects")


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

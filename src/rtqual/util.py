"""Small shared helpers for kernel files, atomic writes and capabilities (values with units: rtqual.units).

One copy of each: host facts, conditions, the bundle and the loads all use these.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from rtqual.errors import RtqError

CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23
"""Capability bit numbers (linux/capability.h) that real-time runs need."""


SYSTEM_TREES = ("/proc", "/sys", "/dev")
"""Kernel and device trees: a file written there changes the running system, it is never a result."""


def system_tree(path: str | os.PathLike) -> str | None:
    """The kernel or device tree (/proc, /sys, /dev) an output path lies in once symlinks are followed, or
    None: rtqual refuses to write results there (a scenario or option from someone else could name one)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    for tree in SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return tree
    return None


def outside_system_trees(path: str | None, what: str) -> None:
    """An output path (file or folder) in /proc, /sys or /dev is refused: writing there changes the system.
    `what` leads the message (the option, or what was being made)."""
    tree = system_tree(path) if path else None
    if tree:
        raise RtqError(f"{what} {path}: in {tree}, a kernel or device tree: write results to an ordinary folder")


def read_text(path: str | os.PathLike) -> tuple[str | None, str]:
    """Stripped text of a small kernel file, or None and why (not found, permission denied, ...); never raises."""
    try:
        with open(path, errors="replace") as f:
            return f.read().strip().strip("\x00").strip(), ""
    except FileNotFoundError:
        return None, f"{path}: not found"
    except PermissionError:
        return None, f"{path}: permission denied"
    except OSError as e:
        return None, f"{path}: {e.strerror or e}"


def _umask() -> int:
    """The process's umask, read once when rtqual is imported (reading it means setting it: never while
    threads may be creating files)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()


def write_text_atomic(path: str | os.PathLike, text: str | bytes, sync: bool = True) -> None:
    """Write a file so a reader (or a kill) sees the old content or the new, never half: write, fsync, rename.
    The one way rtqual writes a file (reports, figures, bundle files): the new content goes to a temp file
    created with O_EXCL | O_NOFOLLOW under an unpredictable name in the target folder (tempfile.mkstemp, so a
    planted symlink or a file of that name is never opened), then is renamed over the target, which replaces a
    symlink there instead of writing through it. sync=False leaves out the fsync (a file rewritten every
    second during a measurement: a killed process keeps it all the same, only a power cut may not)."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # as open() would make it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cap_eff_hex(status: str | None) -> str | None:
    """The hex mask of the 'CapEff:' line of a /proc/<pid>/status text, or None when absent."""
    m = re.search(r"^CapEff\s*:\s*(.*)$", status or "", re.M)
    return m.group(1).strip() if m else None


def has_capability(bit: int, status_path: str | os.PathLike = "/proc/self/status") -> bool:
    """Whether our effective capabilities hold capability number bit (False when unreadable)."""
    mask = cap_eff_hex(read_text(status_path)[0])
    try:
        return mask is not None and int(mask, 16) >> bit & 1 == 1
    except ValueError:
        return False


def rss_kb(pid: int) -> int | None:
    """Resident memory of a process in kB (VmRSS of /proc/PID/status), or None when it is gone or a zombie:
    what the long-run test and benchmark sample."""
    m = re.search(r"^VmRSS:\s*(\d+)", read_text(f"/proc/{pid}/status")[0] or "", re.M)
    return int(m.group(1)) if m else None


def child_named(pid: int, comm: str) -> int | None:
    """The child of process pid whose command is comm (e.g. rtqual's rtqual-probe), or None: what the
    long-run and monitor-overhead benchmarks sample."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in map(int, children):
        if (read_text(f"/proc/{child}/comm")[0] or "").strip() == comm:
            return child
    return None


def remove_orphan_dirs(prefix: str, parent: str | os.PathLike | None = None, dry_run: bool = False) -> list[Path]:
    """Remove the folders PARENT/PREFIX<pid>-* whose maker (process pid) no longer runs; the removed paths
    (dry_run: only listed). A SIGKILL between making a temp folder and recording it in the bundle's change
    journal leaves one behind that no journal names: the next rtqual that makes such a folder, and
    `rtqual restore`, remove it."""
    import shutil
    import tempfile

    removed = []
    for d in Path(parent or tempfile.gettempdir()).glob(prefix + "*-*"):
        pid = d.name[len(prefix) :].split("-", 1)[0]
        if d.is_dir() and not d.is_symlink() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            if not dry_run:
                shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed

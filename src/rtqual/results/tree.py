"""A recorded host tree (`rtqual advise --root TREE`, a kernel lab's copy of /proc and /sys) read as a confined
tree, through the bundle's reader (rtqual.results.bundle.files): a path below the tree is read only when it stays
inside it once symlinks are followed, only when it is a regular file (opened non-blocking, without following a
last symlink: a FIFO never blocks, /dev/zero is never read), and at most MAX_TREE_BYTES of it. A tree comes from
someone else just as a bundle does: a symlink at proc/sys/kernel/version to /etc/shadow is never followed out.
The live root ("/") is the running kernel's and is read as it is (rtqual.util.read_text)."""

from __future__ import annotations

import os
from pathlib import Path

from rtqual.results.bundle import files

MAX_TREE_BYTES = 4 << 20  # a kernel file of a recorded tree: /proc/interrupts of 8,192 CPUs, a kernel config


def _rel(root: Path, path: str | os.PathLike) -> str:
    """path (absolute below root, or relative to it) as a path relative to root."""
    p = Path(path)
    try:
        return p.relative_to(root).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        raise files.Refused("outside the tree (not read)") from None


def read_text(root: str | os.PathLike, path: str | os.PathLike, cap: int = MAX_TREE_BYTES) -> tuple[str | None, str]:
    """Stripped text of a file of the tree, or None and why (not found, outside the tree, not a regular file,
    too large); never raises. The same answer as rtqual.util.read_text for a file that is what it should be."""
    root = Path(root)
    try:
        data = files.read_bytes(root, _rel(root, path), cap)
    except FileNotFoundError:
        return None, f"{path}: not found"
    except PermissionError:
        return None, f"{path}: permission denied"
    except files.Refused as e:
        return None, f"{path}: {e}"
    except (OSError, ValueError) as e:
        return None, f"{path}: {getattr(e, 'strerror', None) or e}"
    return data.decode(errors="replace").strip().strip("\x00").strip(), ""


def read_bytes(root: str | os.PathLike, path: str | os.PathLike, cap: int = MAX_TREE_BYTES) -> bytes | None:
    """The bytes of a regular file of the tree (at most cap), or None."""
    root = Path(root)
    try:
        return files.read_bytes(root, _rel(root, path), cap)
    except (OSError, ValueError):
        return None


def exists(root: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Whether the path exists inside the tree (a symlink leading out of it does not)."""
    root = Path(root)
    try:
        files.entry(root, _rel(root, path))
    except (OSError, ValueError):
        return False
    return os.path.lexists(Path(root) / _rel(root, path)) and os.path.exists(Path(root) / _rel(root, path))


def inside(root: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Whether a folder of the tree stays inside it once symlinks are followed (its listing may be read)."""
    root = Path(root)
    try:
        files.entry(root, _rel(root, path))
    except (OSError, ValueError):
        return False
    return True

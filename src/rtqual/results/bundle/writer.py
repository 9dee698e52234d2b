"""The one bundle writer: a directory written case by case, atomically (names.py lists its files).

Every file but the manifest and the change journal has its sha256 in the manifest's "checksums" (path relative
to the bundle -> hex digest): files written whole get it as they are written, the streamed ones (stream.jsonl,
raw.bin, logs) when their case ends. Each file is hashed once: the writer keeps what it hashed (with the file's
inode, size and times) and hands it to the model it makes of its bundle (Bundle.model), which reuses a digest
while the file is unchanged.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rtqual import SCHEMA_VERSION, __version__
from rtqual.errors import RtqError
from rtqual.results.bundle import files, names
from rtqual.results.bundle.model import Model
from rtqual.results.bundle.verify import CHECKSUMS
from rtqual.util import write_text_atomic

_OPEN: dict[Path, Bundle] = {}  # bundles being written by this process, by resolved path
Known = dict[str, tuple[tuple[int, ...] | None, str]]  # rel -> (the file's signature when hashed, sha256)


def default_path(now: float | None = None) -> Path:
    """rtqual-<host>-<YYYYmmdd-HHMMSS> in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path(f"rtqual-{socket.gethostname().split('.')[0]}-{stamp}")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically: a reader sees the old file or the new one, never half of one."""
    write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a file atomically (rtqual.util.write_text_atomic); inside a bundle this process is writing, its
    checksum goes into that bundle's manifest. A file beside another bundle never changes that bundle."""
    write_text_atomic(path, text)
    if not _OPEN:
        return
    full = os.path.abspath(path)  # by name first (no system call per folder: slow on a network file system)
    for b in _OPEN.values():
        if b.rel(full) is not None:
            b.record(Path(full))
            return
    real = Path(path).resolve()  # then through symlinks
    for root, b in _OPEN.items():
        if real.is_relative_to(root):
            b.record(real)
            return


def refuse_inputs(path: str | Path, inputs: Iterable[str | Path], what: str = "output") -> None:
    """A one-line RtqError when path (a report, a figure, a folder of figures) lies inside one of the bundles
    the command reads, once symlinks are followed: a command never writes onto what it reads (its own
    report.html is write_own's). `what` leads the message (the option)."""
    full = Path(os.path.realpath(path))
    for b in inputs:
        root = Path(os.path.realpath(b))
        if full == root or full.is_relative_to(root):
            raise RtqError(f"{what} {path}: inside the bundle {b} this command reads: write it elsewhere")


def write_own(root: Path, name: str, text: str) -> Path:
    """A finished bundle's own file written by its own command (report.html by `rtqual report BUNDLE`,
    selftest.json by the selftest), its checksum added to that bundle's manifest if it records checksums."""
    root = Path(root)
    if root.resolve() in _OPEN:  # being written by this process: its writer records it
        write_text(root / name, text)
        return root / name
    write_text_atomic(root / name, text)
    try:
        manifest = files.read_json(root, names.MANIFEST)
    except (OSError, ValueError):
        return root / name
    if isinstance(manifest, dict) and isinstance(manifest.get(CHECKSUMS), dict):
        manifest[CHECKSUMS][name] = files.digest(root, name)
        write_text_atomic(root / names.MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return root / name


class Bundle:
    """A bundle being written. Every method leaves a readable bundle behind."""

    def __init__(self, path: Path, argv: list[str], probe_version: str):
        self.path = Path(path)
        if self.path.exists() and (not self.path.is_dir() or any(self.path.iterdir())):
            raise RtqError(f"output {self.path} exists and is not an empty directory: choose another with -o")
        try:
            (self.path / names.HOST).mkdir(parents=True, exist_ok=True)
            (self.path / names.CASES).mkdir(exist_ok=True)
        except OSError as e:
            raise RtqError(f"cannot create bundle {self.path}: {e.strerror}") from None
        self.known: Known = {}
        self._names = (os.path.abspath(self.path), str(self.path.resolve()))  # the bundle's path as given, real
        self.manifest: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "rtqual_version": __version__,
            "probe_version": probe_version,
            "argv": argv,
            "hostname": socket.gethostname(),
            "start": _now_iso(),
            "end": None,
            "status": "running",
            "verdict": None,
            "cases": [],
            "running_case": None,
            CHECKSUMS: {},
        }
        _OPEN[self.path.resolve()] = self
        self.save_manifest()

    def save_manifest(self) -> None:
        write_json(self.path / names.MANIFEST, self.manifest)

    def case_dir(self, case_id: str) -> Path:
        d = self.path / names.CASES / case_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def rel(self, full: str) -> str | None:
        """An absolute path's name inside this bundle (by name, as given or real), or None when outside."""
        for root in self._names:
            if full.startswith(root + os.sep):
                return Path(full[len(root) + 1 :]).as_posix()
        return None

    def record(self, path: Path, save: bool = True, final: bool = False) -> None:
        """Put one file's checksum into the manifest (saved at once unless save is False, or the file is the
        running case's: its folder is sealed when it ends, and a kill leaves it as the cut case, whose files need
        none); a file already hashed and unchanged since is not hashed again. final: the change journal, rewritten
        during the run (unsealed until then), sealed now that the run has restored everything."""
        rel = self.rel(os.path.abspath(path))
        if rel is None:
            rel = path.resolve().relative_to(self.path.resolve()).as_posix()
        if (rel in names.UNSEALED and not (final and rel == names.CHANGES)) or path.name.endswith(".tmp"):
            return
        sig = files.signature(self.path, rel)
        known = self.known.get(rel)
        if known is None or sig is None or known[0] != sig:
            known = self.known[rel] = (sig, files.digest(self.path, rel))
        self.manifest[CHECKSUMS][rel] = known[1]
        running = self.manifest["running_case"]
        if save and not (running and rel.startswith(f"{names.CASES}/{running}/")):
            self.save_manifest()

    def seal(self, folder: Path) -> None:
        """Checksums of every file under folder (the streamed ones included), saved once."""
        for f in sorted(Path(folder).rglob("*")):
            if f.is_file() and not f.is_symlink():
                self.record(f, save=False)
        self.save_manifest()

    def start_case(self, case_id: str) -> None:
        """Say in the manifest which case runs now: a bundle left `running` by a kill names its cut case."""
        self.manifest["running_case"] = case_id
        self.save_manifest()

    def add_case(self, result: dict) -> None:
        """Record a finished case in the manifest at once (the case files are already on disk), with the
        checksums of every file in its folder."""
        self.manifest["cases"].append({k: result[k] for k in ("id", "label", "probe", "verdict")})
        self.manifest["running_case"] = None
        self.seal(self.path / names.CASES / result["id"])

    def finish(self, status: str, verdict: str) -> None:
        """The run's end: status and verdict, checksums of whatever is not sealed yet (host facts after)."""
        self.manifest.update(status=status, verdict=verdict, end=_now_iso())
        self.seal(self.path / names.HOST)

    def close(self) -> None:
        """Nothing more will be written by this run (report.html is in): forget the open bundle."""
        _OPEN.pop(self.path.resolve(), None)

    def model(self) -> Model:
        """The result model of this bundle, sharing the manifest and the digests this writer made (so no file
        is hashed twice in one command)."""
        return Model(self.path, manifest=self.manifest, known=self.known)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


__all__ = ["Bundle", "default_path", "write_json", "write_own", "write_text"]

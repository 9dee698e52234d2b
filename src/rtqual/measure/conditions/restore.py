"""`rtqual restore BUNDLE`'s undo of a bundle's journal, read as someone else's input: it acts only on a journal of
this host and boot, sealed or cut by a kill, whose records to undo are all kinds and names rtqual makes
(journal.refusal); otherwise one line and nothing touched."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from rtqual.errors import RtqError
from rtqual.measure.conditions.journal import (
    CHANGES_FILE,
    JOURNAL_MAX_BYTES,
    JSON_MAX_DEPTH,
    MANIFEST_MAX_BYTES,
    _needs_undo,
    host_identity,
    record_shape_problem,
    refusal,
    restore_from_records,
)
from rtqual.results.bundle import files
from rtqual.util import read_text

log = logging.getLogger("rtqual.measure.conditions.restore")


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
    if record.get("kind") == "irq-thread":
        return {"knob": record["knob"], "action": "would set", "value": record["before"]}
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

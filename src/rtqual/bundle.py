"""Result bundle: a directory written case by case, atomically (DESIGN.md "Result bundle").

rtqual-<host>-<YYYYmmdd-HHMMSS>/
  manifest.json          schema_version, versions, argv, start/end, status, verdict, case index
  scenario.toml          what was asked (verbatim for scenario files)
  plan.json              the expanded cases
  host/                  facts-before.json, facts-after.json, tunables-before.json, tunables-after.json
  cases/<id>/            params.json, result.json, hist.json, hist-cpuN.hdr, hist-all.hdr,
                         stream.jsonl, probe.stderr, raw.bin (--raw)
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from rtqual import SCHEMA_VERSION, __version__
from rtqual.errors import RtqError
from rtqual.util import write_text_atomic

READABLE_SCHEMAS = {1}


def default_path(now: float | None = None) -> Path:
    """rtqual-<host>-<YYYYmmdd-HHMMSS> in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path(f"rtqual-{socket.gethostname().split('.')[0]}-{stamp}")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically: a reader sees the old file or the new one, never half of one."""
    write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a bundle file atomically (rtqual.util.write_text_atomic)."""
    write_text_atomic(path, text)


def read_json(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)


class Bundle:
    """A bundle being written. Every method leaves a readable bundle behind."""

    def __init__(self, path: Path, argv: list[str], probe_version: str):
        self.path = Path(path)
        if self.path.exists() and (not self.path.is_dir() or any(self.path.iterdir())):
            raise RtqError(f"output {self.path} exists and is not an empty directory: choose another with -o")
        try:
            (self.path / "host").mkdir(parents=True, exist_ok=True)
            (self.path / "cases").mkdir(exist_ok=True)
        except OSError as e:
            raise RtqError(f"cannot create bundle {self.path}: {e.strerror}") from None
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
        }
        self.save_manifest()

    def save_manifest(self) -> None:
        write_json(self.path / "manifest.json", self.manifest)

    def case_dir(self, case_id: str) -> Path:
        d = self.path / "cases" / case_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def add_case(self, result: dict) -> None:
        """Record a finished case in the manifest at once (the case files are already on disk)."""
        self.manifest["cases"].append({k: result[k] for k in ("id", "label", "probe", "verdict")})
        self.save_manifest()

    def finish(self, status: str, verdict: str) -> None:
        self.manifest.update(status=status, verdict=verdict, end=_now_iso())
        self.save_manifest()


def load(path: str | Path) -> dict:
    """Read a bundle: {"path", "manifest", "cases": [result, ...]}; one-line errors for anything off."""
    path = Path(path)
    if not (path / "manifest.json").is_file():
        raise RtqError(f"{path}: not an rtqual bundle (no manifest.json)")
    try:
        manifest = read_json(path / "manifest.json")
    except (OSError, ValueError) as e:
        raise RtqError(f"{path}/manifest.json: unreadable ({e})") from None
    if manifest.get("schema_version") not in READABLE_SCHEMAS:
        raise RtqError(
            f"{path}: bundle schema {manifest.get('schema_version')} is not readable by "
            f"rtqual {__version__} (reads {sorted(READABLE_SCHEMAS)})"
        )
    cases = []
    for entry in manifest.get("cases", []):
        try:
            cases.append(read_json(path / "cases" / entry["id"] / "result.json"))
        except (OSError, ValueError, KeyError) as e:
            raise RtqError(f"{path}: case {entry.get('id')} unreadable ({e})") from None
    try:
        table = read_json(path / "plan.json").get("table")
    except (OSError, ValueError):
        table = None
    return {"path": str(path), "manifest": manifest, "cases": cases, "table": table}


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")

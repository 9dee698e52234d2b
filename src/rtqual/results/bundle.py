"""Result bundle: a directory written case by case, atomically (DESIGN.md "Result bundle").

rtqual-<host>-<YYYYmmdd-HHMMSS>/
  manifest.json          schema_version, versions, argv, start/end, status, verdict, case index
  scenario.toml          what was asked (verbatim for scenario files)
  plan.json              the expanded cases
  host/                  facts-before.json, facts-after.json, tunables-before.json, tunables-after.json
  cases/<id>/            params.json, result.json, hist.json, hist-cpuN.hdr, hist-all.hdr,
                         stream.jsonl, probe.stderr, raw.bin (--raw)

Every file but the manifest and the change journal has its sha256 in the manifest's "checksums"
(path relative to the bundle -> hex digest): files written whole get it as they are written, the streamed
ones (stream.jsonl, raw.bin, logs) when their case ends. verify() checks them; load() reads defensively:
a file with the wrong shape or checksum is named in data["damage"] and never printed as data.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import time
from pathlib import Path
from typing import Any

from rtqual import SCHEMA_VERSION, __version__
from rtqual.errors import RtqError
from rtqual.results.stats import VERDICTS  # the names a result may carry
from rtqual.util import write_text_atomic

READABLE_SCHEMAS = {1}
CHECKSUMS = "checksums"  # manifest key: {relative path: sha256 hex}
UNSEALED = {"manifest.json", "host/changes.json"}  # rewritten after the run (restore): no checksum
RESULT_KEYS = {"id": str, "label": str, "probe": str, "verdict": str, "stats": dict, "per_cpu": dict, "params": dict}
_OPEN: dict[Path, Bundle] = {}  # bundles being written by this process, by resolved path


def default_path(now: float | None = None) -> Path:
    """rtqual-<host>-<YYYYmmdd-HHMMSS> in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path(f"rtqual-{socket.gethostname().split('.')[0]}-{stamp}")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically: a reader sees the old file or the new one, never half of one."""
    write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a bundle file atomically (rtqual.util.write_text_atomic) and record its checksum in the
    manifest of the bundle it belongs to (one being written, or a finished one with checksums)."""
    write_text_atomic(path, text)
    record_file(Path(path))


def read_json(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of a file, read in 1 MiB blocks (raw.bin may be hundreds of MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def record_file(path: Path) -> None:
    """Record the checksum of a file just written, if it lies in a bundle: one this process is writing,
    or a finished bundle with checksums (`rtqual report` writing BUNDLE/report.html)."""
    full = path.resolve()
    for root, b in _OPEN.items():
        if full.is_relative_to(root):
            b.record(full)
            return
    root = full.parent
    try:
        manifest = read_json(root / "manifest.json")
    except (OSError, ValueError):
        return
    if isinstance(manifest, dict) and isinstance(manifest.get(CHECKSUMS), dict):
        manifest[CHECKSUMS][full.name] = sha256_file(full)
        write_text_atomic(root / "manifest.json", json.dumps(manifest, indent=1) + "\n")


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
            "running_case": None,
            CHECKSUMS: {},
        }
        _OPEN[self.path.resolve()] = self
        self.save_manifest()

    def save_manifest(self) -> None:
        write_json(self.path / "manifest.json", self.manifest)

    def case_dir(self, case_id: str) -> Path:
        d = self.path / "cases" / case_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def record(self, path: Path, save: bool = True) -> None:
        """Put one file's checksum into the manifest (saved at once unless save is False)."""
        rel = path.resolve().relative_to(self.path.resolve()).as_posix()
        if rel in UNSEALED or path.name.endswith(".tmp"):
            return
        self.manifest[CHECKSUMS][rel] = sha256_file(path)
        if save:
            self.save_manifest()

    def seal(self, folder: Path) -> None:
        """Checksums of every file under folder (the streamed ones included), saved once."""
        for f in sorted(Path(folder).rglob("*")):
            if f.is_file():
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
        self.seal(self.path / "cases" / result["id"])

    def finish(self, status: str, verdict: str) -> None:
        """The run's end: status and verdict, checksums of whatever is not sealed yet (host facts after)."""
        self.manifest.update(status=status, verdict=verdict, end=_now_iso())
        self.seal(self.path / "host")

    def close(self) -> None:
        """Nothing more will be written by this run (report.html is in): forget the open bundle."""
        _OPEN.pop(self.path.resolve(), None)


def read_manifest(path: Path) -> dict:
    """The manifest of a bundle, its shape checked; RtqError naming the file otherwise."""
    if not (path / "manifest.json").is_file():
        raise RtqError(f"{path}: not an rtqual bundle (no manifest.json)")
    try:
        manifest = read_json(path / "manifest.json")
    except (OSError, ValueError) as e:
        raise RtqError(f"{path}/manifest.json: unreadable ({e})") from None
    if not isinstance(manifest, dict):
        raise RtqError(f"{path}/manifest.json: damaged (a JSON {type(manifest).__name__}, not an object)")
    if manifest.get("schema_version") not in READABLE_SCHEMAS:
        raise RtqError(
            f"{path}: bundle schema {manifest.get('schema_version')} is not readable by "
            f"rtqual {__version__} (reads {sorted(READABLE_SCHEMAS)})"
        )
    cases = manifest.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) and _safe_id(c.get("id")) for c in cases):
        raise RtqError(f"{path}/manifest.json: damaged ('cases' is not a list of cases with ids)")
    if not isinstance(manifest.get(CHECKSUMS, {}), dict):
        raise RtqError(f"{path}/manifest.json: damaged ('{CHECKSUMS}' is not an object)")
    return manifest


def _safe_id(x: Any) -> bool:
    """A case id that names a folder inside cases/ (no separators, not . or ..)."""
    return isinstance(x, str) and x not in ("", ".", "..") and "/" not in x and "\x00" not in x


def result_problem(r: Any) -> str | None:
    """Why a case's result.json cannot be shown as data (wrong shape, impossible numbers), or None."""
    if not isinstance(r, dict):
        return f"a JSON {type(r).__name__}, not an object"
    for key, kind in RESULT_KEYS.items():
        if not isinstance(r.get(key), kind):
            return f"'{key}' missing or not a {kind.__name__}"
    if r["verdict"] not in VERDICTS:
        return f"unknown verdict {r['verdict']!r}"
    for where, stats in [("stats", r["stats"]), *((f"per_cpu.{c}", s) for c, s in r["per_cpu"].items())]:
        if not isinstance(stats, dict):
            return f"'{where}' is not an object"
        for k, v in stats.items():
            if v is None or not (k.endswith("_ns") or k in ("count", "overruns", "lost", "samples")):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"{where}.{k} is not a number ({v!r})"
            if v < 0 and k != "min_ns" and k != "mean_ns" and k != "p50_ns":
                return f"{where}.{k} is negative ({v})"
    for key in ("warnings", "requirement_verdicts", "loads"):
        if r.get(key) is not None and not isinstance(r[key], list):
            return f"'{key}' is not a list"
    if r.get("probe_summary") is not None and not isinstance(r["probe_summary"], dict):
        return "'probe_summary' is not an object"
    return None


def checksum_problems(path: Path, manifest: dict) -> list[str]:
    """Each recorded file that is missing or whose sha256 differs: "FILE: missing" / "FILE: damaged"."""
    out = []
    for rel, digest in sorted((manifest.get(CHECKSUMS) or {}).items()):
        f = path / rel
        if not f.is_file():
            out.append(f"{rel}: missing")
        elif not isinstance(digest, str) or sha256_file(f) != digest:
            out.append(f"{rel}: damaged (sha256 differs from the manifest's)")
    return out


def cut_case(path: Path, manifest: dict) -> str | None:
    """The case a killed run was running (the manifest stayed `running`), or None."""
    if manifest.get("status") != "running":
        return None
    running = manifest.get("running_case")
    if isinstance(running, str):
        return running
    done = {c["id"] for c in manifest.get("cases", [])}
    try:
        planned = [c.get("id") for c in read_json(path / "plan.json")["cases"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return next((i for i in planned if isinstance(i, str) and i not in done), None)


def verify(path: str | Path) -> tuple[list[str], list[str]]:
    """`rtqual verify`: (problems, notes). Problems: each damaged, missing or unexpected file; notes: no
    checksums recorded (bundles before checksums), the files of a cut case (never sealed)."""
    path = Path(path)
    manifest = read_manifest(path)
    if CHECKSUMS not in manifest:
        return [], ["no checksums recorded (written before rtqual recorded them): nothing to verify"]
    problems = checksum_problems(path, manifest)
    notes = []
    cut = cut_case(path, manifest)
    known = set(manifest[CHECKSUMS]) | UNSEALED
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if rel in known:
            continue
        if cut and rel.startswith(f"cases/{cut}/"):
            notes.append(f"{rel}: no checksum (case {cut} was cut by a kill)")
        elif rel.endswith(".tmp"):
            notes.append(f"{rel}: a half-written file left by a kill")
        else:
            problems.append(f"{rel}: unexpected (not in the manifest's checksums)")
    if cut:
        notes.append(f"the run was cut during case {cut}")
    return problems, notes


def load(path: str | Path) -> dict:
    """Read a bundle: {"path", "manifest", "cases": [result, ...], "damage": [...], "cut": id or None}.
    A damaged manifest is a one-line RtqError; a damaged case is left out and named in "damage"."""
    path = Path(path)
    manifest = read_manifest(path)
    damage = checksum_problems(path, manifest)
    bad_files = {d.split(":", 1)[0] for d in damage}
    cases = []
    for entry in manifest.get("cases", []):
        rel = f"cases/{entry['id']}/result.json"
        if rel in bad_files:
            continue
        try:
            r = read_json(path / rel)
        except (OSError, ValueError) as e:
            damage.append(f"{rel}: unreadable ({e})")
            continue
        problem = result_problem(r)
        if problem:
            damage.append(f"{rel}: damaged ({problem})")
            continue
        cases.append(r)
    try:
        table = read_json(path / "plan.json").get("table")
    except (OSError, ValueError, AttributeError):
        table = None
    table = table if isinstance(table, str) else None
    return {
        "path": str(path),
        "manifest": manifest,
        "cases": cases,
        "table": table,
        "damage": damage,
        "cut": cut_case(path, manifest),
    }


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")

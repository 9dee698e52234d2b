"""What verification finds in a bundle: a manifest of the wrong shape (one-line RtqError), recorded files that are
missing, damaged, outside the bundle or not regular, results of the wrong shape, and entries nobody recorded.
Pure checks over the tree; the model (model.py) runs them once and keeps what they found."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtqual import __version__
from rtqual.errors import RtqError
from rtqual.results.bundle import files, names
from rtqual.results.stats import VERDICTS  # the names a result may carry

READABLE_SCHEMAS = {1}
CHECKSUMS = "checksums"  # manifest key: {relative path: sha256 hex}
RESULT_KEYS = {"id": str, "label": str, "probe": str, "verdict": str, "stats": dict, "per_cpu": dict, "params": dict}


def read_manifest(path: Path) -> dict:
    """The manifest of a bundle, its shape checked; RtqError naming the file otherwise."""
    path = Path(path)
    if not os.path.lexists(path):
        raise RtqError(f"{path}: not an rtqual bundle: no such file or directory")
    if not path.is_dir():
        raise RtqError(f"{path}: not an rtqual bundle: not a directory (a bundle is a folder with a manifest.json)")
    try:
        manifest = files.read_json(path, names.MANIFEST)
    except FileNotFoundError:
        raise RtqError(f"{path}: not an rtqual bundle (no manifest.json)") from None
    except files.Refused as e:
        raise RtqError(f"{path}/manifest.json: {e}") from None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else files.shown(str(e))
        raise RtqError(f"{path}/manifest.json: unreadable ({why})") from None
    if not isinstance(manifest, dict):
        raise RtqError(f"{path}/manifest.json: damaged (a JSON {type(manifest).__name__}, not an object)")
    if manifest.get("schema_version") not in READABLE_SCHEMAS:
        raise RtqError(
            f"{path}: bundle schema {files.shown(manifest.get('schema_version'))} is not readable by "
            f"rtqual {__version__} (reads {sorted(READABLE_SCHEMAS)})"
        )
    cases = manifest.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) and safe_id(c.get("id")) for c in cases):
        raise RtqError(f"{path}/manifest.json: damaged ('cases' is not a list of cases with ids)")
    if not isinstance(manifest.get(CHECKSUMS, {}), dict):
        raise RtqError(f"{path}/manifest.json: damaged ('{CHECKSUMS}' is not an object)")
    return manifest


def safe_id(x: Any) -> bool:
    """A case id that names a folder inside cases/ (no separators, not . or .., printable)."""
    return isinstance(x, str) and x not in ("", ".", "..") and "/" not in x and x.isprintable()


def result_problem(r: Any) -> str | None:
    """Why a case's result.json cannot be shown as data (wrong shape, impossible numbers), or None."""
    if not isinstance(r, dict):
        return f"a JSON {type(r).__name__}, not an object"
    for key, kind in RESULT_KEYS.items():
        if not isinstance(r.get(key), kind):
            return f"'{key}' missing or not a {kind.__name__}"
    if r["verdict"] not in VERDICTS:
        return f"unknown verdict {files.shown(r['verdict'])!r}"
    for where, stats in [("stats", r["stats"]), *((f"per_cpu.{c}", s) for c, s in r["per_cpu"].items())]:
        if not isinstance(stats, dict):
            return f"'{files.shown(where)}' is not an object"
        for k, v in stats.items():
            if v is None or not (k.endswith("_ns") or k in ("count", "overruns", "lost", "samples")):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"{files.shown(where)}.{files.shown(k)} is not a number ({files.shown(repr(v))})"
            if v < 0 and k != "min_ns" and k != "mean_ns" and k != "p50_ns":
                return f"{files.shown(where)}.{files.shown(k)} is negative ({v})"
    for key in ("warnings", "requirement_verdicts", "loads"):
        if r.get(key) is not None and not isinstance(r[key], list):
            return f"'{key}' is not a list"
    if r.get("probe_summary") is not None and not isinstance(r["probe_summary"], dict):
        return "'probe_summary' is not an object"
    return None


def checksum_problems(path: Path, manifest: dict, digest: Callable[[str], str] | None = None) -> list[str]:
    """Each recorded file that is missing, outside the bundle, not regular, or whose sha256 differs:
    "FILE: missing" / "FILE: damaged ..." / "FILE: a symlink leading out of the bundle (not read)"."""
    digest = digest or (lambda rel: files.digest(path, rel))
    out: list[str] = []
    folders: set[str] = set()
    for rel, want in sorted((manifest.get(CHECKSUMS) or {}).items()):
        if any(isinstance(rel, str) and rel.startswith(f + "/") for f in folders):
            continue  # named once: the folder leading out
        try:
            ok = isinstance(want, str) and digest(rel) == want
            why = "" if ok else "damaged (sha256 differs from the manifest's)"
        except FileNotFoundError:
            why = "missing"
        except files.Refused as e:
            why = str(e)
            if e.where:
                folders.add(e.where)
                rel = e.where
        except OSError as e:
            why = f"unreadable ({e.strerror or e})"
        if why:
            out.append(f"{files.shown(rel)}: {why}")
    return out


def cut_case(manifest: dict, planned: list[Any]) -> str | None:
    """The case a killed run was running (the manifest stayed `running`), or None: the manifest's
    running_case, else (a kill between cases) the first planned case that did not finish."""
    if manifest.get("status") != "running":
        return None
    running = manifest.get("running_case")
    if isinstance(running, str):
        return files.shown(running)
    done = {c["id"] for c in manifest.get("cases", [])}
    return next((i for i in planned if safe_id(i) and i not in done), None)


def tree_problems(path: Path, manifest: dict, cut: str | None) -> tuple[list[str], list[str]]:
    """(problems, notes) of the entries nobody recorded: a symlink or special file is damage, a file without
    checksum is unexpected, except a cut case's files and half-written *.tmp files (notes)."""
    problems, notes = [], []
    known = set(manifest.get(CHECKSUMS) or {}) | names.UNSEALED
    for rel in files.walk(path):
        special = files.kind(path, rel)
        if special:
            if rel not in known:
                problems.append(f"{files.shown(rel)}: {special}")
        elif rel in known:
            continue
        elif cut and rel.startswith(f"{names.CASES}/{cut}/"):
            notes.append(f"{files.shown(rel)}: no checksum (case {cut} was cut by a kill)")
        elif rel.endswith(".tmp"):
            notes.append(f"{files.shown(rel)}: a half-written file left by a kill")
        else:
            problems.append(f"{files.shown(rel)}: unexpected (not in the manifest's checksums)")
    if cut:
        notes.append(f"the run was cut during case {cut}")
    return problems, notes

"""The result model: one bundle, read lazily and verified once per command (pyperf's load-once habit).

Model(path) reads nothing until asked. What it holds: the manifest (checked), the cases (results that are
intact and of the right shape), the damage verification found (every recorded file hashed at most once,
entries that lead out of the bundle or are not regular files), the case a kill cut, stand-ins for damaged
results (so a report can say what is missing), the plan, host facts before and after, and per case its
parameters, histograms, values over time (stream records) and raw sample file. A file whose checksum fails
is never read as data. Old formats are converted here (`_upgrade`), so printers see one shape.

The printers take the keys they have always read ("path", "manifest", "cases", "table", "damage", "cut") as
Model.as_dict(); the model is also a read-only mapping with those keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from rtqual.results import hist as hist_mod
from rtqual.results import stream as stream_mod
from rtqual.results.bundle import files, names, schema
from rtqual.results.bundle.verify import (
    CHECKSUMS,
    checksum_problems,
    cut_case,
    read_manifest,
    result_problem,
    tree_problems,
)

KEYS = ("path", "manifest", "cases", "table", "damage", "cut")
UNSHOWABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError)


class Unreadable(ValueError):
    """A bundle file the model will not give as data: damaged, missing, refused or unparseable."""


class Model(Mapping):
    """One bundle as data. `check` (optional) is a printer's test of one result, check(model, result): a
    result it raises on (KeyError, TypeError, ValueError...) is damage too, left out and named."""

    def __init__(
        self,
        path: str | Path,
        manifest: dict | None = None,
        known: dict | None = None,
        check: Callable[[Model, dict], Any] | None = None,
    ):
        self.path = Path(path)
        self._manifest = manifest
        self._known = known or {}  # rel -> (signature, sha256) hashed by the writer of this process
        self._digests: dict[str, str] = {}
        self._read: dict[str, Any] = {}  # rel -> its JSON past the door (read and checked once)
        self._door: dict[str, str] = {}  # rel -> the one line naming its fields that failed the schema
        self.check = check

    # ---- the mapping the printers read

    def __getitem__(self, key: str) -> Any:
        if key not in KEYS:
            raise KeyError(key)
        return str(self.path) if key == "path" else getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(KEYS)

    def __len__(self) -> int:
        return len(KEYS)

    def as_dict(self) -> dict:
        """The keys printers read as a plain dict (path, manifest, cases, table, damage, cut); the manifest's
        verdict read by today's rule once the cases are (_unjudged_run)."""
        return {k: self[k] for k in KEYS}

    # ---- verification, once

    @property
    def manifest(self) -> dict:
        """The manifest (a one-line RtqError when missing or of the wrong shape), converted to today's shape."""
        if self._manifest is None:
            self._manifest = _upgrade(read_manifest(self.path))
        return self._manifest

    def digest(self, rel: str) -> str:
        """A file's sha256, computed at most once per model (reused from the writer while unchanged)."""
        if rel not in self._digests:
            known = self._known.get(rel)
            if known is not None and known[0] is not None and known[0] == files.signature(self.path, rel):
                self._digests[rel] = known[1]
            else:
                self._digests[rel] = files.digest(self.path, rel)
        return self._digests[rel]

    @cached_property
    def checksum_damage(self) -> list[str]:
        """Every recorded file that is missing, damaged, outside the bundle or not regular."""
        return checksum_problems(self.path, self.manifest, self.digest)

    @cached_property
    def bad_files(self) -> dict[str, str]:
        """Entry -> why, for each entry verification found damaged (a file, or a folder leading out)."""
        return dict(d.split(": ", 1) for d in self.checksum_damage)

    def bad(self, rel: str) -> str | None:
        """Why a file (or a folder on its path) failed verification, or None."""
        parts = rel.split("/")
        return next(
            (self.bad_files[p] for i in range(len(parts), 0, -1) if (p := "/".join(parts[:i])) in self.bad_files), None
        )

    def read_json(self, rel: str) -> Any:
        """A JSON file of the bundle as data, through the door (schema.py: each field of the wrong type or size
        read as unknown and named in door_damage), read once per model; Unreadable when its checksum failed, it
        is missing, refused (outside, special, too large, too deep) or not JSON."""
        if rel in self._read:
            return self._read[rel]
        if why := self.bad(rel):
            raise Unreadable(f"{rel}: {why}")
        try:
            data = files.read_json(self.path, rel)
        except FileNotFoundError:
            raise Unreadable(f"{rel}: missing") from None
        except files.Refused as e:
            raise Unreadable(f"{rel}: {e}") from None
        except (OSError, ValueError) as e:
            raise Unreadable(f"{rel}: unreadable ({files.shown(str(e))})") from None
        self._read[rel] = data = self._through_door(rel, data)
        return data

    def _through_door(self, rel: str, data: Any) -> Any:
        """The file's data with its schema's failed fields read as unknown; the damage line kept."""
        name = rel.rsplit("/", 1)[-1]
        if name in schema.BY_NAME:
            data, found = schema.check(schema.BY_NAME[name], data)
            if name == names.HIST and isinstance(data, dict) and isinstance(data.get("per_cpu"), dict):
                for cpu, rec in list(data["per_cpu"].items()):
                    if why := hist_mod.record_problem(rec):
                        found.append((f"per_cpu.{cpu}", why))
                        del data["per_cpu"][cpu]
            if found:
                self._door[rel] = schema.damage_line(rel, found)
        return data

    @property
    def door_damage(self) -> list[str]:
        """One line per file read so far whose fields failed the door (schema.py), in the order met."""
        return list(self._door.values())

    def late_damage(self) -> list[str]:
        """The door's lines met after `damage` was first given (files read later: a stream, a histogram), each
        given once."""
        said = set(self.damage) | getattr(self, "_said_late", set())
        late = [d for d in self.door_damage if d not in said]
        self._said_late = said | set(late)
        return late

    def door_all(self, hists: bool = False) -> None:
        """Pass every small JSON file of the bundle through the door now (host facts, tuning, plan, each case's
        small files; with hists its hist.json too), so the damage it finds is said before anything is printed."""
        rels = [names.FACTS_BEFORE, names.FACTS_AFTER, names.TUNING_BEFORE]
        for entry in self.manifest.get("cases", []):
            rels += [names.case_file(entry["id"], n) for n in (*schema.CASE_FILES, *([names.HIST] if hists else []))]
        for rel in rels:
            try:
                self.read_json(rel)
            except Unreadable:
                pass

    @cached_property
    def _results(self) -> tuple[list[dict], list[str], list[dict]]:
        """(intact results, their damage, stand-ins for the damaged ones), in manifest order."""
        cases, damage, stand_ins = [], [], []
        for entry in self.manifest.get("cases", []):
            rel = names.case_file(entry["id"], names.RESULT)
            why: str | None
            why = self.bad(rel)
            if not why:
                try:
                    r = self.read_json(rel)
                    why = result_problem(r)
                    why = f"damaged ({why})" if why else self._unshowable(r)
                except Unreadable as e:
                    why = str(e).split(": ", 1)[1]
                if not why:
                    cases.append(_unjudged(r))
                    continue
                damage.append(f"{rel}: {why}")
            stand_ins.append(_stand_in(entry, rel, why))
        _unjudged_run(self.manifest, cases)
        return cases, damage, stand_ins

    def _unshowable(self, r: dict) -> str | None:
        """Why a printer cannot show a result of the right shape (a shape the checks did not foresee), or None."""
        if self.check is None:
            return None
        try:
            self.check(self, r)
        except UNSHOWABLE as e:
            return f"damaged (cannot be shown: {files.shown(repr(e))})"
        return None

    @property
    def cases(self) -> list[dict]:
        """The intact results, in manifest order."""
        return self._results[0]

    @property
    def stand_ins(self) -> list[dict]:
        """One result per damaged result.json: verdict error, no statistics, the reason why."""
        return self._results[2]

    @cached_property
    def damage(self) -> list[str]:
        """Every damaged file ("FILE: why"): checksums, results, and core files refused when read."""
        out = self.checksum_damage + self._results[1]
        out += [d for d in self._plan[1] if d not in out]
        self.door_all()
        return out + [d for d in self.door_damage if d not in out]

    @property
    def warnings(self) -> list[str]:
        """What a command says on stderr about this bundle: each damaged file, the cut case."""
        out = [f"{self.path}/{d}" for d in self.damage]
        return out + ([f"{self.path}: the run was killed during case {self.cut}"] if self.cut else [])

    def verify(self) -> tuple[list[str], list[str]]:
        """`rtqual verify`: (problems, notes). Problems: each damaged, missing, escaping, special or unexpected
        entry; notes: no checksums recorded (bundles before checksums), the files of a cut case."""
        if CHECKSUMS not in self.manifest:
            return [], ["no checksums recorded (written before rtqual recorded them): nothing to verify"]
        problems, notes = tree_problems(self.path, self.manifest, self.cut)
        problems = self.checksum_damage + [p for p in problems if p.split(": ", 1)[0] not in self.bad_files]
        _ = self.cases, self.plan  # results and the plan through the door (the stream's records: when read,
        self.door_all(hists=True)  # so a day's stream is not parsed twice; a reader says which it left out)
        return problems + [d for d in self.door_damage if d.split(": ", 1)[0] not in self.bad_files], notes

    # ---- the plan and the cut case

    @cached_property
    def _plan(self) -> tuple[dict | None, list[str]]:
        """(plan.json, damage met reading it): a missing or unparseable plan is None, a refused one damage."""
        if self.bad(names.PLAN):
            return None, []
        try:
            plan = files.read_json(self.path, names.PLAN)
        except files.Refused as e:
            return None, [f"{names.PLAN}: {e}"]
        except (OSError, ValueError):
            return None, []
        plan = self._read.setdefault(names.PLAN, self._through_door(names.PLAN, plan))
        return (plan if isinstance(plan, dict) else None), []

    @property
    def plan(self) -> dict | None:
        return self._plan[0]

    @property
    def table(self) -> str | None:
        """The summary layout the scenario asked for (plan.json "table"), or None."""
        table = (self.plan or {}).get("table")
        return table if isinstance(table, str) else None

    @cached_property
    def cut(self) -> str | None:
        """The case a kill cut (the manifest stayed `running`), or None."""
        if self.manifest.get("status") != "running":
            return None
        planned = (self.plan or {}).get("cases")
        ids = [c.get("id") for c in planned if isinstance(c, dict)] if isinstance(planned, list) else []
        return cut_case(self.manifest, ids)

    # ---- host facts and case files

    def facts(self, when: str = "before") -> dict | None:
        """Host facts before (or after) the run, None when missing or damaged."""
        try:
            f = self.read_json(names.FACTS_BEFORE if when == "before" else names.FACTS_AFTER)
        except Unreadable:
            return None
        return f if isinstance(f, dict) else None

    def tuning(self) -> dict | None:
        """What `rtqual advise` reads beyond the facts, before the run (host/tuning-before.json), None when
        missing (bundles before it was recorded) or damaged."""
        try:
            t = self.read_json(names.TUNING_BEFORE)
        except Unreadable:
            return None
        return t if isinstance(t, dict) else None

    def params(self, case_id: str) -> dict | None:
        """A case's params.json, None when missing or damaged."""
        try:
            p = self.read_json(names.case_file(case_id, names.PARAMS))
        except Unreadable:
            return None
        return p if isinstance(p, dict) else None

    def environment_record(self, case_id: str) -> dict | None:
        """A case's environment record (environment.json: CPU counters at its start and end, SMT siblings,
        throttling), None when the bundle has none (older bundles) or it is damaged."""
        try:
            e = self.read_json(names.case_file(case_id, names.ENVIRONMENT))
        except Unreadable:
            return None
        return e if isinstance(e, dict) else None

    def hists(self, case_id: str) -> dict:
        """A case's histogram records per CPU (hist.json "per_cpu"); Unreadable when missing or damaged."""
        rel = names.case_file(case_id, names.HIST)
        h = self.read_json(rel)
        per_cpu = h.get("per_cpu") if isinstance(h, dict) else None
        if not isinstance(per_cpu, dict):
            raise Unreadable(f"{rel}: no per_cpu histograms")
        if rel in self._door:  # a CPU's record failed the door: the file is named, never half shown
            raise Unreadable(self._door[rel])
        return per_cpu

    def records(self, case_id: str, marks: tuple[str, ...] = ()) -> Iterator[dict]:
        """A case's values over time: the probe's records in stream.jsonl (with marks, only lines holding one
        of them); Unreadable when the stream is missing, damaged or refused."""
        rel = names.case_file(case_id, names.STREAM)
        if why := self.bad(rel):
            raise Unreadable(f"{rel}: {why}")
        skipped, first = 0, ""
        try:
            for rec in files.json_lines(self.path, rel, marks):
                kind = rec.get("type")
                why = (
                    stream_mod.record_problem(rec) if isinstance(kind, str) and kind in stream_mod.KNOWN_TYPES else None
                )
                if why:
                    skipped, first = skipped + 1, first or why
                    continue
                yield rec
        except FileNotFoundError:
            raise Unreadable(f"{rel}: missing") from None
        except (OSError, files.Refused) as e:
            raise Unreadable(f"{rel}: {e}") from None
        if skipped:
            self._door[rel] = f"{rel}: damaged ({skipped} record(s) of the wrong shape left out, the first: {first})"

    def raw_file(self, case_id: str) -> Path | None:
        """A case's raw sample file (raw.bin), or None when it has none; Unreadable when it is damaged or
        not a regular file inside the bundle (never read as samples then)."""
        rel = names.case_file(case_id, names.RAW)
        if why := self.bad(rel):
            raise Unreadable(f"{rel}: {why}")
        try:
            why = files.kind(self.path, rel)
        except FileNotFoundError:
            return None
        if why:
            raise Unreadable(f"{rel}: {why}")
        return self.path / rel

    def text(self, rel: str) -> str | None:
        """A small text file of the bundle (scenario.toml), None when missing, damaged or refused."""
        if self.bad(rel):
            return None
        try:
            return files.read_bytes(self.path, rel).decode(errors="replace")
        except (OSError, ValueError):
            return None

    @cached_property
    def selftest(self) -> dict | None:
        """The selftest's answer (selftest.json) when this bundle is a selftest's, else None."""
        try:
            st = self.read_json(names.SELFTEST)
        except Unreadable:
            return None
        return st if isinstance(st, dict) else None

    @cached_property
    def capacity(self) -> dict | None:
        """A capacity sweep's steps and answer (capacity.json) when this bundle is a sweep's, else None."""
        try:
            doc = self.read_json(names.CAPACITY)
        except Unreadable:
            return None
        return doc if isinstance(doc, dict) and isinstance(doc.get("steps"), list) else None


def _upgrade(manifest: dict) -> dict:
    """Convert an older manifest to today's shape (pyperf's _json_load(version, ...) habit). Schema 1 as
    rtqual 0.1.0 wrote it lacks `running_case` (a kill between cases: the cut case comes from the plan) and
    `checksums` (nothing to verify: verify says so); both are read as absent, so nothing is converted yet."""
    return manifest


def _unjudged(r: dict) -> dict:
    """A result read by today's rule: a case stored as "pass" that judged no requirement (bundles before
    0.3 passed every clean case) is "completed" (docs/requirements.md): nothing passes unjudged."""
    if r.get("verdict") == "pass" and not r.get("requirement_verdicts") and not r.get("requirements"):
        r["verdict"] = "completed"
    return r


def _unjudged_run(manifest: dict, cases: list[dict]) -> None:
    """The run's verdict by the same rule: a run stored as "pass" with an unjudged case is "completed" (a pass
    run's cases all passed, and "completed" is the next verdict in rtqual.answers.verdict.ORDER)."""
    if manifest.get("verdict") == "pass" and any(r.get("verdict") == "completed" for r in cases):
        manifest["verdict"] = "completed"


def _stand_in(entry: dict, rel: str, why: str) -> dict:
    """A damaged result's place in a report: its id and label from the manifest, verdict error, no numbers."""
    label = entry.get("label")
    return {
        "id": entry["id"],
        "label": label if isinstance(label, str) else entry["id"],
        "verdict": "error",
        "reason": f"result {why}",
        "stats": {},
        "per_cpu": {},
        "missing": [f"{rel} ({why})"],
    }


def load(path: str | Path, check: Callable[[Model, dict], Any] | None = None) -> Model:
    """The model of a bundle (nothing read yet but the manifest, so a damaged manifest is a one-line RtqError
    at once); a damaged case is left out and named in model["damage"]."""
    m = Model(path, check=check)
    m.manifest  # noqa: B018 - read now: a bundle that is no bundle says so before anything is printed
    return m


def verify(path: str | Path) -> tuple[list[str], list[str]]:
    """`rtqual verify BUNDLE`: (problems, notes) (Model.verify)."""
    return load(path).verify()

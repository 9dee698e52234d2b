"""The shadows of a bundle's report (`rtqual report --shadows N`, docs/report.md): per case, the histograms of
the baseline (`rtqual baseline`) and of the last N stored runs of the same case (its id, else its label) on the
same host, read from their bundles, drawn grey behind the case's own. A run whose bundle is gone or damaged is
left out and counted. Data only: the figures are rtqual.publish.htmlreport.figures'."""

from __future__ import annotations

import time
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.store import Store, StoreError
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.results.hist import Histogram

BASELINE = "default"  # the baseline `rtqual baseline set` names when not told


def case_hist(path: str, case_id: str) -> Histogram | None:
    """A stored run's case as one histogram (all CPUs), None where its bundle cannot give it."""
    try:
        per_cpu = bundle_mod.load(path).hists(case_id)
        h = Histogram.merged(Histogram.from_record(rec) for rec in per_cpu.values())
    except (RtqError, OSError, ValueError, KeyError, TypeError):
        return None
    return h if h.count else None


def _when(unix_s: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(unix_s)) if unix_s is not None else "?"


def shadows(s: Store, model: Model, n: int, baseline: str = BASELINE) -> tuple[dict[str, list], list[str]]:
    """{case id: [(name, Histogram), ...]} (the baseline first, then the newest runs first) for the bundle's
    cases, and the notes (runs left out: bundle gone). n = 0: the baseline only."""
    host = model.manifest.get("hostname")
    own = str(Path(model.path).resolve())
    rows = [r for r in s.history(host=str(host)) if r["bundle"] != own and not r["source"]] if host else []
    try:
        base = s.baseline(baseline)["baseline"]
    except StoreError:
        base = None
    out: dict[str, list] = {}
    missing = 0
    for case in model.cases:
        cid, label = case["id"], case.get("label")
        same = [r for r in rows if r["case_id"] == cid] or [r for r in rows if r["label"] == label]
        found: list[tuple[str, Histogram]] = []
        if base and base["host"] == host and base["bundle"] != own:
            h = case_hist(base["bundle"], cid)
            found += [(f"baseline {baseline} ({_when(_start(rows, base['run_id']))})", h)] if h else []
            missing += h is None
        newest = sorted(same, key=lambda r: -(r["started_unix_s"] or 0))
        taken = 0
        for r in newest:
            if taken >= n:
                break
            if base and r["run_id"] == base["run_id"]:
                continue
            h = case_hist(r["bundle"], r["case_id"])
            missing += h is None
            if h:
                found.append((f"run {_when(r['started_unix_s'])}", h))
                taken += 1
        if found:
            out[cid] = found
    notes = [f"{missing} stored run(s) not drawn as shadows: bundle gone or damaged"] if missing else []
    return out, notes


def _start(rows: list[dict], run_id: int) -> float | None:
    return next((r["started_unix_s"] for r in rows if r["run_id"] == run_id), None)


def for_bundles(bundles: list[Model], n: int, url: str | None) -> tuple[list[dict] | None, list[str]]:
    """Each bundle's shadows from the store at url (None: $RTQUAL_STORE, else the default), and the notes: a store
    that cannot be read gives none (its one line the note), never an error: the report is written without them."""
    from rtqual.publish.store import is_off, open_store

    if is_off(url):
        return None, []
    try:
        with open_store(url, write=False) as s:
            found = [shadows(s, b, n) for b in bundles]
    except RtqError as e:
        return None, [f"{e} (the report has none)"]
    return [grey for grey, _ in found], [note for _, notes in found for note in notes]

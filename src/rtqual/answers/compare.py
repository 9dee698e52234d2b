"""Which cases of several bundles are the same case, and how their statistics relate: cases paired by id
(else by label), as a standard and a PREEMPT_RT kernel, two boards, or a scaled rehearsal and the full run
(ids keep the nominal values). Pure functions of loaded bundles, no printing: the comparison printers
(publish.compare), the HTML comparison and `rtqual check` (publish.store.trend) take their pairs here."""

from __future__ import annotations

from collections.abc import Iterable

from rtqual.errors import RtqError


def ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where it means nothing (a missing or zero)."""
    return b / a if a and b is not None else None


def ratios(a: dict, b: dict, keys: Iterable[str]) -> dict[str, float | None]:
    """b / a of each latency statistic (key ending in _ns) among `keys`: counts and shares get no ratio."""
    return {k: ratio(a.get(k), b.get(k)) for k in keys if k.endswith("_ns")}


def pairs(a: dict, b: dict) -> tuple[list[tuple[dict, dict]], list[str], list[str]]:
    """(case of A, case of B) in A's order: the same id, else (runs of different scenarios, e.g. with
    and without a timer baseline) the same label; then the ids left only in A, only in B."""
    left, matched = list(b["cases"]), {}
    for key in ("id", "label"):
        for r in a["cases"]:
            m = None if r["id"] in matched else next((m for m in left if m[key] == r[key]), None)
            if m is not None:
                matched[r["id"]] = m
                left.remove(m)
    if not matched:
        raise RtqError(
            f"no case in common (same id or label): {a['path']} has "
            f"{', '.join(r['id'] for r in a['cases']) or 'none'}; {b['path']} has "
            f"{', '.join(r['id'] for r in b['cases']) or 'none'}"
        )
    return (
        [(r, matched[r["id"]]) for r in a["cases"] if r["id"] in matched],
        [r["id"] for r in a["cases"] if r["id"] not in matched],
        [r["id"] for r in left],
    )


def matches(bundles: list[dict]) -> list[list[dict | None]]:
    """Per case of the first bundle that another bundle also has: its result in every bundle (None where
    a bundle lacks it), paired like `pairs` (id, else label)."""
    first, rest = bundles[0], bundles[1:]
    found: dict[str, list[dict | None]] = {r["id"]: [r] + [None] * len(rest) for r in first["cases"]}
    for i, other in enumerate(rest):
        try:
            both, _, _ = pairs(first, other)
        except RtqError:
            continue
        for ra, rb in both:
            found[ra["id"]][i + 1] = rb
    rows = [row for row in found.values() if any(x is not None for x in row[1:])]
    if not rows:
        raise RtqError(f"no case in common (same id or label) between {first['path']} and any other bundle")
    return rows

"""Bundles side by side (`rtqual compare A B [C...]`): their cases paired by id (else by label), as a standard and a
PREEMPT_RT kernel, two boards, or a scaled rehearsal and the full run (ids keep the nominal
values). Pure functions of loaded bundles (rtqual.results.bundle.load). Two bundles give the A/B/ratio table;
more give one row per bundle and the ratio of each to the first."""

from rtqual.errors import RtqError
from rtqual.publish.report import PERCENTILE_NOTE, format_cell, format_table, stat_columns

COLUMNS = stat_columns(leave_out=("p9999_ns", "overruns", "over_threshold"))
RATIO_KEYS = [k for _, k in COLUMNS if k.endswith("_ns")]


def ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where it means nothing (a missing or zero)."""
    return b / a if a and b is not None else None


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


def ratio_cell(sa: dict, sb: dict, key: str) -> str:
    x = ratio(sa.get(key), sb.get(key)) if key in RATIO_KEYS else None
    return "" if x is None else f"{x:.2f}"


def _bundle_line(name: str, data: dict) -> str:
    m = data["manifest"]
    return f"{name}: {data['path']}  (host {m.get('hostname')}, started {m.get('start')}, {m.get('status')})"


def compare_text(a: dict, b: dict) -> str:
    both, only_a, only_b = pairs(a, b)
    out = [_bundle_line("A", a), _bundle_line("B", b)]
    for ra, rb in both:
        case_id = ra["id"] if ra["id"] == rb["id"] else f"{ra['id']} | {rb['id']}"
        label = ra["label"] if ra["label"] == rb["label"] else f"{ra['label']} | {rb['label']}"
        sa, sb = ra["stats"], rb["stats"]
        rows = [
            ["A", *(format_cell(k, sa.get(k)) for _, k in COLUMNS)],
            ["B", *(format_cell(k, sb.get(k)) for _, k in COLUMNS)],
            ["B/A", *(ratio_cell(sa, sb, k) for _, k in COLUMNS)],
        ]
        out += [
            "",
            f"case {case_id}: {label}  (verdict A {ra.get('verdict')}, B {rb.get('verdict')})",
            format_table(["", *(h for h, _ in COLUMNS)], rows),
        ]
    for name, ids in (("A", only_a), ("B", only_b)):
        if ids:
            out += ["", f"only in {name}: {', '.join(ids)}"]
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def compare_json(a: dict, b: dict) -> dict:
    both, only_a, only_b = pairs(a, b)
    return {
        "a": a["path"],
        "b": b["path"],
        "only_a": only_a,
        "only_b": only_b,
        "pairs": [
            {
                "id": ra["id"],
                "id_b": rb["id"],
                "label_a": ra["label"],
                "label_b": rb["label"],
                "verdict_a": ra.get("verdict"),
                "verdict_b": rb.get("verdict"),
                "a": {k: ra["stats"].get(k) for _, k in COLUMNS},
                "b": {k: rb["stats"].get(k) for _, k in COLUMNS},
                "ratio_b_a": {k: ratio(ra["stats"].get(k), rb["stats"].get(k)) for k in RATIO_KEYS},
            }
            for ra, rb in both
        ],
    }


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


def compare_many_text(bundles: list[dict]) -> str:
    """Three or more bundles: per case, one row per bundle and the ratios of each to the first."""
    names = [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(len(bundles))]
    out = [_bundle_line(n, b) for n, b in zip(names, bundles)]
    for row in matches(bundles):
        first = row[0]
        assert first is not None
        rows = [[n, *(format_cell(k, r["stats"].get(k)) for _, k in COLUMNS)] for n, r in zip(names, row) if r]
        rows += [
            [f"{n}/A", *(ratio_cell(first["stats"], r["stats"], k) for _, k in COLUMNS)]
            for n, r in zip(names[1:], row[1:])
            if r
        ]
        verdicts = ", ".join(f"{n} {r.get('verdict')}" for n, r in zip(names, row) if r)
        out += ["", f"case {first['id']}: {first['label']}  (verdict {verdicts})"]
        out.append(format_table(["", *(h for h, _ in COLUMNS)], rows))
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def compare_many_json(bundles: list[dict]) -> dict:
    return {
        "bundles": [b["path"] for b in bundles],
        "cases": [
            {
                "id": row[0]["id"] if row[0] else None,
                "ids": [r["id"] if r else None for r in row],
                "labels": [r["label"] if r else None for r in row],
                "verdicts": [r.get("verdict") if r else None for r in row],
                "stats": [{k: r["stats"].get(k) for _, k in COLUMNS} if r else None for r in row],
                "ratio_to_first": [
                    {k: ratio(row[0]["stats"].get(k), r["stats"].get(k)) for k in RATIO_KEYS} if r and row[0] else None
                    for r in row
                ],
            }
            for row in matches(bundles)
        ],
    }

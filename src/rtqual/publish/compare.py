"""The comparison printers (`rtqual compare A B [C...]`): bundles side by side, their cases paired by
answers.compare (--match, else id, else label). Pure functions of loaded bundles (rtqual.results.bundle.load).
Two bundles give the A/B/ratio table; more give one row per bundle and the ratio of each to the first. The
'% over' column states the threshold it counts against."""

from rtqual.answers.compare import Match, matches, pairs, ratios, settings_differ, settings_text
from rtqual.publish.views import (
    COMPARE_COLUMNS,
    PERCENTILE_NOTE,
    format_cell,
    format_table,
    ratio_cell,
    threshold_headers,
)

KEYS = [k for _, k in COMPARE_COLUMNS]  # the statistics compared, in the tables' order


def _bundle_line(name: str, data: dict) -> str:
    """One bundle's heading line: where it is, its host, start and status."""
    m = data["manifest"]
    return f"{name}: {data['path']}  (host {m.get('hostname')}, started {m.get('start')}, {m.get('status')})"


def compare_text(a: dict, b: dict, match: Match | None = None) -> str:
    """Two bundles: per paired case, A's and B's statistics and B/A; then the cases only one has."""
    both, only_a, only_b = pairs(a, b, match)
    out = [_bundle_line("A", a), _bundle_line("B", b)]
    if differ := settings_text(settings_differ([a, b])):
        out.append(differ)
    for ra, rb in both:
        case_id = ra["id"] if ra["id"] == rb["id"] else f"{ra['id']} | {rb['id']}"
        label = ra["label"] if ra["label"] == rb["label"] else f"{ra['label']} | {rb['label']}"
        sa, sb = ra["stats"], rb["stats"]
        rows = [
            ["A", *(format_cell(k, sa.get(k)) for k in KEYS)],
            ["B", *(format_cell(k, sb.get(k)) for k in KEYS)],
            ["B/A", *(ratio_cell(sa, sb, k) for k in KEYS)],
        ]
        out += [
            "",
            f"case {case_id}: {label}  (verdict A {ra.get('verdict')}, B {rb.get('verdict')})",
            format_table(["", *threshold_headers(COMPARE_COLUMNS, [ra, rb])], rows),
        ]
    for name, ids in (("A", only_a), ("B", only_b)):
        if ids:
            out += ["", f"only in {name}: {', '.join(ids)}"]
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def compare_json(a: dict, b: dict, match: Match | None = None) -> dict:
    """The `rtqual compare A B --json` document (a contract: keys are never renamed)."""
    both, only_a, only_b = pairs(a, b, match)
    return {
        "a": a["path"],
        "b": b["path"],
        "only_a": only_a,
        "only_b": only_b,
        "settings_differ": [
            {"id": d["id"], "check": d["check"], "a": d["values"][0], "b": d["values"][1]}
            for d in settings_differ([a, b])
        ],
        "pairs": [
            {
                "id": ra["id"],
                "id_b": rb["id"],
                "label_a": ra["label"],
                "label_b": rb["label"],
                "verdict_a": ra.get("verdict"),
                "verdict_b": rb.get("verdict"),
                "a": {k: ra["stats"].get(k) for k in KEYS},
                "b": {k: rb["stats"].get(k) for k in KEYS},
                "ratio_b_a": ratios(ra["stats"], rb["stats"], KEYS),
            }
            for ra, rb in both
        ],
    }


def compare_many_text(bundles: list[dict], match: Match | None = None) -> str:
    """Three or more bundles: per case, one row per bundle and the ratios of each to the first."""
    names = [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(len(bundles))]
    out = [_bundle_line(n, b) for n, b in zip(names, bundles)]
    if differ := settings_text(settings_differ(bundles), names):
        out.append(differ)
    for row in matches(bundles, match):
        first = row[0]
        assert first is not None
        rows = [[n, *(format_cell(k, r["stats"].get(k)) for k in KEYS)] for n, r in zip(names, row) if r]
        rows += [
            [f"{n}/A", *(ratio_cell(first["stats"], r["stats"], k) for k in KEYS)]
            for n, r in zip(names[1:], row[1:])
            if r
        ]
        verdicts = ", ".join(f"{n} {r.get('verdict')}" for n, r in zip(names, row) if r)
        out += ["", f"case {first['id']}: {first['label']}  (verdict {verdicts})"]
        out.append(format_table(["", *threshold_headers(COMPARE_COLUMNS, row)], rows))
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def compare_many_json(bundles: list[dict], match: Match | None = None) -> dict:
    """The `rtqual compare A B C... --json` document (a contract: keys are never renamed)."""
    return {
        "bundles": [b["path"] for b in bundles],
        "settings_differ": settings_differ(bundles),
        "cases": [
            {
                "id": row[0]["id"] if row[0] else None,
                "ids": [r["id"] if r else None for r in row],
                "labels": [r["label"] if r else None for r in row],
                "verdicts": [r.get("verdict") if r else None for r in row],
                "stats": [{k: r["stats"].get(k) for k in KEYS} if r else None for r in row],
                "ratio_to_first": [ratios(row[0]["stats"], r["stats"], KEYS) if r and row[0] else None for r in row],
            }
            for row in matches(bundles, match)
        ],
    }

"""The comparison printers (`rtqual compare A B [C...]`): bundles side by side, their cases paired by
answers.compare (--match, else id, else label; bundles of the same scenario with each other). Pure functions
of bundle views (rtqual.publish.report.bundle_view). Two bundles give the A/B/ratio table; more give one row
per bundle and the ratio of each to the first of its case. Each bundle is named with its kernel and where it
ran, what differs between the bundles and between each case's runs (policy, CPUs, transport, rate) is said,
and each case's caveats (rtqual.answers.caveats) stand under its numbers. Percentiles the samples do not
carry are dashes (the JSON keeps their values and says what each needs). The '% over' column states the
threshold it counts against."""

from rtqual.answers import caveats
from rtqual.answers.compare import (
    Match,
    bundle_labels,
    case_aspects,
    differences,
    grouped_matches,
    host_aspects,
    pairs,
    ratios,
    settings_differ,
    settings_text,
    short_kernel,
)
from rtqual.publish.views import (
    COMPARE_COLUMNS,
    PERCENTILE_NOTE,
    carried_note,
    ratio_cell,
    stat_cell,
    threshold_headers,
)
from rtqual.textfmt import clean, format_table

KEYS = [k for _, k in COMPARE_COLUMNS]  # the statistics compared, in the tables' order
HOST_SAID = ("kernel", "preemption", "virtualization")  # each bundle's heading says these


def letters(n: int) -> list[str]:
    return [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(n)]


def _bundle_lines(name: str, data: dict) -> list[str]:
    """One bundle's heading: where it is, its host, start and status; its kernel, preemption and where it ran."""
    m, a, k = data["manifest"], host_aspects(data), short_kernel(data)
    return [
        clean(f"{name}: {data['path']}  (host {m.get('hostname')}, started {m.get('start')}, {m.get('status')})"),
        clean(f"   kernel {k['kernel']} ({k['preemption']}), " + _where(a["virtualization"])),
    ]


def _where(virtualization: str) -> str:
    """Where a bundle ran, in words: its hypervisor ('QEMU (emulated, TCG)', 'KVM'), bare metal, or not known."""
    return "hypervisor not recorded" if virtualization == "?" else virtualization


def _ratio(sa: dict, sb: dict, key: str) -> str:
    """The ratio cell of a statistic, empty where either side's samples do not carry it."""
    return (
        ratio_cell(sa, sb, key)
        if caveats.carried(key, sa.get("count")) and caveats.carried(key, sb.get("count"))
        else ""
    )


def _differ_line(bundles: list[dict], names: list[str]) -> list[str]:
    """What differs between the bundles' hosts (kernel, preemption, hypervisor, CPU, ...), each value named."""
    diff = differences([host_aspects(b) for b in bundles])
    if not diff:
        return []
    return [
        clean("differs: " + "; ".join(f"{k} " + ", ".join(f"{n} {v}" for n, v in zip(names, vs)) for k, vs in diff))
    ]


def _record(data: dict, r: dict | None) -> dict | None:
    """The caveat record of a bundle's case (computed once by the bundle view)."""
    if r is None:
        return None
    return next((c for c in data.get("caveats") or [] if c["id"] == r["id"]), None)


def _case_notes(bundles: list[dict], row: list[dict | None], names: list[str]) -> list[str]:
    """Under a case's table: how its runs differ (policy, CPUs, transport, rate...), each run's caveats, and the
    percentiles too few samples carry."""
    have = [(n, b, r) for n, b, r in zip(names, bundles, row) if r]
    out = []
    diff = differences([case_aspects(r) for _, _, r in have])
    if diff:
        out.append(
            "ran differently: "
            + "; ".join(f"{k} " + ", ".join(f"{n} {v}" for (n, _, _), v in zip(have, vs)) for k, vs in diff)
        )
    for n, b, r in have:
        said = caveats.words(_record(b, r))
        if said:
            out.append(f"caveats {n}: {said}")
    out += carried_note([r["stats"] for _, _, r in have], KEYS)
    return [clean(line) for line in out]


def _settings(bundles: list[dict], names: list[str] | None = None) -> list[str]:
    differ = settings_text(settings_differ(bundles), names)
    return [clean(differ)] if differ else []


def compare_text(a: dict, b: dict, match: Match | None = None) -> str:
    """Two bundles: per paired case, A's and B's statistics and B/A; then the cases only one has."""
    both, only_a, only_b = pairs(a, b, match)
    out = [*_bundle_lines("A", a), *_bundle_lines("B", b), *_differ_line([a, b], ["A", "B"]), *_settings([a, b])]
    for ra, rb in both:
        case_id = ra["id"] if ra["id"] == rb["id"] else f"{ra['id']} | {rb['id']}"
        label = ra["label"] if ra["label"] == rb["label"] else f"{ra['label']} | {rb['label']}"
        sa, sb = ra["stats"], rb["stats"]
        rows = [
            ["A", *(stat_cell(k, sa) for k in KEYS)],
            ["B", *(stat_cell(k, sb) for k in KEYS)],
            ["B/A", *(_ratio(sa, sb, k) for k in KEYS)],
        ]
        out += [
            "",
            clean(f"case {case_id}: {label}  (verdict A {ra.get('verdict')}, B {rb.get('verdict')})"),
            format_table(["", *threshold_headers(COMPARE_COLUMNS, [ra, rb])], rows),
            *_case_notes([a, b], [ra, rb], ["A", "B"]),
        ]
    for name, ids in (("A", only_a), ("B", only_b)):
        if ids:
            out += ["", clean(f"only in {name}: {', '.join(ids)}")]
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def _json_record(data: dict, r: dict | None) -> dict | None:
    rec = _record(data, r)
    return None if rec is None else {k: rec[k] for k in ("count", "duration_ns", "percentiles", "caveats")}


def compare_json(a: dict, b: dict, match: Match | None = None) -> dict:
    """The `rtqual compare A B --json` document (a contract: keys are never renamed). The statistics keep
    every value; "qualifiers_a"/"_b" say which percentiles the samples carry and the cases' caveats."""
    both, only_a, only_b = pairs(a, b, match)
    return {
        "a": a["path"],
        "b": b["path"],
        "names": bundle_labels([a, b]),
        "hosts": [host_aspects(a), host_aspects(b)],
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
                "ran_differently": [
                    {"aspect": k, "values": vs} for k, vs in differences([case_aspects(ra), case_aspects(rb)])
                ],
                "qualifiers_a": _json_record(a, ra),
                "qualifiers_b": _json_record(b, rb),
            }
            for ra, rb in both
        ],
    }


def compare_many_text(bundles: list[dict], match: Match | None = None) -> str:
    """Three or more bundles: per case, one row per bundle that has it (bundles of one scenario paired with
    each other: answers.compare.groups) and the ratios of each to the first of the row."""
    names = letters(len(bundles))
    out = [line for n, b in zip(names, bundles) for line in _bundle_lines(n, b)]
    out += _differ_line(bundles, names) + _settings(bundles, names)
    found = grouped_matches(bundles, match)
    for row in found:
        have = [(n, r) for n, r in zip(names, row) if r]
        (n0, first), rest = have[0], have[1:]
        rows = [[n, *(stat_cell(k, r["stats"]) for k in KEYS)] for n, r in have]
        rows += [[f"{n}/{n0}", *(_ratio(first["stats"], r["stats"], k) for k in KEYS)] for n, r in rest]
        verdicts = ", ".join(f"{n} {r.get('verdict')}" for n, r in have)
        ids = " | ".join(dict.fromkeys(r["id"] for _, r in have))
        out += ["", clean(f"case {ids}: {first['label']}  (verdict {verdicts})")]
        out.append(format_table(["", *threshold_headers(COMPARE_COLUMNS, row)], rows))
        out += _case_notes(bundles, row, names)
    shown = {id(r) for row in found for r in row if r}
    for n, b in zip(names, bundles):
        alone = [r["id"] for r in b["cases"] if id(r) not in shown]
        if alone:
            out += ["", clean(f"only in {n} (no other bundle of its scenario has them): {', '.join(alone)}")]
    out += ["", PERCENTILE_NOTE]
    return "\n".join(out)


def compare_many_json(bundles: list[dict], match: Match | None = None) -> dict:
    """The `rtqual compare A B C... --json` document (a contract: keys are never renamed): a row per case of
    every bundle that another bundle of its scenario also has, None where a bundle lacks it."""
    rows = grouped_matches(bundles, match)
    shown = {id(r) for row in rows for r in row if r}
    return {
        "bundles": [b["path"] for b in bundles],
        "unmatched": [[r["id"] for r in b["cases"] if id(r) not in shown] for b in bundles],
        "names": bundle_labels(bundles),
        "hosts": [host_aspects(b) for b in bundles],
        "settings_differ": settings_differ(bundles),
        "cases": [
            {
                "id": next(r["id"] for r in row if r),
                "ids": [r["id"] if r else None for r in row],
                "labels": [r["label"] if r else None for r in row],
                "verdicts": [r.get("verdict") if r else None for r in row],
                "stats": [{k: r["stats"].get(k) for k in KEYS} if r else None for r in row],
                "ratio_to_first": [ratios(_first(row)["stats"], r["stats"], KEYS) if r else None for r in row],
                "ran_differently": [
                    {"aspect": k, "values": vs} for k, vs in differences([case_aspects(r) for r in row if r])
                ],
                "qualifiers": [_json_record(b, r) for b, r in zip(bundles, row)],
            }
            for row in rows
        ],
    }


def _first(row: list[dict | None]) -> dict:
    return next(r for r in row if r)

"""The comparison page of `rtqual compare ... --report`: the bundles named by what differs (their kernels),
what differs between them and between each case's runs, each scenario matrix side by side, every matched
case's numbers with its caveats beside them, and the overlaid figures."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from html import escape
from pathlib import Path

from rtqual.answers import caveats, compare, environment, summary
from rtqual.errors import RtqError
from rtqual.publish import views
from rtqual.publish.htmlreport.capacity import capacity_compare_html
from rtqual.publish.htmlreport.figures import _merged, _slug, hist_figure, log_hist_series, tail_series, threshold_marks
from rtqual.publish.htmlreport.page import CSS, _stat_td, _table, _write, load_bundle
from rtqual.publish.svgplot import PALETTE, Axis, Figure, Series, chart, split
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.units import format_ns


def write_compare(bundles: Sequence[Model | str | Path], out: Path, match: compare.Match | None = None) -> Path:
    """The comparison of bundles as HTML (rtqual compare --report): never recorded in any bundle."""
    bundle_mod.refuse_inputs(out, [b.path if isinstance(b, Model) else b for b in bundles], "--report")
    _write(out, render_compare([load_bundle(b) for b in bundles], match))
    return out


def _bundle_line(name: str, data: dict) -> str:
    """One bundle in the comparison's list: its name, host, kernel, where it ran (emulated, a VM, bare
    metal), start and folder, and the caveats every case of it carries."""
    m, a = data["manifest"], compare.host_aspects(data)
    host = caveats.words({"caveats": caveats.host_caveats(data.get("environment"))})
    return (
        f"<li><b>{escape(name)}</b>: host {escape(a['host'])}, kernel {escape(a['kernel'])}, "
        f"{escape(a['preemption'])}, {escape(a['virtualization'])}"
        + (f' <b class="warn">({escape(host)})</b>' if host else "")
        + f", started {escape(str(m.get('start')))} <small>({escape(data['path'])})</small></li>"
    )


def _case_caveats(data: dict, r: dict | None) -> str:
    """A case's caveats in words (emulated; governor (performance) not applied; probe failed: ...)."""
    rec = next((c for c in data.get("caveats") or [] if r and c["id"] == r["id"]), None)
    return caveats.words(rec)


def differences_html(items: list[dict[str, str]], names: list[str], table_id: str = "") -> str:
    """What differs between the bundles (or between one case's results), as a table of aspect and value per
    bundle, and what is the same in all, in one line."""
    diff = compare.differences(items)
    same = [f"{k} {v}" for k, v in items[0].items() if k not in dict(diff)] if items else []
    ident = f' id="{table_id}"' if table_id else ""
    out = []
    if diff:
        rows = [[escape(k), *(escape(v) for v in vs)] for k, vs in diff]
        out.append(_table(["differs", *names], rows, "differences").replace("<table", f"<table{ident}", 1))
    else:
        out.append(f'<p{ident} class="differences">Nothing recorded differs.</p>')
    if same:
        out.append(f"<p><small>Same in all: {escape('; '.join(same))}.</small></p>")
    return "".join(out)


def bundle_colors(row: list, names: list[str]) -> dict[str, str]:
    """One colour per bundle, the same in every figure of a comparison."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def compare_figures(row: list[dict | None], names: list[str]) -> list[Figure]:
    """One matched case across bundles: overlaid histograms (all CPUs) and tail plots, each series named by
    its bundle."""
    named = [(n, h) for n, h in zip(names, (_merged(r) for r in row)) if h is not None and h.count]
    if not named:
        return []
    first = next(r for r in row if r)
    colors = bundle_colors(row, names)
    series, worst = log_hist_series(named)
    tails = []
    for n, h in named:
        (t,) = tail_series({"0": h})
        t.name = n
        tails.append(t)
    for s in series + tails:
        s.color = colors[s.name]
    marks = threshold_marks(row)
    shown = " vs ".join(n for n, _ in named)
    return [
        part
        for fig in (
            hist_figure(f"compare-{first['id']}-histogram", f"{first['label']}: {shown}", series, worst, marks),
            Figure(
                f"compare-{first['id']}-tail",
                f"Tail: fraction above x, {first['label']}: {shown}",
                tails,
                Axis("Latency (µs, log scale)", log=True),
                Axis("Fraction above (log scale)", log=True),
                marks=marks,
            ),
        )
        for part in split(fig)
    ]


def _compare_rows(bundles: list[dict], row: list[dict | None], names: list[str]) -> str:
    """A matched case's statistics per bundle (named by what differs: its kernel) with the caveats beside the
    numbers, and each one's ratio to the first, the threshold stated; percentiles the samples do not carry
    are dashes."""
    have = [(n, b, r) for n, b, r in zip(names, bundles, row) if r]
    n0, _, first = have[0]
    head = ["", *views.threshold_headers(views.COMPARE_COLUMNS, row), "verdict", "caveats"]
    rows = [
        [escape(n), *(_stat_td(k, r["stats"].get(k), r["stats"]) for _, k in views.COMPARE_COLUMNS),
         escape(str(r.get("verdict"))), f'<span class="warn">{escape(_case_caveats(b, r))}</span>']
        for n, b, r in have
    ]  # fmt: skip
    rows += [
        [
            escape(f"{n}/{n0}"),
            *(
                escape(views.ratio_cell(first["stats"], r["stats"], k))
                if caveats.carried(k, first["stats"].get("count")) and caveats.carried(k, r["stats"].get("count"))
                else ""
                for _, k in views.COMPARE_COLUMNS
            ),
            "",
            "",
        ]
        for n, _, r in have[1:]
    ]
    note = views.carried_note([r["stats"] for _, _, r in have], [k for _, k in views.COMPARE_COLUMNS])
    return _table(head, rows, "stats") + "".join(f"<p><small>{escape(x)}</small></p>" for x in note)


def _spread_html(bundles: list[dict], row: list[dict | None], names: list[str]) -> str:
    """Whether the mean's and the max's differences between the bundles are within the run-to-run spread."""
    notes = [compare.spread_note(bundles, row, names, k, w) for k, w in (("mean_ns", "mean"), ("max_ns", "max"))]
    notes = [n for n in notes if n]
    return '<ul class="spread">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>" if notes else ""


def case_compare_section(bundles: list[dict], row: list[dict | None], names: list[str]) -> str:
    """One matched case across bundles: what differs in how it ran, its statistics, the spread notes, the
    overlaid figures."""
    first = next(r for r in row if r)
    have = [(n, r) for n, r in zip(names, row) if r]
    labels = {r["label"] for _, r in have}
    title = first["label"] if len(labels) == 1 else " | ".join(f"{n}: {r['label']}" for n, r in have)
    out = [f'<section class="case" id="case-{escape(first["id"])}">', f"<h3>Case {escape(title)}</h3>"]
    diff = compare.differences([compare.case_aspects(r) for _, r in have])
    if diff:
        out.append(
            "<p>This case ran differently: "
            + escape("; ".join(f"{k}: " + ", ".join(f"{n} {v}" for (n, _), v in zip(have, vs)) for k, vs in diff))
            + "</p>"
        )
    out.append(_compare_rows(bundles, row, names))
    out.append(_spread_html(bundles, row, names))
    out.append('<div class="figs">' + "".join(chart(f) for f in compare_figures(row, names)) + "</div>")
    out.append("</section>")
    return "\n".join(out)


# The seed papers' figures a scenario's [[matrix]] reproduces: (scenario name, matrix label) -> what to say
STUDY_FIGURES = {
    ("kek-rpi-2020", "stress"): "seed 000 Figs. 1-2: CPU stress method, standard vs RT kernel (600 MHz)",
    ("kek-rpi-2020", "frequency"): "seed 000 Figs. 3-4: CPU frequency under hackbench",
    ("kek-rpi-2020", "runtime"): "seed 000 Fig. 5: program running time, 10 vs 50 minutes",
    ("kek-rpi-2020", "sleep"): "seed 002 slides: thread sleep time (the -i interval)",
    ("kek-rpi-ioc-2020", "timer baseline"): "timer latency on the IOC's host, same load (beside Figs. 7-8)",
    ("kek-rpi-ioc-2020", "ioc 25 Hz"): "seed 000 Figs. 7-8: EPICS IOC input -> output delay, mean and σ",
}


def matrix_labels(data: dict) -> list[str]:
    """The labels of a bundle's scenario [[matrix]] tables (each a question the study asks), in file order."""
    try:
        doc = tomllib.loads(data.get("scenario_toml") or "")
    except (tomllib.TOMLDecodeError, TypeError):
        return []
    return [str(m["label"]) for m in doc.get("matrix") or [] if isinstance(m, dict) and m.get("label")]


def study_sections(bundles: list[dict], names: list[str]) -> list[str]:
    """Each scenario matrix (a question of the study: stress method, frequency, run length, IOC delay) with
    the bundles side by side: average and maximum (IOC: mean and σ) per matrix value as labelled bars, one
    colour per bundle, a table and whether each difference is within the run-to-run spread."""
    colors = bundle_colors([], names)
    questions: dict[tuple[str, str], None] = {}
    for b in bundles:
        for label in matrix_labels(b):
            questions[(str((b.get("plan") or {}).get("name")), label)] = None
    out = []
    for scenario, label in questions:
        rows: dict[str, list[dict | None]] = {}  # matrix value -> the case of each bundle
        for i, b in enumerate(bundles):
            if str((b.get("plan") or {}).get("name")) != scenario:
                continue
            for r in b["cases"]:
                if r["label"].startswith(label + " ") and (r.get("stats") or {}).get("count"):
                    rows.setdefault(r["label"][len(label) + 1 :], [None] * len(bundles))[i] = r
        rows = {_applied(cat, row, names): row for cat, row in rows.items()}
        if rows:
            out.append(study_section(bundles, names, colors, scenario, label, rows))
    return out


def _applied(cat: str, row: list[dict | None], names: list[str]) -> str:
    """A matrix value as a figure's category: 'not applied' after it where no case of it got a condition it
    asked for (a frequency the host could not set is no frequency of the numbers), a '*' where only some
    bundles' cases did not (the figure's note names them: not_applied_note)."""
    missed = [n for n, r in zip(names, row) if r and environment.not_applied(r)]
    if not missed:
        return cat
    return f"{cat} not applied" if len(missed) == len([r for r in row if r]) else f"{cat}*"


def not_applied_note(rows: dict[str, list[dict | None]], names: list[str]) -> str:
    """Under a matrix's bar figures: which bundles did not get the condition of each '*' value."""
    missed: dict[str, list[str]] = {}
    for cat, row in rows.items():
        for n, r in zip(names, row):
            if cat.endswith("*") and r and environment.not_applied(r):
                missed.setdefault(n, []).append(cat[:-1])
    return "; ".join(f"* not applied in {n}: {', '.join(cats)}" for n, cats in missed.items())


def _ran_differently(have: list[tuple[str, dict]]) -> str:
    """How the bundles' results of one case ran differently ('frequency: std 750MHz, rt 750MHz not applied')."""
    diff = compare.differences([compare.case_aspects(r) for _, r in have])
    return "; ".join(f"{k}: " + ", ".join(f"{n} {v}" for (n, _), v in zip(have, vs)) for k, vs in diff)


def _value_bars(names: list[str], colors: dict, rows: dict, key: str, what: str, label: str) -> Figure:
    """One statistic of a matrix's cases as bars: one group per matrix value, one bar per bundle, labelled."""
    series = []
    for i, name in enumerate(names):
        vals = [((row[i] or {}).get("stats") or {}).get(key) for row in rows.values()]
        if any(v is not None for v in vals):
            ys = [(v or 0) / 1000 for v in vals]
            shown = [format_ns(v) if v is not None else "-" for v in vals]
            series.append(Series(name, list(range(len(rows))), ys, labels=shown, color=colors[name]))
    return Figure(
        f"study-{_slug(label)}-{key}",
        f"{what} per {label}: {' vs '.join(s.name for s in series)}",
        series,
        Axis(label),
        Axis(f"{what} (µs)", lo=0),
        categories=list(rows),
        width=540,
        note=not_applied_note(rows, names),
    )


def _delay_histogram(names: list[str], colors: dict, label: str, cat: str, row: list[dict | None]) -> Figure | None:
    """An IOC case's delay histograms across the bundles, each named with its mean and σ (seed 000 Figs. 7-8)."""
    named, own = [], []
    for name, r in zip(names, row):
        h = _merged(r)
        if r and h is not None and h.count:
            st = r["stats"]
            named.append((f"{name}: mean {format_ns(st.get('mean_ns'))}, σ {format_ns(st.get('stddev_ns'))}", h))
            own.append(colors[name])
    series, worst = log_hist_series(named)
    for s, color in zip(series, own):
        s.color = color
    title = f"{label} {cat}: delay histograms"
    return (
        hist_figure(f"study-{_slug(label)}-{_slug(cat)}", title, series, worst, threshold_marks(row))
        if series
        else None
    )


def study_section(bundles, names, colors, scenario: str, label: str, rows: dict[str, list[dict | None]]) -> str:
    """One matrix of the study across the bundles (see study_sections)."""
    used = [i for i in range(len(bundles)) if any(row[i] for row in rows.values())]
    response = any(summary.is_response(r) for row in rows.values() for r in row if r)
    stats = [("mean_ns", "Mean delay"), ("stddev_ns", "Standard deviation σ")] if response else []
    stats = stats or [("mean_ns", "Average latency"), ("max_ns", "Maximum latency")]
    figs: list[Figure | None] = [_value_bars(names, colors, rows, key, what, label) for key, what in stats]
    if response:
        figs += [_delay_histogram(names, colors, label, cat, row) for cat, row in rows.items()]
    head = ["", *(f"{names[i]} {w}" for i in used for w in ("mean", "σ", "max", "count")), "ran differently", "caveats"]
    table, notes = [], []
    for cat, row in rows.items():
        cells = [escape(cat)]
        for i in used:
            st = (row[i] or {}).get("stats") or {}
            cells += [_stat_td(k, st.get(k)) if row[i] else "" for k in ("mean_ns", "stddev_ns", "max_ns", "count")]
        said = "; ".join(f"{names[i]}: {w}" for i in used if (w := _case_caveats(bundles[i], row[i])))
        table.append([*cells, escape(_ran_differently([(names[i], r) for i in used if (r := row[i])])),
                      f'<span class="warn">{escape(said)}</span>'])  # fmt: skip
        for key, what in (("mean_ns", "mean"), ("max_ns", "max")):
            note = compare.spread_note(bundles, row, names, key, what)
            notes += [f"{cat}: {note}"] if note else []
    ref = STUDY_FIGURES.get((scenario, label), f"scenario {scenario}, matrix '{label}'")
    out = [f'<section class="study" id="study-{escape(_slug(scenario + "-" + label))}">']
    out.append(f"<h2>{escape(label)}: {escape(ref)}</h2>")
    out.append('<div class="figs">' + "".join(chart(f) for f in figs if f) + "</div>")
    out.append(_table(head, table, "study"))
    if notes:
        out.append('<ul class="spread">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    out.append("</section>")
    return "\n".join(out)


def _cases_ran(bundles: list[dict], match: compare.Match | None) -> list[dict[str, str]]:
    """Per bundle, how its matched cases ran in each aspect that differs in some matched case (policy, CPUs,
    transport, rate...): 'what differs between the bundles' never says nothing differs when a case's runs
    did."""
    try:
        rows = compare.grouped_matches(bundles, match)
    except RtqError:
        return [{} for _ in bundles]
    seen: list[dict[str, list[str]]] = [{} for _ in bundles]
    for row in rows:
        have = [(i, r) for i, r in enumerate(row) if r]
        for aspect, values in compare.differences([compare.case_aspects(r) for _, r in have]):
            for (i, _), v in zip(have, values):
                seen[i].setdefault(aspect, [])
                seen[i][aspect] += [] if v in seen[i][aspect] else [v]
    aspects = {a for s in seen for a in s}
    return [{f"case {a}": ", ".join(s.get(a) or ["-"]) for a in sorted(aspects)} for s in seen]


def render_compare(bundles: list[dict], match: compare.Match | None = None) -> str:
    """`rtqual compare ... --report FILE`: the bundles named, what differs between them, each scenario matrix
    side by side (the study's questions), then every matched case overlaid across the bundles with the
    statistics of each, their ratio to the first and whether differences are within the run-to-run spread."""
    names = compare.bundle_labels(bundles)
    out = [f"<h1>rtqual comparison: {escape(' vs '.join(names))}</h1>", '<ul id="bundles">']
    out += [_bundle_line(n, b) for n, b in zip(names, bundles)]
    out.append("</ul><h2>What differs between the bundles</h2>")
    settings = compare.settings_differ(bundles)  # the tunable settings advise checks, those that differ
    ran = _cases_ran(bundles, match)
    aspects = [
        compare.host_aspects(b) | {d["id"]: d["values"][i] for d in settings} | ran[i] for i, b in enumerate(bundles)
    ]
    out.append(differences_html(aspects, names, "differences"))
    out.append(capacity_compare_html(bundles, names))
    out += study_sections(bundles, names)
    for group in compare.groups(bundles):
        sub, sub_names = [bundles[i] for i in group], [names[i] for i in group]
        here = {x: y for x, y in (match or {}).items() if compare.find_case(sub[0], x)}
        try:
            rows = compare.matches(sub, here)
        except RtqError as e:
            out.append(f'<p class="missing">{escape(str(e))}</p>')
            continue
        out.append(f"<h2>Cases side by side: {escape(' vs '.join(sub_names))}</h2>")
        out += [case_compare_section(sub, row, sub_names) for row in rows]
    out.append(f"<p><small>{escape(views.PERCENTILE_NOTE)}</small></p>")
    body = "\n".join(out)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>rtqual comparison</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )

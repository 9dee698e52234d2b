"""The bundle page of `rtqual report`: one self-contained HTML file per set of bundles (styles and figures
inline, nothing fetched), and its figures as PNG/SVG files. load_bundle() takes what the page draws from the
one bundle view (views.bundle_view) and the bundle's model (histograms per CPU, progress records); everything
after it is a pure function of that data. A case whose files are missing or corrupt still appears, saying
what is missing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path

from rtqual.answers import caveats, environment, summary
from rtqual.answers.answer import answers
from rtqual.answers.evidence import spikes
from rtqual.answers.requirements import describe
from rtqual.answers.verdict import NOT_JUDGED, headline
from rtqual.errors import RtqError
from rtqual.publish import views
from rtqual.publish.hostview import host_rows
from rtqual.publish.htmlreport.capacity import capacity_html
from rtqual.publish.htmlreport.figures import OverTime, bundle_figures, case_figures, figures
from rtqual.publish.svgplot import chart
from rtqual.publish.tail import tail_section
from rtqual.results import bundle as bundle_mod
from rtqual.results.blockmax import BlockMaxima
from rtqual.results.bundle import Model, names
from rtqual.results.hist import Histogram
from rtqual.units import format_ns


def load_bundle(bundle: Model | str | Path, tail: bool = False) -> dict:
    """What the report draws of a bundle (its model, or a path read into one): the one bundle view of every
    page (views.bundle_view: the model's keys, facts, tuning, plan, environment, caveat records, histograms),
    each damaged result back as a stand-in that says so, and per case its histograms ("hists": {cpu:
    Histogram}), its maximum over time ("over_time": OverTime, folded from the progress records in bounded
    memory; "progress" stays empty) and the problems met ("missing": [...]); the bundle's problems (each
    damaged file, the cut case)."""
    model = bundle if isinstance(bundle, Model) else bundle_mod.load(bundle)
    data = views.bundle_view(model)
    data["cases"] = [{**r} for r in model.cases] + [{**r} for r in model.stand_ins]
    for r in data["cases"][: len(model.cases)]:
        r.setdefault("missing", [])
        r["hists"], r["progress"] = data["cpu_hists"].get(r["id"], {}), []
        for name in (names.HIST, names.STREAM):
            if model.bad(names.case_file(r["id"], name)):
                r["missing"].append(f"{name} damaged (checksum differs): not drawn")
        if r["id"] not in data["cpu_hists"] and (r.get("stats") or {}).get("count"):
            r["missing"].append("hist.json (no histogram figures)")
        r["over_time"] = over = OverTime()
        r["blocks"] = blocks = BlockMaxima() if tail else None  # per-second maxima: the tail section (tail.py)
        try:
            for rec in model.records(r["id"], marks=('"progress"',)):  # a day is 86 400 records
                over.add(rec)
                if blocks is not None:
                    blocks.feed(rec)
        except bundle_mod.Unreadable:
            r["missing"].append("stream.jsonl (no figure over time)")
    data["advice"] = advice_of(model)
    data["scenario_toml"] = model.text(names.SCENARIO)
    data["problems"] = [f"damaged: {d}" for d in model.damage]
    if model.manifest.get("status") == "running":
        cut = f" during case {model.cut}" if model.cut else ""
        data["problems"].append(
            f"the run did not finish (status running): rtqual was killed{cut}; later cases are missing"
        )
    return data


# ---- HTML (pure) ----

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 48px;color:#222}
h1{font-size:22px} h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd} h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0} td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child,.host td,.host th{text-align:left}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
.banner{padding:10px 14px;border-radius:6px;font-size:16px;font-weight:600}
.pass{background:#e3f5e1;color:#145a14} .fail{background:#fde2e1;color:#8a1010}
.inconclusive,.skip{background:#fff4d6;color:#6b4b00} .error{background:#f0e1f5;color:#5a145a}
.completed{background:#eceff1;color:#263238} #answer li{margin:2px 0} .yes{color:#145a14} .no{color:#8a1010}
.undecided{color:#6b4b00}
.chart .title{font-weight:600;font-size:13px} .chart .tick{font-size:11px;fill:#555}
.chart .axis-label{font-size:12px} .chart .legend{font-size:11px}
.chart .frame{fill:none;stroke:#999} .chart .grid{stroke:#eee}
.figs{display:flex;flex-wrap:wrap;gap:12px} .warn{color:#8a4b00} .missing{color:#8a1010}
.chart .note{font-size:11px;fill:#555} .chart .mark{stroke:#555;stroke-dasharray:4 3}
.chart .mark-label,.chart .bar-label{font-size:10px;fill:#333} .chart .legend-box{fill:#fff;fill-opacity:.85}
table.summary td{overflow-wrap:anywhere} .caveats li{color:#8a4b00}
"""


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def _stat_td(key: str, value, stats: dict | None = None) -> str:
    """A statistics cell: the formatted value, the exact one in data-value for tests and tools; with `stats`
    (its row), a percentile the row's samples do not carry is a dash with the samples it needs."""
    raw = "" if value is None else json.dumps(value)
    if stats is not None and not caveats.carried(key, stats.get("count")):
        need = f"{caveats.needed(key):,}"
        attrs = f'data-key="{key}" data-value="{escape(raw)}" title="needs {need} samples"'
        return f"<span {attrs}>- <small>(N≥{need})</small></span>"
    return f'<span data-key="{key}" data-value="{escape(raw)}">{escape(views.format_cell(key, value))}</span>'


def stats_table(r: dict) -> str:
    rows = [
        [escape(views.cpu_name(r, cpu)), *(_stat_td(k, s.get(k), s) for _, k in views.STAT_COLUMNS)]
        for cpu, s in sorted((r.get("per_cpu") or {}).items(), key=lambda kv: int(kv[0]))
    ]
    stats = r.get("stats") or {}
    rows.append(["all", *(_stat_td(k, stats.get(k), stats) for _, k in views.STAT_COLUMNS)])
    return _table(["", *views.threshold_headers(views.STAT_COLUMNS, [r])], rows, "stats")


HOST_KINDS = ("emulated", "virtual", "container")  # caveats the bundle's Environment section says once


def case_section(r: dict, record: dict | None = None, env_case: dict | None = None) -> str:
    """One case: its verdict, its caveats (record: rtqual.answers.caveats; the host's are said once above),
    requirements, statistics, stages, lines, spikes, loads and conditions (with env_case, its environment: the
    temperature at its start and end), figures and tail."""
    out = [f'<section class="case" id="case-{escape(r["id"])}">']
    out.append(f"<h2>Case {escape(r['id'])}: {escape(r['label'])}</h2>")
    verdict = r.get("verdict") or "inconclusive"
    out.append(f'<p class="banner {verdict}">{escape(headline(verdict, r.get("reason")))}</p>')
    own = [c for c in (record or {}).get("caveats") or [] if c["kind"] not in HOST_KINDS]
    if own:
        out.append('<ul class="caveats">' + "".join(f"<li>{escape(c['text'])}</li>" for c in own) + "</ul>")
    for m in r.get("missing") or []:
        out.append(f'<p class="missing">missing: {escape(m)}</p>')
    if r.get("requirement_verdicts"):
        out.append(requirements_table(r["requirement_verdicts"]))
    out.append(stats_table(r))
    stages = views.stage_table(r)
    if stages:
        out.append(f"<pre>{escape(stages)}</pre>")
    lines = views.ioc_lines(r) + views.noise_lines(r) + views.network_lines(r)
    if lines:
        out.append("<pre>" + escape("\n".join(lines)) + "</pre>")
    out.append(spikes_html(r))
    loads = ", ".join(ld.get("name") or ld.get("type") or "?" for ld in r.get("loads") or []) or "none"
    out.append(f"<p>Loads: {escape(loads)}. Conditions: {escape(_conditions_text(r))}.</p>")
    hs = r.get("host_samples") or {}
    if hs:
        temp = f"{hs['temp_max_c']} °C max" if hs.get("temp_max_c") is not None else "no temperature sensor"
        out.append(f"<p>Host during the case: {escape(temp)}, load average max {hs.get('loadavg1_max')}.</p>")
    start_end = views.temperature_line(env_case)
    if start_end:
        out.append(f"<p>{escape(start_end[0].upper() + start_end[1:])}.</p>")
    out.append('<div class="figs">' + "".join(chart(f) for f in case_figures(r)) + "</div>")
    out.append(tail_section(r))
    for w in r.get("warnings") or []:
        out.append(f'<p class="warn">warning: {escape(str(w))}</p>')
    out.append("</section>")
    return "\n".join(out)


def spikes_html(r: dict, shown: int = 50) -> str:
    """A traced case's spikes: what was traced, then a table of the first `shown` spikes with what held the
    CPU in words, largest first ("" for a case run without --trace)."""
    lines = views.spike_lines(r, shown=0)
    if not lines:
        return ""
    found = r.get("spikes") or []
    rows = [
        [
            escape(f"{int(s.get('time_ns') or 0) / 1e9:.6f} s"),
            escape(str(s.get("cpu"))),
            escape(format_ns(s.get("latency_ns"))),
            escape("; ".join(spikes.culprit_words(c) for c in (s.get("culprits") or [])[:4]) or "no culprit found"),
        ]
        for s in found[:shown]
    ]
    more = f"<p>{len(found) - shown} more spikes in cases/{escape(r['id'])}/spikes/.</p>" if len(found) > shown else ""
    table = (
        _table(["time (CLOCK_MONOTONIC)", "CPU", "latency", "held by (largest first)"], rows, "spikes") if rows else ""
    )
    return f"<h3>Spikes</h3><pre>{escape(chr(10).join(lines))}</pre>{table}{more}"


def _conditions_text(r: dict) -> str:
    changes = (r.get("conditions") or {}).get("changes") or []
    if not changes:
        return "none"
    return "; ".join(
        f"{c.get('condition')} {c.get('after')}" + ("" if c.get("applied") else f" (not applied: {c.get('reason')})")
        for c in changes
    )


def requirements_table(verdicts: list[dict]) -> str:
    rows = [[escape(v["requirement"]), escape(v["verdict"]), escape(describe(v))] for v in verdicts]
    return _table(["requirement", "verdict", "measured"], rows, "requirements")


def summary_html(data: dict) -> str:
    """The bundle's summary: one row per case, or the seed paper's layout its scenario names, as an HTML table
    whose cells wrap (no horizontal scroll: the network column is words), a flags column from each case's
    caveats and the legend under it."""
    cases = [r for r in data["cases"] if "missing" not in r or r.get("stats")]
    table = data.get("table") or "cases"
    flags = {c["id"]: caveats.flags(c) for c in data.get("caveats") or []}
    if table != "cases":
        title, head, rows = views.paper_cells(cases, table, flags)
        notes = [title]
    else:
        head, rows, notes = views.cases_cells(cases, flags)
        thr = views.threshold_text(cases)
        notes += [f"%>thr: share of samples over {thr}"] if thr else []
    legend = caveats.legend("".join(flags.values()))
    notes += [legend] if legend else []
    cells = [[escape(c) for c in row] for row in rows]
    return _table(head, cells, "summary") + "".join(f"<p><small>{escape(n)}</small></p>" for n in notes)


def environment_html(env: dict | None) -> str:
    """The short Environment section near the top: what the hypervisor, container and each case's
    conditions mean for the numbers (empty without an environment)."""
    if env is None:
        return ""
    items = "".join(f"<li>{escape(s)}</li>" for s in environment.sentences(env))
    return f'<h2>Environment</h2><ul id="environment">{items}</ul>'


def answer_section(data: dict, env_lines: Sequence[str] = ()) -> str:
    """The report's opening: one line per question the run answers (rtqual.answers.answer), counted on the
    cases' histograms, then env_lines (where it was measured and what that means for the numbers)."""
    hists = {r["id"]: Histogram.merged(r["hists"].values()) for r in data["cases"] if r.get("hists")}
    items = answers([r for r in data["cases"] if "missing" not in r or r.get("stats")], hists)
    if not items and not env_lines:
        return ""
    rows = [
        f'<li class="{escape(a["answer"])}"><b>{escape(a["question"])}: {escape(a["answer"])}</b> — '
        f"{escape(a['evidence'])}</li>"
        for a in items
    ]
    rows += [f"<li>{escape(line)}</li>" for line in env_lines]
    return '<h2>Answer</h2><ul id="answer">' + "".join(rows) + "</ul>"


def bundle_section(data: dict) -> str:
    m = data["manifest"]
    verdict = m.get("verdict") or "inconclusive"
    out = [f"<h1>rtqual report: {escape(str(m.get('hostname')))}, {escape(str(m.get('start')))}</h1>"]
    env = data.get("environment")
    out.append(answer_section(data, environment.host_sentences(env) if env else ()))
    word = f"COMPLETED — {NOT_JUDGED}" if verdict == "completed" else verdict.upper()
    out.append(f'<p class="banner {verdict}" id="verdict">{escape(word)} ({escape(str(m.get("status")))})</p>')
    reasons = [
        f"{r['id']}: {r.get('verdict')} - {r.get('reason')}"
        for r in data["cases"]
        if r.get("verdict") not in ("pass", "completed")
    ]
    if reasons:
        out.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in reasons) + "</ul>")
    for cut in data.get("problems") or []:
        out.append(f'<p class="missing">{escape(cut)}</p>')
    out.append(environment_html(data.get("environment")))
    lines = summary.capability(data["cases"])
    if lines:
        out.append('<h2>Capability summary</h2><ul id="capability">')
        out += [f"<li>{escape(s)}</li>" for s in lines]
        out.append("</ul>")
    if data.get("capacity"):
        out.append(capacity_html(data["capacity"]))
    out.append("<h2>Summary</h2>" + summary_html(data))
    figs = bundle_figures(data["cases"])
    if figs:
        out.append('<div class="figs">' + "".join(chart(f) for f in figs) + "</div>")
    out.append("<h2>Host</h2>")
    facts = data.get("facts")
    if facts:
        out.append(_table(["fact", "value"], [[escape(a), escape(b)] for a, b in host_rows(facts)], "host"))
    else:
        out.append('<p class="missing">missing: host/facts-before.json</p>')
    out.append("<h2>How to reproduce</h2><pre>" + escape(" ".join(map(str, m.get("argv") or []))) + "</pre>")
    if data.get("scenario_toml"):
        out.append("<pre>" + escape(data["scenario_toml"]) + "</pre>")
    records = {c["id"]: c for c in data.get("caveats") or []}
    env_cases = {c.get("id"): c for c in (data.get("environment") or {}).get("cases") or [] if isinstance(c, dict)}
    out += [case_section(r, records.get(r["id"]), env_cases.get(r["id"])) for r in data["cases"]]
    out.append(what_to_change_html(data.get("advice")))
    out.append(f"<p><small>{escape(views.PERCENTILE_NOTE)}</small></p>")
    return "\n".join(out)


def render(bundles: list[dict]) -> str:
    """The whole report: one section per bundle; one HTML file with everything inline."""
    title = "rtqual report" + (f": {bundles[0]['manifest'].get('hostname')}" if len(bundles) == 1 else "")
    body = "\n<hr>\n".join(bundle_section(b) for b in bundles)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def write_images(bundles: list[dict], folder: Path) -> list[Path]:
    """Each figure as SVG (the report's own drawing) and PNG (matplotlib), for papers and slides."""
    from rtqual.publish.svgplot import to_png

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for i, data in enumerate(bundles):
        prefix = f"{i + 1}-" if len(bundles) > 1 else ""
        for fig in figures(data):
            svg = folder / f"{prefix}{fig.slug}.svg"
            bundle_mod.write_text(svg, chart(fig) + "\n")
            png = folder / f"{prefix}{fig.slug}.png"
            to_png(fig, png)
            written += [svg, png]
    return written


def write_report(
    bundles: Sequence[Model | str | Path],
    out: Path,
    png_dir: Path | None = None,
    tail: bool = False,
    shadows: Sequence[dict[str, list[tuple[str, Histogram]]]] | None = None,
) -> Path:
    """Read the bundles (models, or paths read into models), write the HTML report (and the images); returns
    the report's path. Written into the folder of the one bundle reported, as its report.html, it is that
    bundle's own and recorded in its manifest; anywhere else it changes no bundle. With `tail` (rtqual report,
    not the end of a run: scipy stays out of the measuring process), each case of 10 minutes or more gets
    its tail section (publish/tail.py). `shadows`, one per bundle: {case id: [(name, Histogram)]}, earlier runs'
    histograms drawn grey behind the case's own (rtqual.publish.store.shadows)."""
    own = _own_report(bundles, out)
    inputs = [b.path if isinstance(b, Model) else b for b in bundles]
    if own is None:
        bundle_mod.refuse_inputs(out, inputs, "report")
    if png_dir is not None:
        bundle_mod.refuse_inputs(png_dir, inputs, "--png")
    views = [load_bundle(b, tail) for b in bundles]
    for data, grey in zip(views, shadows or []):
        for r in data["cases"]:
            r["shadows"] = grey.get(r.get("id"), [])
    _write(out, render(views), own=own)
    if png_dir is not None:
        write_images(views, png_dir)
    return out


def _own_report(bundles: Sequence[Model | str | Path], out: Path) -> Path | None:
    """The bundle whose own report.html `out` is (one bundle reported into its own folder), or None."""
    if len(bundles) != 1 or out.name != names.REPORT:
        return None
    b = bundles[0]
    root = b.path if isinstance(b, Model) else Path(b)
    return root if out.resolve() == (root / names.REPORT).resolve() else None


def _write(out: Path, html: str, own: Path | None = None) -> None:
    try:
        if own is not None:
            bundle_mod.write_own(own, names.REPORT, html)
        else:
            bundle_mod.write_text(out, html)
    except OSError as e:
        raise RtqError(f"{out}: cannot write the report ({e.strerror or e})") from None


def advice_of(model: Model) -> tuple[list[dict], list[dict]]:
    """What to change on the bundle's host (rtqual.answers.advice.advise.bundle_advice): the findings and effects of
    `advise --measure`, else the checks over the host facts the run recorded; and each IOC case's path
    (rtqual.answers.advice.iocpath: `ioc-threads`) where it has something to change."""
    from rtqual.answers.advice import advise, iocpath

    findings, measured = advise.bundle_advice(model.plan, model.facts("before"), model.tuning(), list(model.cases))
    ioc = [f for r in model.cases if (f := iocpath.case_finding(model, r, [])) and f["severity"] != "info"]
    return advise.ranked([*findings, *ioc]), measured


def what_to_change_html(advice: tuple[list[dict], list[dict]] | None) -> str:
    """The report's last section: each finding's fix, blockers first, with its measured effect."""
    from rtqual.publish import advise

    findings, measured = advice or ([], [])
    if not findings:
        return '<h2 id="what-to-change">What to change</h2><p>nothing found in the recorded host facts</p>'
    items = "".join(f"<li>{escape(line)}</li>" for line in advise.what_to_change(findings, measured))
    return f'<h2 id="what-to-change">What to change</h2><ul class="advice">{items}</ul>'

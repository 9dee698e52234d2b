"""`rtqual report`: one self-contained HTML file per set of bundles (styles and figures inline, nothing
fetched), and the same figures as PNG/SVG files for papers and slides.

load_bundle() takes what the figures need from a bundle's model (results, histograms, progress records, host
facts); everything after it is a pure function of that data. A case whose files are missing or corrupt
still appears, saying what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path

from rtqual.answers import compare, spikes, summary
from rtqual.answers.requirements import describe
from rtqual.errors import RtqError
from rtqual.publish import views
from rtqual.publish.hostview import host_rows
from rtqual.publish.svgplot import Axis, Figure, Series, chart
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model, names
from rtqual.results.hist import Histogram, highest_equivalent
from rtqual.units import format_ns

ENVELOPE_POINTS = 2000  # max-over-time figures: at most this many min/max buckets, every spike kept
HIST_BINS = 400  # OSADL-style histograms: at most this many linear bins per CPU


def load_bundle(bundle: Model | str | Path) -> dict:
    """What the report draws of a bundle (its model, or a path read into one): the model's keys, each
    damaged result back as a stand-in that says so, and per case its histograms ("hists": {cpu: Histogram}),
    its maximum over time ("over_time": OverTime, folded from the progress records in bounded memory;
    "progress" stays empty) and the problems met ("missing": [...]); host facts before the run; the
    bundle's problems (each damaged file, the cut case)."""
    model = bundle if isinstance(bundle, Model) else bundle_mod.load(bundle)
    data: dict = {**model.as_dict(), "cases": [{**r} for r in model.cases] + [{**r} for r in model.stand_ins]}
    for r in data["cases"][: len(model.cases)]:
        r.setdefault("missing", [])
        r["hists"], r["progress"] = {}, []
        for name in (names.HIST, names.STREAM):
            if model.bad(names.case_file(r["id"], name)):
                r["missing"].append(f"{name} damaged (checksum differs): not drawn")
        try:
            r["hists"] = {str(cpu): Histogram.from_record(rec) for cpu, rec in model.hists(r["id"]).items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            if (r.get("stats") or {}).get("count"):
                r["missing"].append("hist.json (no histogram figures)")
        r["over_time"] = over = OverTime()
        try:
            for rec in model.records(r["id"], marks=('"progress"',)):  # a day is 86 400 records
                over.add(rec)
        except bundle_mod.Unreadable:
            r["missing"].append("stream.jsonl (no figure over time)")
    data["facts"] = model.facts("before")
    data["advice"] = advice_of(model)
    data["scenario_toml"] = model.text(names.SCENARIO)
    data["problems"] = [f"damaged: {d}" for d in model.damage]
    if model.manifest.get("status") == "running":
        cut = f" during case {model.cut}" if model.cut else ""
        data["problems"].append(
            f"the run did not finish (status running): rtqual was killed{cut}; later cases are missing"
        )
    return data


# ---- figure data (pure) ----


def hist_series(hists: dict[str, Histogram]) -> tuple[list[Series], int]:
    """Per CPU, counts in equal-width latency bins (µs), as stepped lines; and the worst case in ns."""
    worst = max((h.max_ns for h in hists.values() if h.count), default=0)
    if not worst:
        return [], 0
    width_ns = max(1000, -(-worst // HIST_BINS // 1000) * 1000)  # whole microseconds
    nbins = worst // width_ns + 1
    out = []
    for cpu, h in sorted(hists.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1):
        bins = [0] * nbins
        for i, c in h.counts.items():
            bins[min(highest_equivalent(i), h.max_ns) // width_ns] += c
        xs = [b * width_ns / 1000 for b in range(nbins + 1)]
        ys = [max(c, 0.5) for c in bins] + [0.5]
        out.append(Series(f"cpu{cpu}", xs, ys, step=True))
    return out, worst


def tail_series(hists: dict[str, Histogram]) -> list[Series]:
    """Fraction of samples above x (µs), per CPU and for all CPUs, log-log."""
    merged = Histogram()
    for h in hists.values():
        merged = merged.merge(h)
    out = []
    named = [(f"cpu{c}", h) for c, h in sorted(hists.items())] + ([("all", merged)] if len(hists) > 1 else [])
    for name, h in named:
        if not h.count:
            continue
        xs, ys, seen = [], [], 0
        for i in sorted(h.counts):
            seen += h.counts[i]
            above = h.count - seen
            if above <= 0:
                break
            xs.append(min(highest_equivalent(i), h.max_ns) / 1000)
            ys.append(above / h.count)
        xs.append(h.max_ns / 1000)
        ys.append(1 / h.count)  # the worst sample: one in count
        out.append(Series(name, xs, ys))
    return out


def envelope(points: list[tuple[float, float]], limit: int = ENVELOPE_POINTS) -> tuple[list, list, list]:
    """(times, max, min) of at most `limit` buckets over (time, value) points: every spike stays visible."""
    if len(points) <= limit:
        return [p[0] for p in points], [p[1] for p in points], [p[1] for p in points]
    per = -(-len(points) // limit)
    xs, hi, lo = [], [], []
    for k in range(0, len(points), per):
        chunk = points[k : k + per]
        xs.append(chunk[0][0])
        hi.append(max(v for _, v in chunk))
        lo.append(min(v for _, v in chunk))
    return xs, hi, lo


def time_unit(progress: list[dict]) -> tuple[str, float]:
    """The time axis' unit for a run of this length: (name, seconds per unit)."""
    span_s = max((rec.get("elapsed_ns", 0) for rec in progress), default=0) / 1e9
    return ("h", 3600.0) if span_s > 3 * 3600 else ("min", 60.0) if span_s > 600 else ("s", 1.0)


def max_over_time_series(progress: list[dict]) -> list[Series]:
    """The maximum of each progress interval (about 1 s) per CPU, in µs over time; a min/max band
    where downsampled."""
    over = OverTime()
    for rec in progress:
        over.add(rec)
    return over.series()


class OverTime:
    """The maximum-over-time figure's data, fed one progress record at a time in bounded memory:
    per CPU at most `limit` buckets of (first time, max, min) of the interval maxima. When a CPU's
    buckets exceed the limit, neighbours merge pairwise and each later bucket takes twice as many
    records, so a day of records costs what 2000 do and every spike stays visible."""

    def __init__(self, limit: int = ENVELOPE_POINTS):
        self.limit = limit
        self.span_ns: float = 0
        self.buckets: dict[str, list[list[float]]] = {}  # cpu -> [[t_ns, hi_us, lo_us, records], ...]
        self.per: dict[str, int] = {}  # cpu -> records per bucket

    def add(self, rec: dict) -> None:
        """Fold one progress record in."""
        t_ns: float = rec.get("elapsed_ns", 0) if isinstance(rec.get("elapsed_ns"), int | float) else 0
        self.span_ns = max(self.span_ns, t_ns)
        for c in rec.get("cpus") or []:
            if not isinstance(c, dict) or not isinstance(c.get("window_max_ns"), int | float) or not c.get("count"):
                continue
            cpu, v_us = str(c.get("cpu")), c["window_max_ns"] / 1000
            b, per = self.buckets.setdefault(cpu, []), self.per.setdefault(cpu, 1)
            if b and b[-1][3] < per:
                last = b[-1]
                last[1], last[2], last[3] = max(last[1], v_us), min(last[2], v_us), last[3] + 1
            else:
                b.append([t_ns, v_us, v_us, 1])
            if len(b) > self.limit:
                self.buckets[cpu] = [_merge(b[k : k + 2]) for k in range(0, len(b), 2)]
                self.per[cpu] = 2 * per

    def unit(self) -> tuple[str, float]:
        """The time axis' unit for the span seen: (name, seconds per unit)."""
        return time_unit([{"elapsed_ns": self.span_ns}])

    def series(self) -> list[Series]:
        """Per CPU: bucket maxima over time (in self.unit()), with the minima as a band once merged."""
        per_s = self.unit()[1]
        out = []
        for cpu, b in sorted(self.buckets.items()):
            xs = [p[0] / 1e9 / per_s for p in b]
            band = [p[2] for p in b] if self.per[cpu] > 1 else None
            out.append(Series(f"cpu{cpu}", xs, [p[1] for p in b], band=band))
        return out


def _merge(pair: list[list[float]]) -> list[float]:
    """One bucket from one or two neighbours: first time, max, min, records."""
    return [pair[0][0], max(p[1] for p in pair), min(p[2] for p in pair), sum(p[3] for p in pair)]


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
.chart .title{font-weight:600;font-size:13px} .chart .tick{font-size:11px;fill:#555}
.chart .axis-label{font-size:12px} .chart .legend{font-size:11px}
.chart .frame{fill:none;stroke:#999} .chart .grid{stroke:#eee}
.figs{display:flex;flex-wrap:wrap;gap:12px} .warn{color:#8a4b00} .missing{color:#8a1010}
"""


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def _stat_td(key: str, value) -> str:
    """A statistics cell: the formatted value, the exact one in data-value for tests and tools."""
    raw = "" if value is None else json.dumps(value)
    return f'<span data-key="{key}" data-value="{escape(raw)}">{escape(views.format_cell(key, value))}</span>'


def stats_table(r: dict) -> str:
    rows = [
        [f"cpu{cpu}", *(_stat_td(k, s.get(k)) for _, k in views.STAT_COLUMNS)]
        for cpu, s in sorted((r.get("per_cpu") or {}).items(), key=lambda kv: int(kv[0]))
    ]
    rows.append(["all", *(_stat_td(k, (r.get("stats") or {}).get(k)) for _, k in views.STAT_COLUMNS)])
    return _table(["", *(h for h, _ in views.STAT_COLUMNS)], rows, "stats")


def case_figures(r: dict) -> list[Figure]:
    """The figures of one case: histogram per CPU, tail, maximum over time, IOC stages."""
    figs = []
    series, worst = hist_series(r.get("hists") or {})
    if series:
        figs.append(
            Figure(
                f"{r['id']}-histogram",
                f"Latency histogram ({r['label']})",
                series,
                Axis(f"Latency (us), worst case {format_ns(worst)}"),
                Axis("Number of samples", log=True, lo=0.5),
            )
        )
        figs.append(
            Figure(
                f"{r['id']}-tail",
                "Tail: fraction of samples above x",
                tail_series(r["hists"]),
                Axis("Latency (us)", log=True),
                Axis("Fraction above", log=True),
            )
        )
    over = r.get("over_time")
    if not isinstance(over, OverTime):  # a case given as progress records (tests, tools)
        over = OverTime()
        for rec in r.get("progress") or []:
            over.add(rec)
    over_time = over.series()
    if any(len(s.xs) > 1 for s in over_time):  # one progress record is no course over time
        figs.append(
            Figure(
                f"{r['id']}-max-over-time",
                "Maximum per interval over time",
                over_time,
                Axis(f"Time ({over.unit()[0]})"),
                Axis("Maximum latency (us)", log=True),
            )
        )
    stages = (r.get("probe_summary") or {}).get("stages") or {}
    if stages:
        names = [n for n in views.STAGES if n in stages]
        series = [
            Series(stat, list(range(len(names) + 1)), [stages[n].get(key, 0) / 1000 for n in names] + [0], step=True)
            for stat, key in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))
        ]
        figs.append(
            Figure(
                f"{r['id']}-stages",
                "IOC stages: " + ", ".join(f"{i} {n}" for i, n in enumerate(names)),
                series,
                Axis("Stage (in order)"),
                Axis("Latency (us)", log=True),
            )
        )
    return figs


def case_section(r: dict) -> str:
    out = [f'<section class="case" id="case-{escape(r["id"])}">']
    out.append(f"<h2>Case {escape(r['id'])}: {escape(r['label'])}</h2>")
    verdict = r.get("verdict") or "inconclusive"
    out.append(f'<p class="banner {verdict}">{verdict.upper()}: {escape(r.get("reason") or "")}</p>')
    for m in r.get("missing") or []:
        out.append(f'<p class="missing">missing: {escape(m)}</p>')
    if r.get("requirement_verdicts"):
        out.append(requirements_table(r["requirement_verdicts"]))
    out.append(stats_table(r))
    stages = views.stage_table(r)
    if stages:
        out.append(f"<pre>{escape(stages)}</pre>")
    lines = views.ioc_lines(r) + views.network_lines(r)
    if lines:
        out.append("<pre>" + escape("\n".join(lines)) + "</pre>")
    out.append(spikes_html(r))
    loads = ", ".join(ld.get("name") or ld.get("type") or "?" for ld in r.get("loads") or []) or "none"
    out.append(f"<p>Loads: {escape(loads)}. Conditions: {escape(_conditions_text(r))}.</p>")
    hs = r.get("host_samples") or {}
    if hs:
        temp = f"{hs['temp_max_c']} °C max" if hs.get("temp_max_c") is not None else "no temperature sensor"
        out.append(f"<p>Host during the case: {escape(temp)}, load average max {hs.get('loadavg1_max')}.</p>")
    out.append('<div class="figs">' + "".join(chart(f) for f in case_figures(r)) + "</div>")
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


def _merged(r: dict | None) -> Histogram | None:
    if not r or not r.get("hists"):
        return None
    total = Histogram()
    for h in r["hists"].values():
        total = total.merge(h)
    return total


def overlay_figure(cases: list[dict], slug: str, title: str) -> Figure | None:
    """Several cases' histograms (all CPUs) in one figure: the papers' per-stress-method histograms."""
    series, worst = [], 0
    for r in cases:
        merged = _merged(r)
        if merged is None:
            continue
        s, w = hist_series({"all": merged})
        if s:
            s[0].name = r["label"]
            series += s
            worst = max(worst, w)
    if len(series) < 2:
        return None
    return Figure(
        slug,
        title,
        series,
        Axis(f"Latency (us), worst case {format_ns(worst)}"),
        Axis("Number of samples", log=True, lo=0.5),
        width=1000,
        height=380,
    )


def throughput_figure(cases: list[dict]) -> Figure | None:
    """Transfer speed per case normalised to the first (seed 004 Fig. 1), where cases report one."""
    rates: list[tuple[str, float]] = []
    for r in cases:
        x = views.throughput_mb_s(r)
        if x:
            rates.append((r["label"], x))
    if not rates:
        return None
    ref = rates[0][1]
    xs = [float(i) for i in range(len(rates) + 1)]
    ys = [x / ref for _, x in rates] + [0.0]
    names = ", ".join(f"{i} {label}" for i, (label, _) in enumerate(rates))
    return Figure(
        "transfer-speed",
        f"Transfer speed relative to {rates[0][0]} ({ref:.1f} MB/s)",
        [Series("speed / first case", xs, ys, step=True)],
        Axis(f"Case: {names}"[:160]),
        Axis("Relative speed", lo=0),
        width=1000,
    )


def bundle_figures(cases: list[dict]) -> list[Figure]:
    """The bundle's own figures: latency and IOC response histograms of every case overlaid, and the
    transfer speeds."""
    figs = [
        overlay_figure(
            [r for r in cases if not summary.is_response(r)], "latency-histograms", "Latency histograms of every case"
        ),
        overlay_figure(
            [r for r in cases if summary.is_response(r)],
            "ioc-histograms",
            "IOC input -> output histograms of every case",
        ),
        throughput_figure(cases),
    ]
    return [f for f in figs if f is not None]


def summary_table(data: dict) -> str:
    """The bundle's summary table: one row per case, or the seed paper's layout its scenario names."""
    cases = [r for r in data["cases"] if "missing" not in r or r.get("stats")]
    table = data.get("table") or "cases"
    return views.cases_table(cases) if table == "cases" else views.paper_table(cases, table)


def bundle_section(data: dict) -> str:
    m = data["manifest"]
    verdict = m.get("verdict") or "inconclusive"
    out = [f"<h1>rtqual report: {escape(str(m.get('hostname')))}, {escape(str(m.get('start')))}</h1>"]
    out.append(f'<p class="banner {verdict}" id="verdict">{verdict.upper()} ({escape(str(m.get("status")))})</p>')
    reasons = [
        f"{r['id']}: {r.get('verdict')} - {r.get('reason')}" for r in data["cases"] if r.get("verdict") != "pass"
    ]
    if reasons:
        out.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in reasons) + "</ul>")
    for cut in data.get("problems") or []:
        out.append(f'<p class="missing">{escape(cut)}</p>')
    lines = summary.capability(data["cases"])
    if lines:
        out.append('<h2>Capability summary</h2><ul id="capability">')
        out += [f"<li>{escape(s)}</li>" for s in lines]
        out.append("</ul>")
    out.append("<h2>Summary</h2><pre>" + escape(summary_table(data)) + "</pre>")
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
    out += [case_section(r) for r in data["cases"]]
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


def figures(data: dict) -> list[Figure]:
    """Every figure of a bundle, in report order (for --png)."""
    return bundle_figures(data["cases"]) + [f for r in data["cases"] for f in case_figures(r)]


def write_images(bundles: list[dict], folder: Path) -> list[Path]:
    """Each figure as SVG (the report's own drawing) and PNG (matplotlib), for papers and slides."""
    from rtqual.publish.svgplot import to_png

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for i, data in enumerate(bundles):
        prefix = f"{i + 1}-" if len(bundles) > 1 else ""
        for fig in figures(data):
            svg = folder / f"{prefix}{fig.slug}.svg"
            svg.write_text(chart(fig) + "\n")
            png = folder / f"{prefix}{fig.slug}.png"
            to_png(fig, png)
            written += [svg, png]
    return written


def write_report(bundles: Sequence[Model | str | Path], out: Path, png_dir: Path | None = None) -> Path:
    """Read the bundles (models, or paths read into models), write the HTML report (and the images); returns
    the report's path. Written into the folder of the one bundle reported, as its report.html, it is that
    bundle's own and recorded in its manifest; anywhere else it changes no bundle."""
    views = [load_bundle(b) for b in bundles]
    _write(out, render(views), own=_own_report(bundles, out))
    if png_dir is not None:
        write_images(views, png_dir)
    return out


def write_compare(bundles: Sequence[Model | str | Path], out: Path) -> Path:
    """The comparison of bundles as HTML (rtqual compare --report): never recorded in any bundle."""
    _write(out, render_compare([load_bundle(b) for b in bundles]))
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


def _bundle_name(i: int, data: dict) -> str:
    m = data["manifest"]
    kernel = ((data.get("facts") or {}).get("kernel") or {}).get("release") or "?"
    return f"{chr(ord('A') + i) if i < 26 else i + 1}: {m.get('hostname')} {kernel} {m.get('start')}"


def compare_figures(row: list[dict | None], names: list[str]) -> list[Figure]:
    """One matched case across bundles: overlaid histograms (all CPUs) and tail plots."""
    hists = {n: h for n, h in zip(names, (_merged(r) for r in row)) if h is not None and h.count}
    if not hists:
        return []
    first = next(r for r in row if r)
    series, worst = [], 0
    for n, h in hists.items():
        s, w = hist_series({"all": h})
        s[0].name, worst = n, max(worst, w)
        series += s
    tails = []
    for n, h in hists.items():
        (t,) = tail_series({"0": h})
        t.name = n
        tails.append(t)
    return [
        Figure(
            f"compare-{first['id']}-histogram",
            f"Latency histograms ({first['label']})",
            series,
            Axis(f"Latency (us), worst case {format_ns(worst)}"),
            Axis("Number of samples", log=True, lo=0.5),
        ),
        Figure(
            f"compare-{first['id']}-tail",
            "Tail: fraction of samples above x",
            tails,
            Axis("Latency (us)", log=True),
            Axis("Fraction above", log=True),
        ),
    ]


def render_compare(bundles: list[dict]) -> str:
    """`rtqual compare ... --report FILE`: every matched case overlaid across the bundles, with the
    statistics of each and their ratio to the first bundle."""
    names = [chr(ord("A") + i) if i < 26 else str(i + 1) for i in range(len(bundles))]
    out = ["<h1>rtqual comparison</h1><ul>"]
    out += [
        f"<li>{escape(_bundle_name(i, b))} <small>({escape(b['path'])})</small></li>" for i, b in enumerate(bundles)
    ]
    out.append("</ul>")
    for row in compare.matches(bundles):
        first = row[0]
        assert first is not None
        out.append(f'<section class="case" id="case-{escape(first["id"])}">')
        out.append(f"<h2>Case {escape(first['id'])}: {escape(first['label'])}</h2>")
        head = ["", *(h for h, _ in views.COMPARE_COLUMNS), "verdict"]
        rows = [
            [n, *(_stat_td(k, r["stats"].get(k)) for _, k in views.COMPARE_COLUMNS), escape(str(r.get("verdict")))]
            for n, r in zip(names, row)
            if r
        ]
        rows += [
            [f"{n}/A", *(escape(views.ratio_cell(first["stats"], r["stats"], k)) for _, k in views.COMPARE_COLUMNS), ""]
            for n, r in zip(names[1:], row[1:])
            if r
        ]
        out.append(_table(head, rows, "stats"))
        out.append('<div class="figs">' + "".join(chart(f) for f in compare_figures(row, names)) + "</div>")
        out.append("</section>")
    out.append(f"<p><small>{escape(views.PERCENTILE_NOTE)}</small></p>")
    body = "\n".join(out)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>rtqual comparison</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def advice_of(model: Model) -> tuple[list[dict], list[dict]]:
    """What to change on the bundle's host (rtqual.answers.advise.bundle_advice): the findings and effects of
    `advise --measure`, else the checks over the host facts the run recorded."""
    from rtqual.answers import advise

    try:
        tuning = model.read_json("host/tuning-before.json")
    except bundle_mod.Unreadable:
        tuning = None
    return advise.bundle_advice(model.plan, model.facts("before"), tuning, list(model.cases))


def what_to_change_html(advice: tuple[list[dict], list[dict]] | None) -> str:
    """The report's last section: each finding's fix, blockers first, with its measured effect."""
    from rtqual.answers import advise

    findings, measured = advice or ([], [])
    if not findings:
        return '<h2 id="what-to-change">What to change</h2><p>nothing found in the recorded host facts</p>'
    items = "".join(f"<li>{escape(line)}</li>" for line in advise.what_to_change(findings, measured))
    return f'<h2 id="what-to-change">What to change</h2><ul class="advice">{items}</ul>'

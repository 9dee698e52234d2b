"""`rtqual report`: one self-contained HTML file per set of bundles (styles and figures inline, nothing
fetched), and the same figures as PNG/SVG files for papers and slides.

load_bundle() takes what the figures need from a bundle's model (results, histograms, progress records, host
facts); everything after it is a pure function of that data. A case whose files are missing or corrupt
still appears, saying what is missing.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Sequence
from html import escape
from pathlib import Path

from rtqual.answers import compare, environment, spikes, summary
from rtqual.answers.answer import answers
from rtqual.answers.requirements import describe
from rtqual.answers.verdict import NOT_JUDGED, headline
from rtqual.errors import RtqError
from rtqual.publish import views
from rtqual.publish.hostview import host_rows
from rtqual.publish.svgplot import PALETTE, Axis, Figure, Series, chart
from rtqual.publish.tail import tail_section
from rtqual.results import bundle as bundle_mod
from rtqual.results.blockmax import BlockMaxima
from rtqual.results.bundle import Model, names
from rtqual.results.hist import Histogram, highest_equivalent
from rtqual.units import format_ns

ENVELOPE_POINTS = 2000  # max-over-time figures: at most this many min/max buckets, every spike kept
HIST_BINS = 400  # OSADL-style histograms: at most this many bins per CPU
BINS_PER_DECADE = 40  # histogram bins on the log latency axis: each 1/40 decade (about 6 %) wide


def load_bundle(bundle: Model | str | Path, tail: bool = False) -> dict:
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
        r["blocks"] = blocks = BlockMaxima() if tail else None  # per-second maxima: the tail section (tail.py)
        try:
            for rec in model.records(r["id"], marks=('"progress"',)):  # a day is 86 400 records
                over.add(rec)
                if blocks is not None:
                    blocks.feed(rec)
        except bundle_mod.Unreadable:
            r["missing"].append("stream.jsonl (no figure over time)")
    data["facts"] = model.facts("before")
    data["tuning"] = model.tuning()
    data["capacity"] = model.capacity
    data["environment"] = views.environment_of(model)
    data["plan"] = model.plan or {}
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


def _log_edges(lo_ns: int, hi_ns: int) -> tuple[list[float], int]:
    """Bin edges in µs on a log grid covering lo..hi, and the grid's bins per decade: BINS_PER_DECADE, more
    (up to 8 times) for a narrow range so that its body has some 50 bins, fewer where the range would need
    more than HIST_BINS."""
    lo_us, hi_us = max(lo_ns, 1) / 1000, max(hi_ns, lo_ns, 1) / 1000
    per, decades = BINS_PER_DECADE, math.log10(hi_us / lo_us)
    while per * decades < HIST_BINS / 8 and per < 8 * BINS_PER_DECADE:  # a narrow range: finer bins
        per *= 2
    while per > 1 and per * (decades + 2 / per) > HIST_BINS:
        per //= 2
    k0, k1 = math.floor(per * math.log10(lo_us)), math.floor(per * math.log10(hi_us)) + 1
    return [10 ** (k / per) for k in range(k0, k1 + 1)], per


def log_hist_series(named: list[tuple[str, Histogram]]) -> tuple[list[Series], int]:
    """Each (name, histogram) as counts per bin of one log latency grid (µs; BINS_PER_DECADE bins a decade:
    the body keeps its shape and the tail its place), as stepped lines whose empty bins draw nothing;
    and the worst case in ns."""
    named = [(n, h) for n, h in named if h.count]
    if not named:
        return [], 0
    worst = max(h.max_ns for _, h in named)
    edges, per = _log_edges(min(h.min_ns for _, h in named), worst)
    k0 = round(per * math.log10(edges[0]))
    out = []
    for name, h in named:
        bins = [0] * (len(edges) - 1)
        for i, c in h.counts.items():
            v_us = max(min(highest_equivalent(i), h.max_ns), h.min_ns, 1) / 1000
            bins[min(max(math.floor(per * math.log10(v_us) + 1e-9) - k0, 0), len(bins) - 1)] += c
        out.append(Series(name, list(edges), [*bins, 0], step=True))
    return out, worst


def hist_series(hists: dict[str, Histogram], name=lambda cpu: f"cpu{cpu}") -> tuple[list[Series], int]:
    """Per CPU (named by `name`), counts per bin of a log latency grid, as stepped lines; and the worst
    case in ns."""
    order = sorted(hists.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1)
    return log_hist_series([(name(cpu), h) for cpu, h in order])


def tail_series(hists: dict[str, Histogram], name=lambda cpu: f"cpu{cpu}") -> list[Series]:
    """Fraction of samples above x (µs), per CPU (named by `name`) and for all CPUs, log-log."""
    merged = Histogram.merged(hists.values())
    out = []
    named = [(name(c), h) for c, h in sorted(hists.items())] + ([("all", merged)] if len(hists) > 1 else [])
    for label, h in named:
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
        out.append(Series(label, xs, ys))
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
.completed{background:#eceff1;color:#263238} #answer li{margin:2px 0} .yes{color:#145a14} .no{color:#8a1010}
.undecided{color:#6b4b00}
.chart .title{font-weight:600;font-size:13px} .chart .tick{font-size:11px;fill:#555}
.chart .axis-label{font-size:12px} .chart .legend{font-size:11px}
.chart .frame{fill:none;stroke:#999} .chart .grid{stroke:#eee}
.figs{display:flex;flex-wrap:wrap;gap:12px} .warn{color:#8a4b00} .missing{color:#8a1010}
.chart .note{font-size:11px;fill:#555} .chart .mark{stroke:#555;stroke-dasharray:4 3}
.chart .mark-label,.chart .bar-label{font-size:10px;fill:#333} .chart .legend-box{fill:#fff;fill-opacity:.85}
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
    return _table(["", *views.threshold_headers(views.STAT_COLUMNS, [r])], rows, "stats")


def threshold_marks(results: list[dict | None]) -> list[tuple[float, str]]:
    """The threshold the cases count against, as a marked latency (µs) on their figures; none where the
    cases' thresholds differ or none is recorded."""
    thrs = {(r.get("params") or {}).get("threshold_ns") for r in results if r}
    thr = thrs.pop() if len(thrs) == 1 else None
    return [(thr / 1000, f"threshold {format_ns(thr)}")] if isinstance(thr, int | float) and thr > 0 else []


def cpu_namer(r: dict):
    """How a case's per-CPU series are named: 'cpu0', or for an IOC the CPUs it ran on ('IOC on cpus 0-1'):
    an IOC case's histogram is keyed by the harness' CPU, which says nothing of where the IOC ran."""
    cpus = (r.get("ioc") or {}).get("cpus_allowed")
    if not summary.is_response(r) or not cpus:
        return lambda cpu: f"cpu{cpu}"
    several = len(r.get("hists") or {}) > 1
    return lambda cpu: f"IOC on cpus {cpus}" + (f", harness cpu{cpu}" if several else "")


HIST_NOTE = "bins 1/{per} decade wide; empty bins not drawn"


def hist_figure(slug: str, title: str, series: list[Series], worst: int, marks: list, **size) -> Figure:
    """A latency histogram as OSADL plots it (stepped counts on a log count axis, worst case in the x label),
    on a log latency axis: the body readable, the tail visible."""
    per = round(1 / math.log10(series[0].xs[1] / series[0].xs[0])) if len(series[0].xs) > 1 else BINS_PER_DECADE
    return Figure(
        slug,
        title,
        series,
        Axis(
            f"Latency (µs, log scale), worst case {format_ns(worst)}", log=True, lo=series[0].xs[0], hi=series[0].xs[-1]
        ),  # fmt: skip
        Axis("Samples per bin (log scale)", log=True, lo=0.5),
        marks=marks,
        note=HIST_NOTE.format(per=per),
        **size,
    )


def stage_figure(r: dict, stages: dict) -> Figure:
    """An IOC or timerlat case's stages as bars per named stage (p50, p99, max) and the total, each bar labelled."""
    names = [n for n in (*views.STAGES, *views.TIMERLAT_STAGES) if n in stages] + ["total"]
    values = {**stages, "total": r.get("stats") or {}}
    series = []
    for stat, key in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns")):
        ns = [values[n].get(key) for n in names]
        series.append(
            Series(stat, list(range(len(names))), [(v or 0) / 1000 for v in ns], labels=[format_ns(v) for v in ns])
        )
    return Figure(
        f"{r['id']}-stages",
        ("timerlat" if "irq" in stages else "IOC") + " stages: p50, p99 and max of each stage",
        series,
        Axis("Stage (in order, then the whole " + ("wake-up)" if "irq" in stages else "input -> output)")),
        Axis("Latency (µs)", lo=0),
        categories=names,
    )


def case_figures(r: dict) -> list[Figure]:
    """The figures of one case: histogram per CPU, tail, maximum over time, IOC stages."""
    figs = []
    name, marks = cpu_namer(r), threshold_marks([r])
    series, worst = hist_series(r.get("hists") or {}, name)
    if series:
        figs.append(hist_figure(f"{r['id']}-histogram", f"Latency histogram ({r['label']})", series, worst, marks))
        figs.append(
            Figure(
                f"{r['id']}-tail",
                "Tail: fraction of samples above x",
                tail_series(r["hists"], name),
                Axis("Latency (µs, log scale)", log=True),
                Axis("Fraction above (log scale)", log=True),
                marks=marks,
            )
        )
    over = r.get("over_time")
    if not isinstance(over, OverTime):  # a case given as progress records (tests, tools)
        over = OverTime()
        for rec in r.get("progress") or []:
            over.add(rec)
    over_time = over.series()
    for s in over_time:
        s.name = name(s.name[3:])
    if any(len(s.xs) > 1 for s in over_time):  # one progress record is no course over time
        figs.append(
            Figure(
                f"{r['id']}-max-over-time",
                "Maximum per interval over time",
                over_time,
                Axis(f"Time ({over.unit()[0]})"),
                Axis("Maximum latency (µs, log scale)", log=True),
            )
        )
    stages = (r.get("probe_summary") or {}).get("stages") or {}
    if stages:
        figs.append(stage_figure(r, stages))
    return figs


def case_section(r: dict) -> str:
    out = [f'<section class="case" id="case-{escape(r["id"])}">']
    out.append(f"<h2>Case {escape(r['id'])}: {escape(r['label'])}</h2>")
    verdict = r.get("verdict") or "inconclusive"
    out.append(f'<p class="banner {verdict}">{escape(headline(verdict, r.get("reason")))}</p>')
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


def _merged(r: dict | None) -> Histogram | None:
    return Histogram.merged(r["hists"].values()) if r and r.get("hists") else None


def comparable(r: dict) -> tuple:
    """What must be equal for two cases' histograms to share a figure: the probe and what it times (pio's
    per access or per pass, rhealstone's component), and whether it is an input -> output response."""
    p = r.get("params") or {}
    return r.get("probe"), p.get("sample"), p.get("component"), summary.is_response(r)


def overlay_figures(cases: list[dict], slug: str, title: str) -> list[Figure]:
    """Cases' histograms (all CPUs) overlaid as the papers' per-stress-method histograms: only comparable
    cases together (same probe and unit), at most one palette of distinct colours per figure."""
    groups: dict[tuple, list[tuple[str, Histogram]]] = {}
    for r in cases:
        merged = _merged(r)
        if merged is not None and merged.count:
            groups.setdefault(comparable(r), []).append((r["label"], merged))
    figs = []
    for key, named in groups.items():
        if len(named) < 2:
            continue
        what = " ".join(str(x) for x in key[:3] if x)
        chunks = [named[k : k + len(PALETTE)] for k in range(0, len(named), len(PALETTE))]
        for n, chunk in enumerate(chunks, 1):
            series, worst = log_hist_series(chunk)
            part = f" ({n} of {len(chunks)})" if len(chunks) > 1 else ""
            marks = threshold_marks([r for r in cases if comparable(r) == key])
            figs.append(
                hist_figure(
                    f"{slug}-{_slug(what)}{'-' + str(n) if part else ''}",
                    f"{title}: {what}{part}",
                    series,
                    worst,
                    marks,
                    width=1000,
                    height=380,
                )  # fmt: skip
            )
    return figs


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"


def throughput_figure(cases: list[dict]) -> Figure | None:
    """Transfer speed per case as labelled bars, with each one's ratio to the first (seed 004 Fig. 1)."""
    rates: list[tuple[str, float]] = []
    for r in cases:
        x = views.throughput_mb_s(r)
        if x:
            rates.append((r["label"], x))
    if not rates:
        return None
    ref = rates[0][1]
    labels = [f"{x:.1f} ({x / ref:.2f}×)" for _, x in rates]
    return Figure(
        "transfer-speed",
        f"Transfer speed per case (MB = 10^6 B); in brackets relative to {rates[0][0]}",
        [Series("MB/s", list(range(len(rates))), [x for _, x in rates], labels=labels)],
        Axis("Case"),
        Axis("Transfer speed (MB/s)", lo=0),
        width=1000,
        categories=[label for label, _ in rates],
    )


def bundle_figures(cases: list[dict]) -> list[Figure]:
    """The bundle's own figures: latency and IOC response histograms of comparable cases overlaid, and the
    transfer speeds."""
    figs = overlay_figures(
        [r for r in cases if not summary.is_response(r)], "latency-histograms", "Latency histograms"
    ) + overlay_figures(
        [r for r in cases if summary.is_response(r)], "ioc-histograms", "IOC input -> output histograms"
    )
    speed = throughput_figure(cases)
    return figs + ([speed] if speed else [])


def summary_table(data: dict) -> str:
    """The bundle's summary table: one row per case, or the seed paper's layout its scenario names."""
    cases = [r for r in data["cases"] if "missing" not in r or r.get("stats")]
    table = data.get("table") or "cases"
    if table != "cases":
        return views.paper_table(cases, table)
    thr = views.threshold_text(cases)
    return views.cases_table(cases) + (f"\n%>thr: share of samples over {thr}" if thr else "")


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


def capacity_html(doc: dict) -> str:
    """A capacity sweep (capacity.json): its answer, the figures of latency and queue high-water against the load,
    and the table of steps."""
    from rtqual.publish import capacity

    text = capacity.lines(doc)
    figs = "".join(chart(f) for f in capacity_figures(doc))
    return (
        f'<h2>Capacity</h2><p id="capacity-answer"><b>{escape(str(doc.get("answer")))}</b></p>'
        + (f'<div class="figs" id="capacity-figures">{figs}</div>' if figs else "")
        + "<pre>"
        + escape("\n".join(text[2:]))
        + "</pre>"
    )


def capacity_figures(doc: dict) -> list[Figure]:
    """A capacity sweep's figures (publish.capacity.plots) as svgplot figures."""
    from rtqual.publish import capacity

    return [_plot_figure(p) for p in capacity.plots(doc)]


def _plot_figure(p: dict) -> Figure:
    """One figure from publish.capacity's plot data."""
    return Figure(
        p["slug"],
        p["title"],
        [Series(name, xs, ys) for name, xs, ys in p["series"]],
        Axis(p["x_label"], log=p["log_x"]),
        Axis(p["y_label"], log=p["y_log"], lo=p["y_lo"]),
        marks=p["marks"],
        note=p["note"],
    )


def capacity_compare_html(bundles: list[dict], names: list[str]) -> str:
    """The capacity sweeps among compared bundles: each one's answer and their p99 curves overlaid."""
    from rtqual.publish import capacity

    named = [(n, b["capacity"]) for n, b in zip(names, bundles) if b.get("capacity")]
    if not named:
        return ""
    items = "".join(f"<li><b>{escape(n)}</b>: {escape(str(d.get('answer')))}</li>" for n, d in named)
    plot = capacity.overlay_plot(named)
    fig = f'<div class="figs">{chart(_plot_figure(plot))}</div>' if plot else ""
    return f'<h2>Capacity</h2><ul id="capacity-compare">{items}</ul>{fig}'


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
    own = capacity_figures(data["capacity"]) if data.get("capacity") else []
    return own + bundle_figures(data["cases"]) + [f for r in data["cases"] for f in case_figures(r)]


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


def write_report(
    bundles: Sequence[Model | str | Path], out: Path, png_dir: Path | None = None, tail: bool = False
) -> Path:
    """Read the bundles (models, or paths read into models), write the HTML report (and the images); returns
    the report's path. Written into the folder of the one bundle reported, as its report.html, it is that
    bundle's own and recorded in its manifest; anywhere else it changes no bundle. With `tail` (rtqual report,
    not the end of a run: scipy stays out of the measuring process), each case of 10 minutes or more gets
    its tail section (publish/tail.py)."""
    views = [load_bundle(b, tail) for b in bundles]
    _write(out, render(views), own=_own_report(bundles, out))
    if png_dir is not None:
        write_images(views, png_dir)
    return out


def write_compare(bundles: Sequence[Model | str | Path], out: Path, match: compare.Match | None = None) -> Path:
    """The comparison of bundles as HTML (rtqual compare --report): never recorded in any bundle."""
    _write(out, render_compare([load_bundle(b) for b in bundles], match))
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


def _bundle_line(name: str, data: dict) -> str:
    """One bundle in the comparison's list: its name, host, kernel, start and folder."""
    m, a = data["manifest"], compare.host_aspects(data)
    return (
        f"<li><b>{escape(name)}</b>: host {escape(a['host'])}, kernel {escape(a['kernel'])}, "
        f"{escape(a['preemption'])}, started {escape(str(m.get('start')))} <small>({escape(data['path'])})</small></li>"
    )


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
        hist_figure(f"compare-{first['id']}-histogram", f"{first['label']}: {shown}", series, worst, marks),
        Figure(
            f"compare-{first['id']}-tail",
            f"Tail: fraction above x, {shown}",
            tails,
            Axis("Latency (µs, log scale)", log=True),
            Axis("Fraction above (log scale)", log=True),
            marks=marks,
        ),
    ]


def _compare_rows(row: list[dict | None], names: list[str]) -> str:
    """A matched case's statistics per bundle and each one's ratio to the first, the threshold stated."""
    first = next(r for r in row if r)
    head = ["", *views.threshold_headers(views.COMPARE_COLUMNS, row), "verdict"]
    rows = [
        [escape(n), *(_stat_td(k, r["stats"].get(k)) for _, k in views.COMPARE_COLUMNS), escape(str(r.get("verdict")))]
        for n, r in zip(names, row)
        if r
    ]
    rows += [
        [
            escape(f"{n}/{names[0]}"),
            *(escape(views.ratio_cell(first["stats"], r["stats"], k)) for _, k in views.COMPARE_COLUMNS),
            "",
        ]
        for n, r in zip(names[1:], row[1:])
        if r
    ]
    return _table(head, rows, "stats")


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
    out.append(_compare_rows(row, names))
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
        if rows:
            out.append(study_section(bundles, names, colors, scenario, label, rows))
    return out


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
    head = ["", *(f"{names[i]} {w}" for i in used for w in ("mean", "σ", "max", "count")), "ran differently"]
    table, notes = [], []
    for cat, row in rows.items():
        cells = [escape(cat)]
        for i in used:
            st = (row[i] or {}).get("stats") or {}
            cells += [_stat_td(k, st.get(k)) if row[i] else "" for k in ("mean_ns", "stddev_ns", "max_ns", "count")]
        table.append([*cells, escape(_ran_differently([(names[i], r) for i in used if (r := row[i])]))])
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


def compare_groups(bundles: list[dict]) -> list[list[int]]:
    """Which bundles' cases are paired with each other: those of the same scenario (a kernel's timer study
    with the other kernel's, its IOC study with the other's); all together where no scenario has two."""
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(bundles):
        groups.setdefault(str((b.get("plan") or {}).get("name")), []).append(i)
    paired = [g for g in groups.values() if len(g) > 1]
    return paired or [list(range(len(bundles)))]


def render_compare(bundles: list[dict], match: compare.Match | None = None) -> str:
    """`rtqual compare ... --report FILE`: the bundles named, what differs between them, each scenario matrix
    side by side (the study's questions), then every matched case overlaid across the bundles with the
    statistics of each, their ratio to the first and whether differences are within the run-to-run spread."""
    names = compare.bundle_names(bundles)
    out = [f"<h1>rtqual comparison: {escape(' vs '.join(names))}</h1>", '<ul id="bundles">']
    out += [_bundle_line(n, b) for n, b in zip(names, bundles)]
    out.append("</ul><h2>What differs between the bundles</h2>")
    settings = compare.settings_differ(bundles)  # the tunable settings advise checks, those that differ
    aspects = [compare.host_aspects(b) | {d["id"]: d["values"][i] for d in settings} for i, b in enumerate(bundles)]
    out.append(differences_html(aspects, names, "differences"))
    out.append(capacity_compare_html(bundles, names))
    out += study_sections(bundles, names)
    for group in compare_groups(bundles):
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


def advice_of(model: Model) -> tuple[list[dict], list[dict]]:
    """What to change on the bundle's host (rtqual.answers.advise.bundle_advice): the findings and effects of
    `advise --measure`, else the checks over the host facts the run recorded; and each IOC case's path
    (rtqual.answers.iocpath: `ioc-threads`) where it has something to change."""
    from rtqual.answers import advise, iocpath

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

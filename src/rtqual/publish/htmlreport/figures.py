"""The report's figures as data (pure): histograms on a log latency grid, tails, the maximum over time
(folded in bounded memory), IOC and timerlat stages, overlays of comparable cases and transfer speeds, each
an svgplot.Figure named after its case; at most svgplot.MAX_SERIES series a figure (small multiples)."""

from __future__ import annotations

import math

from rtqual.answers import caveats, environment, summary
from rtqual.publish import views
from rtqual.publish.svgplot import MAX_SERIES, Axis, Figure, Series, split
from rtqual.results.hist import Histogram, highest_equivalent
from rtqual.units import format_ns

ENVELOPE_POINTS = 2000  # max-over-time figures: at most this many min/max buckets, every spike kept
HIST_BINS = 400  # OSADL-style histograms: at most this many bins per CPU
BINS_PER_DECADE = 40  # histogram bins on the log latency axis: each 1/40 decade (about 6 %) wide


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
    order = sorted(hists.items(), key=lambda kv: _cpu_order(kv[0]))
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


def threshold_marks(results: list[dict | None]) -> list[tuple[float, str]]:
    """The threshold the cases count against, as a marked latency (µs) on their figures; none where the
    cases' thresholds differ or none is recorded."""
    thrs = {(r.get("params") or {}).get("threshold_ns") for r in results if r}
    thr = thrs.pop() if len(thrs) == 1 else None
    return [(thr / 1000, f"threshold {format_ns(thr)}")] if isinstance(thr, int | float) and thr > 0 else []


def cpu_namer(r: dict):
    """How a case's per-CPU series are named: 'cpu0' (views.cpu_name: 'unpinned' where the case pinned no
    CPU), or for an IOC the CPUs it ran on ('IOC on cpus 0-1'): an IOC case's histogram is keyed by the
    harness' CPU, which says nothing of where the IOC ran."""
    cpus = (r.get("ioc") or {}).get("cpus_allowed")
    if not summary.is_response(r) or not cpus:
        return lambda cpu: views.cpu_name(r, cpu)
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


SHADOW_NOTE = "; grey: {n} earlier run(s) of this case on this host"


def with_shadows(fig: Figure, r: dict, name) -> Figure:
    """The case's histogram figure with its shadows (r["shadows"]: [(name, Histogram)], the baseline's and earlier
    runs') drawn grey behind it, all on one latency grid; the worst case named stays the case's own."""
    hists = r.get("hists") or {}
    own = [(name(cpu), h) for cpu, h in sorted(hists.items(), key=lambda kv: _cpu_order(kv[0])) if h.count]
    shadow = [(n, h) for n, h in r["shadows"] if h.count]
    both, _ = log_hist_series([*own, *shadow])
    if len(both) != len(own) + len(shadow):
        return fig
    series, grey = both[: len(own)], both[len(own) :]
    out = hist_figure(fig.slug, fig.title, series, max(h.max_ns for _, h in own), fig.marks)
    out.shadows, out.note = grey, out.note + SHADOW_NOTE.format(n=len(grey))
    return out


def _cpu_order(cpu: str) -> int:
    return int(cpu) if cpu.isdigit() else -1


def stage_figure(r: dict, stages: dict) -> Figure:
    """An IOC or timerlat case's stages as bars per named stage (p50, p99, max) and the total, each bar labelled."""
    names = [n for n in (*views.STAGES, *views.TIMERLAT_STAGES) if n in stages] + ["total"]
    values = {**stages, "total": r.get("stats") or {}}
    series = []
    for stat, key in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns")):
        ns: list = [caveats.shown(key, values[n]) for n in names]  # a p99 its stage's samples do not carry: "-"
        series.append(
            Series(stat, list(range(len(names))), [(v or 0) / 1000 for v in ns], labels=[format_ns(v) for v in ns])
        )
    return Figure(
        f"{r['id']}-stages",
        ("timerlat" if "irq" in stages else "IOC") + f" stages: p50, p99 and max of each stage ({r['label']})",
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
        fig = hist_figure(f"{r['id']}-histogram", f"Latency histogram ({r['label']})", series, worst, marks)
        figs.append(with_shadows(fig, r, name) if r.get("shadows") else fig)
        figs.append(
            Figure(
                f"{r['id']}-tail",
                f"Tail: fraction of samples above x ({r['label']})",
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
                f"Maximum per interval over time ({r['label']})",
                over_time,
                Axis(f"Time ({over.unit()[0]})"),
                Axis("Maximum latency (µs, log scale)", log=True),
            )
        )
    stages = (r.get("probe_summary") or {}).get("stages") or {}
    if stages:
        figs.append(stage_figure(r, stages))
    return [part for f in figs for part in split(f)]


def _merged(r: dict | None) -> Histogram | None:
    return Histogram.merged(r["hists"].values()) if r and r.get("hists") else None


def comparable(r: dict) -> tuple:
    """What must be equal for two cases' histograms to share a figure: the probe and what it times (pio's
    per access or per pass, rhealstone's component), and whether it is an input -> output response."""
    p = r.get("params") or {}
    return r.get("probe"), p.get("sample"), p.get("component"), summary.is_response(r)


def series_name(r: dict) -> str:
    """A case as a figure's series: its label, and 'not applied' where it did not get a condition it asked for
    (a label 'frequency 750MHz' of a case the host could not set to 750 MHz claims a frequency not measured)."""
    return r["label"] + (" (not applied)" if environment.not_applied(r) else "")


def overlay_figures(cases: list[dict], slug: str, title: str) -> list[Figure]:
    """Cases' histograms (all CPUs) overlaid as the papers' per-stress-method histograms: only comparable
    cases together (same probe and unit), at most one palette of distinct colours per figure."""
    groups: dict[tuple, list[tuple[str, Histogram]]] = {}
    for r in cases:
        merged = _merged(r)
        if merged is not None and merged.count:
            groups.setdefault(comparable(r), []).append((series_name(r), merged))
    figs = []
    for key, named in groups.items():
        if len(named) < 2:
            continue
        what = " ".join(str(x) for x in key[:3] if x)
        parts = -(-len(named) // MAX_SERIES)  # small multiples of at most MAX_SERIES, in even parts
        per = -(-len(named) // parts)
        chunks = [named[k : k + per] for k in range(0, len(named), per)]
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


def figures(data: dict) -> list[Figure]:
    """Every figure of a bundle, in report order (for --png)."""
    from rtqual.publish.htmlreport.capacity import capacity_figures

    own = capacity_figures(data["capacity"]) if data.get("capacity") else []
    return own + bundle_figures(data["cases"]) + [f for r in data["cases"] for f in case_figures(r)]

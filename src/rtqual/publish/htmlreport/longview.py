"""The long-term page of `rtqual history --report` (pure: the data rtqual.publish.store.longview gathers in, one
self-contained HTML page out): per host and probe the monitor windows' histograms per UTC day as a heat map and
as OSADL's stacked view (log counts), the max and p99.99 per time step with the requirement's line, the captured
spikes' causes and the settings that changed marked on the time axis, and the stored runs with their caveats."""

from __future__ import annotations

import math
import time
from html import escape

from rtqual.answers import caveats
from rtqual.publish.htmlreport.page import CSS
from rtqual.publish.svgplot import Axis, Figure, Heat, Series, Stack, chart, heatmap, stacked
from rtqual.results.window import COARSE_PER_DECADE
from rtqual.units import format_ns

TICK_STEPS_S = (60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 91 * 86400)
STACK_ROWS = 60  # the stacked view's rows at most (OSADL's plots hold some 50 runs); more days are summed per row
MAX_GROUPS = 8  # host/probe pairs drawn per day at most: a page of a fleet's store stays a few MB
SPIKES_MARKED = 30  # spikes marked in the figure (the largest); the table lists up to SPIKES_LISTED
SPIKES_LISTED = 200
CHANGES_MARKED = 20
RUNS_LISTED = 500  # the stored runs' table: the latest this many cases
WINDOW_CAVEAT = (
    "monitor windows keep no host facts: whether the host is a virtual machine, had steal time or ran loads is not "
    "stored with them (a stored run of the same host says it, below)"
)
EXTRA_CSS = ".chart .level{stroke:#b71c1c} table.changes td,table.spikes td{text-align:left}"


def time_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """Date ticks (UTC) for a time axis in unix seconds: at most some 10, on whole hours, days, weeks or months."""
    step = next((s for s in TICK_STEPS_S if (hi - lo) / s <= 10), TICK_STEPS_S[-1])
    fmt = "%m-%d %H:%M" if step < 86400 else "%Y-%m-%d"
    first = math.ceil(lo / step) * step
    return [(t, time.strftime(fmt, time.gmtime(t))) for t in range(int(first), int(hi) + 1, step)]


def _day(t: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t is not None else "?"


def edges_us(lo_bin: int, hi_bin: int) -> list[float]:
    """The coarse bins' edges in µs, from bin lo_bin to the end of hi_bin."""
    return [10 ** (k / COARSE_PER_DECADE) / 1000 for k in range(lo_bin, hi_bin + 2)]


def day_figures(days: list[dict]) -> tuple[list[str], list[str]]:
    """Per host and probe: the heat map and the stacked view of its days (CPUs summed), as SVG; and the notes
    (days whose windows carry no histogram: stored before this rtqual)."""
    groups: dict[tuple[str, str], dict[float, dict]] = {}
    for d in days:
        day = groups.setdefault((d["host"], d["probe"]), {}).setdefault(
            d["day_unix_s"], {"hist": {}, "windows": 0, "samples": 0, "max_ns": 0}
        )
        for k, n in d["hist"].items():
            day["hist"][k] = day["hist"].get(k, 0) + n
        day["windows"] += d["windows"]
        day["samples"] += d["samples"]
        day["max_ns"] = max(day["max_ns"], d["max_ns"] or 0)
    svgs, notes = [], []
    if len(groups) > MAX_GROUPS:
        notes.append(
            f"{len(groups) - MAX_GROUPS} more host/probe pairs not drawn (at most {MAX_GROUPS} a page): "
            "give --host H for one host"
        )
    for (host, probe), by_day in sorted(groups.items())[:MAX_GROUPS]:
        bins = [k for d in by_day.values() for k in d["hist"]]
        bare = [t for t, d in by_day.items() if not d["hist"] and d["samples"]]
        if bare:
            notes.append(
                f"{host} {probe}: {len(bare)} day(s) of windows without a histogram (stored before the store kept "
                "one): left blank"
            )
        if not bins:
            continue
        lo_bin, hi_bin = min(bins), max(bins)
        first, last = min(by_day), max(by_day)
        xs = [first + 86400 * i for i in range(int((last - first) // 86400) + 2)]
        cells = [{k - lo_bin: n for k, n in by_day.get(x, {"hist": {}})["hist"].items()} for x in xs[:-1]]
        ys = edges_us(lo_bin, hi_bin)
        samples = sum(d["samples"] for d in by_day.values())
        windows = sum(d["windows"] for d in by_day.values())
        note = (
            f"{windows:,} windows, {samples:,} samples on {len(by_day)} days; bins 1/{COARSE_PER_DECADE} decade "
            "wide, all CPUs summed, UTC days"
        )
        worst = max(d["max_ns"] for d in by_day.values())
        svgs.append(
            heatmap(
                Heat(
                    f"{host}-{probe}-heat",
                    f"Latency histogram per day: {host}, {probe} (colour: samples per bin)",
                    [float(x) for x in xs],
                    ys,
                    cells,
                    Axis("Day (UTC)", ticks=time_ticks(xs[0], xs[-1])),
                    Axis(f"Latency (µs, log scale), worst case {format_ns(worst)}", log=True, lo=ys[0], hi=ys[-1]),
                    note=note,
                )
            )
        )
        rows, names, per = stack_rows(by_day, lo_bin)
        svgs.append(
            stacked(
                Stack(
                    f"{host}-{probe}-stacked",
                    f"Latency histograms stacked over time: {host}, {probe}"
                    + (f" ({per} days a row)" if per > 1 else ""),
                    ys,
                    rows,
                    names,
                    Axis("Latency (µs, log scale)", log=True, lo=ys[0], hi=ys[-1]),
                    note=note,
                    y_label=f"{'Day' if per == 1 else f'{per} days'} a row (oldest at the back), height: log10 samples "
                    "per bin",
                )
            )
        )
    return svgs, notes


def run_figures(group: dict) -> list[str]:
    """One case label's stored runs, a column (a row) each in run order: the heat map and the stacked view."""
    runs = group["runs"]
    bins = [k for r in runs for k in r["hist"]]
    lo_bin, hi_bin = min(bins), max(bins)
    ys = edges_us(lo_bin, hi_bin)
    cells = [{k - lo_bin: n for k, n in r["hist"].items()} for r in runs]
    every = max(1, len(runs) // 8)
    ticks = [(i + 0.5, _day(r["unix_s"])) for i, r in enumerate(runs) if i % every == 0]
    label, worst = group["label"], max(r["max_ns"] for r in runs)
    note = f"{len(runs)} stored run(s) of this case, oldest first; bins 1/{COARSE_PER_DECADE} decade wide, all CPUs"
    heat = Heat(
        f"runs-{label}-heat",
        f"Latency histogram per run: {label} (colour: samples per bin)",
        [float(i) for i in range(len(runs) + 1)],
        ys,
        cells,
        Axis("Run (its start date, UTC)", ticks=ticks),
        Axis(f"Latency (µs, log scale), worst case {format_ns(worst)}", log=True, lo=ys[0], hi=ys[-1]),
        note=note,
    )
    names = [f"{_when(r['unix_s'])}: {r['name']}, max {format_ns(r['max_ns'])}" for r in runs]
    stack = Stack(
        f"runs-{label}-stacked",
        f"Latency histograms of the runs stacked: {label}",
        ys,
        cells,
        names,
        Axis("Latency (µs, log scale)", log=True, lo=ys[0], hi=ys[-1]),
        note=note,
        y_label="Run (oldest at the back), height: log10 samples per bin",
    )
    return [heatmap(heat), stacked(stack)]


def stack_rows(by_day: dict[float, dict], lo_bin: int) -> tuple[list[dict[int, int]], list[str], int]:
    """The stacked view's rows: a day each, or for more than STACK_ROWS days that many consecutive days summed per
    row (a row a pixel apart reads as one block); each row's name "DATE: its days and maximum"; days per row."""
    order = sorted(by_day)
    per = -(-len(order) // STACK_ROWS)
    rows, names = [], []
    for i in range(0, len(order), per):
        part = order[i : i + per]
        row: dict[int, int] = {}
        for t in part:
            for k, n in by_day[t]["hist"].items():
                row[k - lo_bin] = row.get(k - lo_bin, 0) + n
        top = max(by_day[t]["max_ns"] for t in part)
        span = f"{_day(part[0])} to {_day(part[-1])}" if len(part) > 1 else _day(part[0])
        rows.append(row)
        names.append(f"{_day(part[0])}: {span}, max {format_ns(top)}" if top else _day(part[0]))
    return rows, names, per


def over_time_figure(data: dict) -> tuple[str, str]:
    """The max and p99.99 per time step (all monitored CPUs), the stored runs' maxima, the requirement's lines,
    the spikes (their causes) and the settings changes marked; and the caveat line of its p99.99."""
    series, notes = [], []
    step = data["step_s"]
    by_probe: dict[tuple[str, str], list[dict]] = {}
    for r in data["series"]:
        by_probe.setdefault((r["host"], r["probe"]), []).append(r)
    several = len(by_probe) > 1
    for (host, probe), rows in sorted(by_probe.items())[:3]:
        name = f"{host} {probe} " if several else ""
        pts = [(r["start_unix_s"] + step / 2, r["max_ns"] / 1000) for r in rows if r["max_ns"]]
        series.append(Series(f"{name}max per {_step(step)}", [p[0] for p in pts], [p[1] for p in pts]))
        p4 = [(r["start_unix_s"] + step / 2, r["p9999_ns"] / 1000) for r in rows if r["p9999_ns"]]
        if p4:
            series.append(Series(f"{name}worst p99.99", [p[0] for p in p4], [p[1] for p in p4]))
        windows, carried = sum(r["windows"] for r in rows), sum(r["p9999_windows"] for r in rows)
        if carried < windows:
            notes.append(
                f"{name or 'windows: '}p99.99 from {carried:,} of {windows:,} windows (the others have fewer than "
                f"{caveats.needed('p9999_ns'):,} samples: their p99.99 is not stated)"
            )
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in data["runs"]:
        if r["max_ns"] and r["started_unix_s"] is not None:
            runs.setdefault(r["label"], []).append((r["started_unix_s"], r["max_ns"] / 1000))
    for label, pts in sorted(runs.items(), key=lambda kv: -len(kv[1]))[: 6 - len(series)]:
        series.append(Series(f"run max: {label}", [p[0] for p in pts], [p[1] for p in pts]))
    if not series:
        return "", ""
    lo, hi = data["span"]
    hi = max(hi, lo + 1)
    levels = [(ns / 1000, f"requirement {text}") for _, (ns, text) in sorted(data["limits"].items())]
    spikes = sorted(data["spikes"], key=lambda s: -(s.get("latency_ns") or 0))[:SPIKES_MARKED]
    points = [(s["time_unix_s"], s["latency_ns"] / 1000, _cause_short(s), _cause_long(s)) for s in spikes]
    marks = [(c["unix_s"], f"{c['what']}: {_short(c['to'])}") for c in data["changes"][:CHANGES_MARKED]]
    ys = [v for s in series for v in s.ys] + [v for v, _ in levels] + [p[1] for p in points]
    fig = Figure(
        "max-over-time",
        "Maximum and p99.99 over time"
        + (" with the requirement" if levels else "")
        + (", spikes' causes" if points else "")
        + (", settings changes" if marks else ""),
        series,
        Axis("Time (UTC)", lo=lo, hi=hi, ticks=time_ticks(lo, hi)),
        Axis("Latency (µs, log scale)", log=True, lo=min(ys) * 0.8, hi=max(ys) * 1.5),
        width=1000,
        height=400,
        marks=marks,
        levels=levels,
        points=points,
        note=f"monitor windows in steps of {_step(step)} (the worst window of each step)",
    )
    return chart(fig), "; ".join(notes)


def _step(s: int) -> str:
    return f"{s // 86400} d" if s % 86400 == 0 else f"{s // 3600} h" if s % 3600 == 0 else f"{s // 60} min"


def _short(text: str, n: int = 28) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _cause_short(s: dict) -> str:
    return _short(str(s.get("comm") or "?"), 16)


def _cause_long(s: dict) -> str:
    """A spike in words: when, how long, on which CPU, and what held the CPU (its policy, priority, CPU)."""
    who = f"{_short(str(s.get('comm') or '?'), 64)} (pid {s.get('pid') if s.get('pid') is not None else '?'}"
    who += f", {_short(str(s.get('policy') or '?'), 16)} {s.get('priority') if s.get('priority') is not None else ''}"
    who = who.rstrip()
    who += f", on cpu{s['cause_cpu']})" if s.get("cause_cpu") is not None else ")"
    return (
        f"{_when(s.get('time_unix_s'))} UTC, {format_ns(s.get('latency_ns'))} on cpu{s.get('cpu')} "
        f"({s.get('probe') or '?'}): held by {who}"
    )


def _table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def render(data: dict) -> str:
    """The whole page: one HTML file, styles and figures inline, nothing fetched."""
    lo, hi = data["span"]
    host = data["host"] or "every host"
    parts = [
        f"<h1>Long-term latency: {escape(host)}</h1>",
        f"<p>{escape(_when(lo))} to {escape(_when(hi))} UTC, from the history store {escape(data['where'])}"
        f"{'' if not data['since_unix_s'] else ' (since ' + escape(_when(data['since_unix_s'])) + ')'}.</p>",
    ]
    if data["limits"]:
        parts.append(
            f"<p>Requirement lines ({escape(data['requirements_from'] or '')}): "
            + escape(", ".join(text for _, text in data["limits"].values()))
            + "</p>"
        )
    svgs, notes = day_figures(data["days"])
    parts.append("<h2>Histograms per day</h2>")
    if svgs:
        parts.append('<div class="figs">' + "".join(svgs) + "</div>")
    else:
        parts.append("<p>No monitor windows with a histogram in this range.</p>")
    parts += [f'<p class="warn">{escape(n)}</p>' for n in notes]
    if data.get("run_hists"):
        parts.append("<h2>Histograms per run</h2>")
        for group in data["run_hists"]:
            parts.append('<div class="figs">' + "".join(run_figures(group)) + "</div>")
            if group["missing"]:
                parts.append(f'<p class="warn">{group["missing"]} run(s) of {escape(group["label"])} not drawn: '
                             "bundle gone or damaged</p>")  # fmt: skip
    parts.append("<h2>Maximum over time</h2>")
    svg, note = over_time_figure(data)
    parts.append(svg or "<p>No maximum stored in this range.</p>")
    if note:
        parts.append(f'<p class="warn">{escape(note)}</p>')
    if data["series"]:
        parts.append(f'<p class="warn">{escape(WINDOW_CAVEAT)}</p>')
    if not data["spikes_table"]:
        parts.append("<p>This store keeps no captured spikes (no <code>spikes</code> table): no causes to mark.</p>")
    parts.append(changes_html(data["changes"]))
    parts.append(spikes_html(data["spikes"]))
    parts.append(runs_html(data["runs"]))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>rtqual long-term view: {escape(host)}</title><style>{CSS}{EXTRA_CSS}</style></head>"
        f"<body>{''.join(parts)}</body></html>"
    )


def changes_html(changes: list[dict]) -> str:
    if not changes:
        return (
            "<h2>Settings changes</h2><p>No setting changed in this range (as far as the store and bundles tell).</p>"
        )
    rows = [[_when(c["unix_s"]), c["host"], c["what"], c["from"], c["to"], c["source"]] for c in changes]
    return "<h2>Settings changes</h2>" + _table(
        ["when (UTC)", "host", "setting", "from", "to", "seen in"], rows, "changes"
    )


def spikes_html(spikes: list[dict]) -> str:
    if not spikes:
        return ""
    shown = sorted(spikes, key=lambda s: s.get("time_unix_s") or 0)[:SPIKES_LISTED]
    rows = [
        [_when(s.get("time_unix_s")), s["host"], f"cpu{s.get('cpu')}", format_ns(s.get("latency_ns")), _cause_long(s)]
        for s in shown
    ]
    more = f"<p>{len(spikes) - len(shown)} more not listed.</p>" if len(spikes) > len(shown) else ""
    return "<h2>Captured spikes</h2>" + _table(["when (UTC)", "host", "cpu", "latency", "cause"], rows, "spikes") + more


def runs_html(rows: list[dict]) -> str:
    """The stored runs and cases of the range with their numbers and caveats (a percentile their samples do not
    carry is a dash)."""
    if not rows:
        return ""
    out = []
    shown = rows[-RUNS_LISTED:]
    for r in shown:
        p99 = format_ns(r["p99_ns"]) if caveats.carried("p99_ns", r["count"]) else "-"
        p9999 = format_ns(r["p9999_ns"]) if caveats.carried("p9999_ns", r["count"]) else "-"
        src = f"imported ({r['source']})" if r["source"] else (r["state"] or "")
        out.append(
            [_when(r["started_unix_s"]), r["host"], str(r["kernel"] or "?"), r["label"], f"{r['count'] or 0:,}", p99,
             p9999, format_ns(r["max_ns"]), str(r["verdict"] or "-"), src, str(r["caveats"] or "")]
        )  # fmt: skip
    headers = ["started (UTC)", "host", "kernel", "case", "samples", "p99", "p99.99", "max", "verdict", "run",
               "caveats"]  # fmt: skip
    more = f"<p>{len(rows) - len(shown)} earlier run case(s) not listed.</p>" if len(rows) > len(shown) else ""
    return "<h2>Stored runs</h2>" + _table(headers, out, "runs") + more

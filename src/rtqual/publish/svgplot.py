"""A small SVG chart writer for the HTML report: linear or log axes, stepped or straight lines, filled
bands, grouped bars over named categories, marked values (a threshold), a legend. Pure: data in, SVG text
out; no JavaScript, no network, nothing to load.

Histograms are stepped lines whose empty bins (y <= 0) draw nothing: on a log count axis a zero has no
place, and a line at some stand-in value would read as samples that never were.

Chosen over an inlined chart library because the report's figures are few, static and of bounded size
(histograms of at most a few hundred bins, envelopes of at most 2,000 points): a browser draws them at
once, the file stays small and opens from a USB stick, and the numbers drawn are computed by the same
Python that prints `rtqual show`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import itertools
import math
from dataclasses import dataclass, field
from html import escape

from rtqual.errors import RtqError
from rtqual.util import write_text_atomic

PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
]  # one figure draws at most this many series, each its own colour (overlays split beyond it)


LEGEND_CHARS = 48
"""A legend's name is cut after this many characters (a bundle named by its folder and kernel, its mean and σ)."""
MAX_SERIES = 6
"""Series a figure draws at most for its lines to stay apart; more are drawn as small multiples (split)."""


@dataclass
class Series:
    name: str
    xs: list[float]
    ys: list[float]
    step: bool = False  # a stepped line (histograms): xs are bin edges, ys[i] the bin from xs[i] to xs[i + 1]
    band: list[float] | None = None  # lower edge of a filled band under ys (min/max envelopes)
    labels: list[str] | None = None  # bars: the text above each bar
    color: str | None = None  # a colour of its own (a bundle's, the same in every figure of a comparison)


def runs(s: Series) -> list[tuple[int, int]]:
    """A stepped series' runs of non-empty bins as (first, last + 1) indexes: what is drawn of it."""
    out: list[tuple[int, int]] = []
    for i, y in enumerate(s.ys[: len(s.xs) - 1]):
        if y > 0:
            if out and out[-1][1] == i:
                out[-1] = (out[-1][0], i + 1)
            else:
                out.append((i, i + 1))
    return out


@dataclass
class Axis:
    label: str
    log: bool = False
    lo: float | None = None
    hi: float | None = None
    ticks: list[tuple[float, str]] = field(default_factory=list)


def _nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Decades, and 2 and 5 times them over a range of less than three decades (3 too within one)."""
    steps = (1, 2, 3, 5) if hi < lo * 10 else (1, 2, 5) if hi < lo * 1000 else (1,)
    decades = [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    return [d * m for d in decades for m in steps if lo <= d * m <= hi * (1 + 1e-9)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e4 or abs(v) < 1e-2:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


class _Scale:
    def __init__(self, axis: Axis, values: list[float], px0: float, px1: float):
        vals = [v for v in values if v > 0] if axis.log else values
        lo = axis.lo if axis.lo is not None else min(vals, default=0.0)
        hi = axis.hi if axis.hi is not None else max(vals, default=1.0)
        if axis.log:  # whole decades, but given ends stay (a count axis from 0.5: one sample shows)
            lo = max(lo, 1e-12)
            hi = max(hi, lo * 1.01) if axis.hi is not None else max(hi, lo * 10)
            lo = lo if axis.lo is not None else 10 ** math.floor(math.log10(lo))
            hi = hi if axis.hi is not None else 10 ** math.ceil(math.log10(hi))
        elif hi <= lo:
            hi = lo + 1
        self.log, self.lo, self.hi, self.px0, self.px1 = axis.log, lo, hi, px0, px1

    def __call__(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.px0 + f * (self.px1 - self.px0)

    def ticks(self) -> list[float]:
        return _log_ticks(self.lo, self.hi) if self.log else _nice_ticks(self.lo, self.hi)


def _tick_labels(axis: Axis, scale: _Scale) -> list[tuple[float, str]]:
    """The axis' own ticks (value, label) where it gives them (dates on a time axis), else its scale's."""
    if axis.ticks:
        return [(v, text) for v, text in axis.ticks if scale.lo <= v <= scale.hi]
    return [(v, _fmt(v)) for v in scale.ticks()]


@dataclass
class Figure:
    slug: str  # file name stem for --png
    title: str
    series: list[Series]
    x: Axis
    y: Axis
    width: int = 720
    height: int = 320
    categories: list[str] | None = None  # grouped bars: one group per category, one bar per series
    marks: list[tuple[float, str]] = field(default_factory=list)  # x values marked by a dashed line (threshold)
    note: str = ""  # one line under the title (what the bins are, what differs)
    levels: list[tuple[float, str]] = field(default_factory=list)  # y values marked by a dashed line (requirement)
    points: list[tuple[float, float, str, str]] = field(default_factory=list)  # (x, y, short label, tooltip): spikes
    shadows: list[Series] = field(default_factory=list)  # grey lines behind the series (earlier runs), no legend


def split(fig: Figure, most: int = MAX_SERIES) -> list[Figure]:
    """A figure of more than `most` series as small multiples: the same axes, the series in even parts of at
    most `most`, each part titled 'part i of n' (its slug numbered); a figure within the limit as it is.
    Grouped bars stay whole (one bar per series in each group)."""
    n = -(-len(fig.series) // most)
    if n <= 1 or fig.categories is not None:
        return [fig]
    per = -(-len(fig.series) // n)
    return [
        dataclasses.replace(
            fig,
            slug=f"{fig.slug}-{k + 1}",
            title=f"{fig.title} (part {k + 1} of {n})",
            series=fig.series[k * per : (k + 1) * per],
        )
        for k in range(n)
    ]


_clip_ids = itertools.count(1)


def colors(series: list[Series]) -> list[str]:
    """Each series' colour (its own, else the palette's in order), all distinct; RtqError for more series than
    PALETTE or two of one colour: the figure's maker must split it."""
    if len(series) > len(PALETTE):
        raise RtqError(f"a figure of {len(series)} series: at most {len(PALETTE)} (split it)")
    own = all(s.color for s in series)
    out = [s.color or "" for s in series] if own else PALETTE[: len(series)]
    if len(set(out)) < len(out):
        raise RtqError(f"a figure with two series of one colour: {', '.join(s.name for s in series)}")
    return out


def chart(fig: Figure) -> str:
    """One SVG figure: title (and note), axes with ticks and labels, each series a path (or bars over
    categories), marked values, a legend at the top right."""
    title, series, x, y, width, height = fig.title, fig.series, fig.x, fig.y, fig.width, fig.height
    bars = fig.categories is not None
    left, right, top, bottom = 64, 16, (40 if fig.note else 28) + (14 if bars else 0), 46
    clip = f"clip{next(_clip_ids)}"
    palette = colors(series)
    xs = [0.0, float(len(fig.categories or []))] if bars else [v for s in series for v in s.xs]
    ys = [v for s in [*series, *fig.shadows] for v in s.ys if not (s.step and v <= 0)]
    ys += [v for s in series for v in (s.band or [])]
    sx = _Scale(Axis(x.label, lo=0, hi=xs[1]) if bars else x, xs, left, width - right)
    if bars and not y.log and y.hi is None:  # room above the tallest bar for its label
        y = Axis(y.label, y.log, y.lo, max(ys, default=1.0) * 1.15 or 1.0, y.ticks)
    sy = _Scale(y, ys, height - bottom, top)
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="title">{escape(title)}</text>',
    ]
    if fig.note:
        out.append(f'<text x="{left}" y="31" class="note">{escape(fig.note)}</text>')
    out.append(
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" class="frame"/>'
    )
    if not bars:
        for t, text in _tick_labels(x, sx):
            px = sx(t)
            out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{height - bottom}" class="grid"/>')
            out.append(
                f'<text x="{px:.1f}" y="{height - bottom + 14}" class="tick" text-anchor="middle">{escape(text)}</text>'
            )
    for t, text in _tick_labels(y, sy):
        py = sy(t)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py:.1f}" y2="{py:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 4}" y="{py + 4:.1f}" class="tick" text-anchor="end">{escape(text)}</text>')
    out.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" class="axis-label" '
        f'text-anchor="middle">{escape(x.label)}</text>'
    )
    out.append(
        f'<text transform="translate(14 {(top + height - bottom) / 2}) rotate(-90)" class="axis-label" '
        f'text-anchor="middle">{escape(y.label)}</text>'
    )
    out.append(
        f'<clipPath id="{clip}"><rect x="{left}" y="{top}" width="{width - left - right}" '
        f'height="{height - top - bottom}"/></clipPath><g clip-path="url(#{clip})">'
    )
    if bars:
        out += _bars(fig, sx, sy, palette)
        out.append("</g>")
        out += _category_labels(fig.categories or [], sx, sy)
        out.append(f'<g clip-path="url(#{clip})">')
    for s in [] if bars else fig.shadows:  # earlier runs: grey, thin, behind the figure's own series
        out.append(
            f'<path d="{_path(s, sx, sy)}" fill="none" stroke="#9e9e9e" stroke-opacity="0.6" stroke-width="1" '
            f'class="shadow" data-name="{escape(s.name)}"><title>{escape(s.name)}</title></path>'
        )
    for s, color in zip([] if bars else series, palette):
        if s.band is not None and s.xs:
            upper = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(s.xs, s.ys))
            lower = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in reversed(list(zip(s.xs, s.band))))
            out.append(f'<polygon points="{upper} {lower}" fill="{color}" fill-opacity="0.25" stroke="none"/>')
        out.append(
            f'<path d="{_path(s, sx, sy)}" fill="none" stroke="{color}" stroke-width="1.3" '
            f'class="series" data-name="{escape(s.name)}"><title>{escape(s.name)}</title></path>'
        )
        if not s.step and len(s.xs) <= 60:  # few points: each one visible
            out += [f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="2.5" fill="{color}"/>' for a, b in zip(s.xs, s.ys)]
    for value, text in [] if bars else fig.marks:
        if sx.lo <= value <= sx.hi:
            px = sx(value)
            # a label in the right half reads leftwards from its line: never clipped by the frame's right edge
            right_half = px > (left + width - right) / 2
            tx, anchor = (px - 3, ' text-anchor="end"') if right_half else (px + 3, "")
            out.append(
                f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{height - bottom}" class="mark"/>'
                f'<text x="{tx:.1f}" y="{height - bottom - 4}" class="mark-label"{anchor}>{escape(text)}</text>'
            )
    for value, text in [] if bars else fig.levels:  # a requirement's limit: a dashed line across
        if sy.lo <= value <= sy.hi:
            py = sy(value)
            out.append(
                f'<line x1="{left}" x2="{width - right}" y1="{py:.1f}" y2="{py:.1f}" class="mark level"/>'
                f'<text x="{left + 4}" y="{py - 3:.1f}" class="mark-label">{escape(text)}</text>'
            )
    for px_v, py_v, text, tip in [] if bars else fig.points:  # spikes: a marker, its cause beside it
        px, py = sx(px_v), sy(py_v)
        anchor = ' text-anchor="end"' if px > (left + width - right) / 2 else ""
        out.append(
            f'<g class="point"><title>{escape(tip)}</title><path d="M{px:.1f},{py - 5:.1f}l4,7h-8z" fill="#b71c1c"/>'
            f'<text x="{px + (-6 if anchor else 6):.1f}" y="{py - 2:.1f}" class="mark-label"{anchor}>{escape(text)}'
            "</text></g>"
        )
    out.append("</g>")
    out += _legend(series, palette, bars, left, top, width - right)
    out.append("</svg>")
    return "\n".join(out)


HEAT = ["#fff5eb", "#fee6ce", "#fdd0a2", "#fdae6b", "#fd8d3c", "#f16913", "#d94801", "#a63603", "#7f2704"]
"""The heat map's colours, light to dark: one per power of ten of the count (1, 10, 100, ... and beyond)."""


@dataclass
class Heat:
    """A heat map: one column per time step (xs: each column's start, the last its end), one row per latency
    bin (ys: bin edges, log axis), cells[i] = {row: count} of column i; the count's power of ten is its colour."""

    slug: str
    title: str
    xs: list[float]
    ys: list[float]
    cells: list[dict[int, int]]
    x: Axis
    y: Axis
    note: str = ""
    width: int = 1000
    height: int = 360


def heatmap(h: Heat) -> str:
    """A heat map as one SVG: the cells of each colour one path (a year of days stays a few hundred KB), the
    axes as chart() draws them, and the colour key (samples per cell, powers of ten)."""
    left, right, top, bottom = 64, 90, 40 if h.note else 28, 46
    sx = _Scale(h.x, h.xs, left, h.width - right)
    sy = _Scale(h.y, h.ys, h.height - bottom, top)
    paths: dict[int, list[str]] = {}
    for i, col in enumerate(h.cells[: len(h.xs) - 1]):
        x0, x1 = sx(h.xs[i]), sx(h.xs[i + 1])
        for row, n in col.items():
            if n <= 0 or not 0 <= row < len(h.ys) - 1:
                continue
            level = min(int(math.log10(n)), len(HEAT) - 1)
            y0, y1 = sy(h.ys[row + 1]), sy(h.ys[row])
            paths.setdefault(level, []).append(
                f"M{x0:.1f},{y0:.1f}h{max(x1 - x0, 0.6):.1f}v{y1 - y0:.1f}h-{max(x1 - x0, 0.6):.1f}z"
            )
    out = [
        f'<svg class="chart heat" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {h.width} {h.height}" '
        f'width="{h.width}" height="{h.height}" role="img" aria-label="{escape(h.title)}">',
        f'<text x="{left}" y="16" class="title">{escape(h.title)}</text>',
    ]
    if h.note:
        out.append(f'<text x="{left}" y="31" class="note">{escape(h.note)}</text>')
    out.append(
        f'<rect x="{left}" y="{top}" width="{h.width - left - right}" height="{h.height - top - bottom}" '
        'class="frame"/>'
    )
    for level in sorted(paths):
        out.append(
            f'<path d="{"".join(paths[level])}" fill="{HEAT[level]}" class="series cells" data-level="{level}"/>'
        )
    out += _axes(h.x, sx, h.y, sy, left, h.width - right, top, h.height - bottom, h.height)
    for level, color in enumerate(HEAT):  # the key: samples per cell
        ky = top + 4 + 14 * level
        out.append(
            f'<rect x="{h.width - right + 8}" y="{ky}" width="12" height="12" fill="{color}" stroke="#ccc"/>'
            f'<text x="{h.width - right + 24}" y="{ky + 10}" class="legend">'
            f"{'≥ ' if level else ''}{_fmt(10.0**level)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _axes(x: Axis, sx: _Scale, y: Axis, sy: _Scale, left: float, right: float, top: float, bottom: float,
          height: float) -> list[str]:  # fmt: skip
    """Tick marks, tick labels and axis labels (the grid lines are left out: they would hide cells)."""
    out = []
    for t, text in _tick_labels(x, sx):
        px = sx(t)
        out.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{bottom}" y2="{bottom + 4}" stroke="#999"/>'
            f'<text x="{px:.1f}" y="{bottom + 14}" class="tick" text-anchor="middle">{escape(text)}</text>'
        )
    for t, text in _tick_labels(y, sy):
        py = sy(t)
        out.append(
            f'<line x1="{left - 4}" x2="{left}" y1="{py:.1f}" y2="{py:.1f}" stroke="#999"/>'
            f'<text x="{left - 6}" y="{py + 4:.1f}" class="tick" text-anchor="end">{escape(text)}</text>'
        )
    out.append(
        f'<text x="{(left + right) / 2}" y="{height - 8}" class="axis-label" '
        f'text-anchor="middle">{escape(x.label)}</text>'
        f'<text transform="translate(14 {(top + bottom) / 2}) rotate(-90)" class="axis-label" '
        f'text-anchor="middle">{escape(y.label)}</text>'
    )
    return out


@dataclass
class Stack:
    """OSADL's stacked view: one stepped histogram per time step (rows[i] = {bin: count} over the bin edges xs,
    a log latency axis), each on its own baseline, the oldest at the back (top), its height the log of the count."""

    slug: str
    title: str
    xs: list[float]
    rows: list[dict[int, int]]
    names: list[str]  # each row's 'DATE: detail' (its tooltip; every few rows' DATE labels the y axis)
    x: Axis
    note: str = ""
    width: int = 1000
    height: int = 520
    y_label: str = "Day (oldest at the back), height: log10 samples per bin"


def stacked(st: Stack) -> str:
    """The stacked histograms as one SVG: each row a white-filled stepped outline (so the newer rows in front
    hide the older ones behind), the count axis log10(samples per bin) within each row's band."""
    left, right, top, bottom = 110, 16, 40 if st.note else 28, 46
    sx = _Scale(st.x, st.xs, left, st.width - right)
    n = max(len(st.rows), 1)
    band = (st.height - top - bottom) * 0.3  # a row's full height: the largest count
    dy = (st.height - top - bottom - band) / max(n - 1, 1)
    most = max((c for r in st.rows for c in r.values()), default=1)
    scale = band / max(math.log10(most) + 1, 1)
    out = [
        f'<svg class="chart stack" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {st.width} {st.height}" '
        f'width="{st.width}" height="{st.height}" role="img" aria-label="{escape(st.title)}">',
        f'<text x="{left}" y="16" class="title">{escape(st.title)}</text>',
    ]
    if st.note:
        out.append(f'<text x="{left}" y="31" class="note">{escape(st.note)}</text>')
    every = max(1, n // 12)
    for i, (row, name) in enumerate(zip(st.rows, st.names)):
        base = top + band + i * dy
        d: list[str] = []
        prev: int | None = None  # one outline per run of non-empty bins: up, along each bin's count, down
        for k in sorted(k for k in row if 0 <= k < len(st.xs) - 1 and row[k] > 0):
            y = base - (math.log10(row[k]) + 1) * scale
            if prev != k - 1:  # a new run: close the last one at the baseline, start at this bin's left edge
                d.append(f"{'V' + format(base, '.1f') if d else ''}M{sx(st.xs[k]):.1f},{base:.1f}")
            d.append(f"V{y:.1f}H{sx(st.xs[k + 1]):.1f}")
            prev = k
        if d:
            d.append(f"V{base:.1f}")
        if d:
            out.append(
                f'<path d="{"".join(d)}" fill="#fff" stroke="#1f77b4" stroke-width="0.8" class="series">'
                f"<title>{escape(name)}</title></path>"
            )
        if i % every == 0:
            out.append(
                f'<text x="{left - 6}" y="{base + 3:.1f}" class="tick" text-anchor="end">'
                f"{escape(name.partition(': ')[0])}</text>"
            )
    for t, text in _tick_labels(st.x, sx):
        px = sx(t)
        out.append(
            f'<text x="{px:.1f}" y="{st.height - bottom + 14}" class="tick" text-anchor="middle">{escape(text)}</text>'
        )
    out.append(
        f'<text x="{(left + st.width - right) / 2}" y="{st.height - 8}" class="axis-label" '
        f'text-anchor="middle">{escape(st.x.label)}</text>'
        f'<text transform="translate(14 {(st.height) / 2}) rotate(-90)" class="axis-label" '
        f'text-anchor="middle">{escape(st.y_label)}</text>'
    )
    out.append("</svg>")
    return "\n".join(out)


def _legend(series: list[Series], palette: list[str], bars: bool, left: int, top: int, right: int) -> list[str]:
    """Each series' colour and name: for lines at the top right inside the frame on a white box (no line runs
    through a name), for bars in one row above the frame (no bar or its label hidden)."""
    if not series:
        return []
    names = [s.name[:LEGEND_CHARS] for s in series]
    if bars:
        out, x = [], right
        for name, color in reversed(list(zip(names, palette))):
            x -= 6 * len(name) + 26
            out.append(
                f'<rect x="{x}" y="{top - 13}" width="12" height="9" fill="{color}"/>'
                f'<text x="{x + 16}" y="{top - 5}" class="legend">{escape(name)}</text>'
            )
        return out
    lx = right - 8 - 6 * max(len(n) for n in names)
    out = [
        f'<rect x="{lx - 24}" y="{top + 2}" width="{right - lx + 20}" height="{14 * len(series) + 4}" '
        'class="legend-box"/>'
    ]
    for i, (name, color) in enumerate(zip(names, palette)):
        ly = top + 14 + 14 * i
        out.append(
            f'<line x1="{lx - 18}" x2="{lx - 4}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>'
            f'<text x="{lx}" y="{ly}" class="legend">{escape(name)}</text>'
        )
    return out


def _bars(fig: Figure, sx: _Scale, sy: _Scale, palette: list[str]) -> list[str]:
    """Grouped bars: per category (named under the axis), one bar per series with its label above it."""
    cats, series = fig.categories or [], fig.series
    base = sy(sy.lo)
    out = []
    for k, cat in enumerate(cats):
        x0, x1 = sx(k), sx(k + 1)
        width = (x1 - x0) * 0.8 / max(1, len(series))
        for j, (s, color) in enumerate(zip(series, palette)):
            if k >= len(s.ys) or s.ys[k] is None:
                continue
            v = s.ys[k]
            bx, top = x0 + (x1 - x0) * 0.1 + j * width, sy(v) if v > 0 or not sy.log else base
            out.append(  # a path, as the lines are: one drawn series element per bar
                f'<path d="M{bx:.1f},{base:.1f}V{top:.1f}H{bx + width:.1f}V{base:.1f}Z" fill="{color}" '
                f'class="series bar" data-name="{escape(s.name)}" data-category="{escape(cat)}">'
                f"<title>{escape(s.name)}, {escape(cat)}: {escape((s.labels or [])[k] if s.labels else _fmt(v))}"
                "</title></path>"
            )
            if s.labels and k < len(s.labels) and s.labels[k]:
                out.append(
                    f'<text x="{bx + width / 2:.1f}" y="{top - 3:.1f}" class="bar-label" text-anchor="middle">'
                    f"{escape(s.labels[k])}</text>"
                )
    return out


def _category_labels(cats: list[str], sx: _Scale, sy: _Scale) -> list[str]:
    """Each bar group's name under the axis (shortened to its room, whole in its tooltip)."""
    out = []
    for k, cat in enumerate(cats):
        x0, x1 = sx(k), sx(k + 1)
        room = max(4, int((x1 - x0) / 6.2))
        short = cat if len(cat) <= room else cat[: room - 1] + "…"
        out.append(
            f"<g><title>{escape(cat)}</title>"  # the tooltip beside the text, not in it (its textContent is the name)
            f'<text x="{(x0 + x1) / 2:.1f}" y="{sy.px0 + 14:.1f}" class="tick category" text-anchor="middle">'
            f"{escape(short)}</text></g>"
        )
    return out


def _path(s: Series, sx: _Scale, sy: _Scale) -> str:
    """A series' SVG path: straight segments, or per run of non-empty bins a stepped line (empty bins: none)."""
    if not s.xs:
        return ""
    if not s.step:
        return "M" + " L".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(s.xs, s.ys))
    d = []
    for first, end in runs(s):
        d.append(f"M{sx(s.xs[first]):.1f},{sy(s.ys[first]):.1f}H{sx(s.xs[first + 1]):.1f}")
        d += [f"V{sy(s.ys[i]):.1f}H{sx(s.xs[i + 1]):.1f}" for i in range(first + 1, end)]
    return "".join(d)


# matplotlib stays an extra (`png`): with numpy, pillow and fonttools it is ~170 MB installed against ~35 MB for
# rtqual and its other dependencies, PyPI has no armhf (armv7l) wheels of it or numpy (a 32-bit Raspberry Pi
# would compile them), and only --png needs it: the report's own figures are SVG, drawn by this module
PNG_MISSING = "--png needs matplotlib (not installed): pip install matplotlib, or rtqual's extra: pip install '.[png]'"


def require_png() -> None:
    """RtqError naming what to install when matplotlib is missing: checked before a report is written,
    so `--png` without it ends in one line, not a traceback after half the work."""
    if importlib.util.find_spec("matplotlib") is None:
        raise RtqError(PNG_MISSING)


def to_png(fig: Figure, path) -> None:
    """The same figure drawn by matplotlib (Agg), for papers and slides."""
    require_png()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, ax = plt.subplots(figsize=(fig.width / 100, fig.height / 100), dpi=150)
    palette = colors(fig.series)
    if fig.categories is not None:
        width = 0.8 / max(1, len(fig.series))
        for j, (s, color) in enumerate(zip(fig.series, palette)):
            pos = [k - 0.4 + width * (j + 0.5) for k in range(len(s.ys))]
            ax.bar(pos, s.ys, width=width, color=color, label=s.name)
            for px, v, text in zip(pos, s.ys, s.labels or []):
                ax.annotate(text, (px, v), ha="center", va="bottom", fontsize=6)
    for s, color in zip([] if fig.categories is not None else fig.series, palette):
        if s.band is not None:
            ax.fill_between(s.xs, s.band, s.ys, color=color, alpha=0.25, linewidth=0)
        if s.step:  # each run of non-empty bins on its own: nothing drawn for an empty bin
            for n, (first, end) in enumerate(runs(s)):
                ax.stairs(s.ys[first:end], s.xs[first : end + 1], baseline=None, color=color, lw=1,
                          label=s.name if n == 0 else None)  # fmt: skip
        else:
            ax.plot(s.xs, s.ys, color=color, lw=1, label=s.name)
    for value, text in fig.marks:
        ax.axvline(value, color="#555", ls="--", lw=0.8)
        ax.annotate(text, (value, 0.02), xycoords=("data", "axes fraction"), fontsize=6)
    ax.set_xscale("log" if fig.x.log and fig.categories is None else "linear")
    ax.set_yscale("log" if fig.y.log else "linear")
    if fig.categories is not None:  # after the scales, which reset the ticks
        ax.set_xticks(range(len(fig.categories)), fig.categories, fontsize=7)
    if fig.y.lo is not None:
        ax.set_ylim(bottom=fig.y.lo)
    ax.set_xlabel(fig.x.label)
    ax.set_ylabel(fig.y.label)
    ax.set_title(fig.title + (f"\n{fig.note}" if fig.note else ""), fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    f.tight_layout()
    png = io.BytesIO()
    f.savefig(png, format="png")
    plt.close(f)
    write_text_atomic(path, png.getvalue())  # a temp file no planted symlink stands for, then renamed

"""A small SVG line-chart writer for the HTML report: linear or log axes, stepped or straight lines,
filled bands, a legend. Pure: data in, SVG text out; no JavaScript, no network, nothing to load.

Chosen over an inlined chart library because the report's figures are few, static and of bounded size
(histograms of at most a few hundred bins, envelopes of at most 2,000 points): a browser draws them at
once, the file stays small and opens from a USB stick, and the numbers drawn are computed by the same
Python that prints `rtqual show`.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
from dataclasses import dataclass, field
from html import escape

from rtqual.errors import RtqError

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]


@dataclass
class Series:
    name: str
    xs: list[float]
    ys: list[float]
    step: bool = False  # draw as a stepped line (histograms)
    band: list[float] | None = None  # lower edge of a filled band under ys (min/max envelopes)


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
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) if lo <= 10.0**e <= hi]


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
        if axis.log:
            lo, hi = max(lo, 1e-12), max(hi, lo * 10)
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
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


@dataclass
class Figure:
    slug: str  # file name stem for --png
    title: str
    series: list[Series]
    x: Axis
    y: Axis
    width: int = 720
    height: int = 320


_clip_ids = itertools.count(1)


def chart(fig: Figure) -> str:
    """One SVG figure: axes with ticks and labels, each series a path, a legend at the top right."""
    title, series, x, y, width, height = fig.title, fig.series, fig.x, fig.y, fig.width, fig.height
    left, right, top, bottom = 64, 16, 28, 46
    clip = f"clip{next(_clip_ids)}"
    xs = [v for s in series for v in s.xs]
    ys = [v for s in series for v in s.ys] + [v for s in series for v in (s.band or [])]
    sx = _Scale(x, xs, left, width - right)
    sy = _Scale(y, ys, height - bottom, top)
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="title">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" class="frame"/>',
    ]
    for t in sx.ticks():
        px = sx(t)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{height - bottom}" class="grid"/>')
        out.append(f'<text x="{px:.1f}" y="{height - bottom + 14}" class="tick" text-anchor="middle">{_fmt(t)}</text>')
    for t in sy.ticks():
        py = sy(t)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py:.1f}" y2="{py:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 4}" y="{py + 4:.1f}" class="tick" text-anchor="end">{_fmt(t)}</text>')
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
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
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
    out.append("</g>")
    for i, s in enumerate(series):
        ly = top + 14 + 14 * i
        color = PALETTE[i % len(PALETTE)]
        out.append(
            f'<line x1="{width - right - 150}" x2="{width - right - 134}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        out.append(f'<text x="{width - right - 130}" y="{ly}" class="legend">{escape(s.name[:28])}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _path(s: Series, sx: _Scale, sy: _Scale) -> str:
    if not s.xs:
        return ""
    pts = [(sx(a), sy(b)) for a, b in zip(s.xs, s.ys)]
    if not s.step:
        return "M" + " L".join(f"{a:.1f},{b:.1f}" for a, b in pts)
    d = [f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"]
    for x1, y1 in pts[1:]:
        d.append(f"H{x1:.1f}V{y1:.1f}")
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
    for i, s in enumerate(fig.series):
        color = PALETTE[i % len(PALETTE)]
        if s.band is not None:
            ax.fill_between(s.xs, s.band, s.ys, color=color, alpha=0.25, linewidth=0)
        ax.plot(s.xs, s.ys, drawstyle="steps-post" if s.step else "default", color=color, lw=1, label=s.name)
    ax.set_xscale("log" if fig.x.log else "linear")
    ax.set_yscale("log" if fig.y.log else "linear")
    if fig.y.lo is not None:
        ax.set_ylim(bottom=fig.y.lo)
    ax.set_xlabel(fig.x.label)
    ax.set_ylabel(fig.y.label)
    ax.set_title(fig.title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    f.tight_layout()
    f.savefig(path)
    plt.close(f)

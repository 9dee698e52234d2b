"""A capacity sweep in the HTML report (rtqual capacity): its answer, the figures of latency and queue high-water
against the load, the table of steps; and the sweeps among compared bundles, their p99 curves overlaid."""

from __future__ import annotations

from html import escape

from rtqual.publish import capacity
from rtqual.publish.svgplot import Axis, Figure, Series, chart


def capacity_html(doc: dict) -> str:
    """A capacity sweep (capacity.json): its answer, its figures and the table of steps."""
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
    named = [(n, b["capacity"]) for n, b in zip(names, bundles) if b.get("capacity")]
    if not named:
        return ""
    items = "".join(f"<li><b>{escape(n)}</b>: {escape(str(d.get('answer')))}</li>" for n, d in named)
    plot = capacity.overlay_plot(named)
    fig = f'<div class="figs">{chart(_plot_figure(plot))}</div>' if plot else ""
    return f'<h2>Capacity</h2><ul id="capacity-compare">{items}</ul>{fig}'

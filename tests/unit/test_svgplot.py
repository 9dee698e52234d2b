"""The SVG figures as drawn text (issue 22 item 7): nothing drawn for an empty histogram bin, both axes
labelled, one distinct colour per series, IOC stages and transfer speeds as bars named by what they are,
the threshold marked and stated."""

import random
import re

import pytest
from test_htmlreport import BUNDLES, hist

from rtqual.errors import RtqError
from rtqual.publish import htmlreport, svgplot
from rtqual.publish.svgplot import Axis, Figure, Series, chart


def svg_of(fig: Figure) -> str:
    return chart(fig)


def path_x_spans(svg: str) -> list[list[tuple[float, float]]]:
    """Per series path: the x spans of its horizontal segments (M x,y H x2 ... V y H x3)."""
    out = []
    for d in re.findall(r'<path d="([^"]*)"[^>]*class="series"', svg):
        spans, x = [], None
        for cmd, a in re.findall(r"([MHV])([-\d.,]+)", d):
            if cmd == "M":
                x = float(a.split(",")[0])
            elif cmd == "H":
                spans.append((x, float(a)))
                x = float(a)
        out.append(spans)
    return out


def test_an_empty_bin_draws_nothing_and_every_sample_is_counted():
    """Two clusters with a gap of empty bins between them: the path has two runs, none over the gap, and no
    y value stands in for zero."""
    rng = random.Random(5)
    values = [rng.randrange(10_000, 20_000) for _ in range(3000)] + [900_000, 901_000]
    (s,), worst = htmlreport.hist_series({"0": hist(values)})
    assert worst == 901_000 and sum(s.ys) == len(values) and min(s.ys) == 0  # zeros stay zeros
    runs = svgplot.runs(s)
    assert len(runs) == 2 and all(s.ys[i] > 0 for a, b in runs for i in range(a, b))
    empty = [i for i in range(len(s.xs) - 1) if s.ys[i] == 0]
    fig = htmlreport.hist_figure("h", "histogram", [s], worst, [])
    svg = svg_of(fig)
    (spans,) = path_x_spans(svg)
    scale = svgplot._Scale(fig.x, s.xs, 64, fig.width - 16)
    for i in empty:  # no horizontal segment lies over an empty bin's inside
        lo, hi = scale(s.xs[i]), scale(s.xs[i + 1])
        assert not any(a < hi - 0.2 and b > lo + 0.2 for a, b in spans), i
    ys = {float(v) for v in re.findall(r"V([-\d.]+)", svg)} | {
        float(m.split(",")[1]) for m in re.findall(r"M([-\d.]+,[-\d.]+)", svg)
    }
    bottom = fig.height - 46
    assert all(y < bottom - 1 for y in ys)  # nothing drawn at the bottom (or below) for a zero


def test_histogram_axis_is_log_latency_and_labelled_with_the_worst_case_and_the_threshold():
    r = htmlreport.load_bundle(BUNDLES / "scenario")["cases"][0]
    hist_fig = htmlreport.case_figures(r)[0]
    assert hist_fig.x.log and hist_fig.y.log and "worst case" in hist_fig.x.label
    svg = chart(hist_fig)
    labels = re.findall(r'class="axis-label"[^>]*>([^<]+)<', svg)
    assert len(labels) == 2 and "Latency" in labels[0] and "Samples" in labels[1]
    assert "threshold 100us" in svg and 'class="mark"' in svg
    assert "empty bins not drawn" in svg


def test_ioc_histogram_names_the_ioc_cpus_not_cpu0():
    data = htmlreport.load_bundle(BUNDLES / "ioc")
    ioc = next(r for r in data["cases"] if r["id"] == "002-ioc")
    names = {s.name for f in htmlreport.case_figures(ioc) if not f.categories for s in f.series}
    assert "IOC on cpus 0-1" in names and not any(n.startswith("cpu") for n in names)


def test_ioc_stages_are_bars_named_by_stage():
    data = htmlreport.load_bundle(BUNDLES / "ioc")
    ioc = next(r for r in data["cases"] if r["id"] == "002-ioc")
    (stages,) = [f for f in htmlreport.case_figures(ioc) if f.slug.endswith("-stages")]
    svg = chart(stages)
    named = set(re.findall(r'class="series bar" data-name="[^"]+" data-category="([^"]+)"', svg))
    assert named == {"wake", "dispatch", "chain", "return", "total"}
    shown = re.findall(r'class="tick category"[^>]*>([^<]+)<', svg)
    assert shown == ["wake", "dispatch", "chain", "return", "total"]
    assert svg.count('class="bar-label"') == 3 * 5  # p50, p99, max of each, their values written


def test_transfer_speed_is_labelled_bars_per_case():
    cases = [
        {"id": f"00{i}", "label": f"pio D{w} read", "probe_summary": {"cpus": [{"throughput_mb_s": x}]}}
        for i, (w, x) in enumerate([(8, 2.0), (16, 4.0), (32, 8.0)])
    ]
    fig = htmlreport.throughput_figure(cases)
    assert fig is not None and fig.categories == ["pio D8 read", "pio D16 read", "pio D32 read"]
    svg = chart(fig)
    assert re.findall(r'class="bar-label"[^>]*>([^<]+)<', svg) == ["2.0 (1.00×)", "4.0 (2.00×)", "8.0 (4.00×)"]
    assert "Transfer speed (MB/s)" in svg


def test_every_series_of_a_figure_has_its_own_colour_and_too_many_are_refused():
    series = [Series(f"s{i}", [1.0, 2.0], [1.0, float(i + 1)]) for i in range(len(svgplot.PALETTE))]
    svg = chart(Figure("x", "t", series, Axis("x"), Axis("y")))
    strokes = re.findall(r'<path d="[^"]*" fill="none" stroke="([^"]+)"', svg)
    assert len(strokes) == len(series) == len(set(strokes))
    with pytest.raises(RtqError, match="split"):
        chart(Figure("x", "t", [*series, Series("one more", [1.0], [1.0])], Axis("x"), Axis("y")))
    twins = [Series("a", [1.0], [1.0], color="#000"), Series("b", [1.0], [2.0], color="#000")]
    with pytest.raises(RtqError, match="one colour"):
        chart(Figure("x", "t", twins, Axis("x"), Axis("y")))


def test_overlays_hold_only_comparable_cases_and_split_beyond_six_series():
    """Issue 35 item 9: at most MAX_SERIES (6) series a plot, small multiples in even parts beyond."""
    rng = random.Random(2)

    def case(i, probe, sample=None):
        h = hist([rng.randrange(5_000, 50_000) for _ in range(200)])
        return {
            "id": f"{i:03d}",
            "label": f"{probe} {i}",
            "probe": probe,
            "params": {"sample": sample},
            "hists": {"0": h},
        }

    cases = [case(i, "pio", "access") for i in range(12)] + [case(20 + i, "pio", "pass") for i in range(3)]
    cases += [case(30 + i, "timer") for i in range(2)]
    figs = htmlreport.bundle_figures(cases)
    assert [len(f.series) for f in figs] == [6, 6, 3, 2]
    for f in figs:
        kinds = {next(c for c in cases if c["label"] == s.name)["params"]["sample"] for s in f.series}
        probes = {next(c for c in cases if c["label"] == s.name)["probe"] for s in f.series}
        assert len(kinds) == 1 and len(probes) == 1, f.title
        strokes = re.findall(r'<path d="[^"]*" fill="none" stroke="([^"]+)"', chart(f))
        assert len(strokes) == len(set(strokes))
    assert "(1 of 2)" in figs[0].title and "(2 of 2)" in figs[1].title


def test_stats_tables_state_the_threshold():
    data = htmlreport.load_bundle(BUNDLES / "scenario")
    html = htmlreport.stats_table(data["cases"][0])
    assert "% over 100us" in html and "over 100us" in html and "%&gt;thr" not in html

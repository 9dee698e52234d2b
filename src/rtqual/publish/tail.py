"""rtqual tail: a bundle's cases through the extreme-value analysis (answers/evidence/tail.py), as text, JSON and a
return-level figure (docs/tail.md)."""

from __future__ import annotations

from collections.abc import Iterable

from rtqual.answers.evidence import tail
from rtqual.errors import RtqError
from rtqual.publish import svgplot
from rtqual.results import blockmax, rawfile
from rtqual.results.bundle import Model, Unreadable
from rtqual.units import format_ns


def case_blocks(model: Model, case: dict) -> blockmax.BlockMaxima:
    """A case's per-CPU block maxima: from its stream's progress records, else from its raw.bin samples."""
    try:
        bm = blockmax.from_records(model.records(case["id"], ('"progress"', '"header"')))
    except Unreadable:
        bm = blockmax.BlockMaxima()
    except blockmax.Damaged as e:
        raise RtqError(f"{model.path}: case {case['id']}: stream.jsonl: {e}") from None
    if not bm.per_cpu:
        raw = model.raw_file(case["id"])
        if raw is not None:
            bm = blockmax.from_samples((c, t, lat) for c, t, lat, _ in rawfile.samples(raw))
    return bm


def analyse_case(bm: blockmax.BlockMaxima, label: str, periods_s: tuple[float, ...] = ()) -> list[dict]:
    """The tail of one case per CPU and for all CPUs together ("all": the maximum over the CPUs of each block)."""
    block_s = bm.block_ns / 1e9
    rows = [tail.analyse(bm.series(c), block_s, bm.samples(c), label, str(c), periods_s) for c in bm.cpus]
    if len(bm.cpus) != 1:
        rows.append(tail.analyse(bm.series(None), block_s, bm.samples(None), label, "all", periods_s))
    return rows


def analyse_bundle(model: Model, label: str | None = None, periods_s: tuple[float, ...] = ()) -> dict:
    """{"cases": [...]} for every case of the bundle (or the one labelled `label`) with block maxima."""
    cases = [c for c in model.cases if label is None or c.get("label") == label or c.get("id") == label]
    if label is not None and not cases:
        known = ", ".join(repr(c.get("label")) for c in model.cases)
        raise RtqError(f"--case: no case labelled {label!r} in the bundle (cases: {known})")
    out: list[dict] = []
    for c in cases:
        bm = case_blocks(model, c)
        out += analyse_case(bm, str(c.get("label") or c.get("id")), periods_s)
    return {"cases": out, "limits": tail.LIMITS}


def analyse_samples(samples: Iterable[tuple[int, int, int]], label: str, periods_s: tuple[float, ...] = ()) -> dict:
    """{"cases": [...]} of timestamped samples (cpu, time_ns, latency_ns) from outside a bundle (jitterdebugger's
    samples.raw: thread N is CPU N without -a) cut into 1 s blocks per CPU: the same analysis as a bundle's."""
    return {"cases": analyse_case(blockmax.from_samples(samples), label, periods_s), "limits": tail.LIMITS}


def _p(check: dict) -> str:
    return f"p = {check['p_value']:.3g}, {'passed' if check['passed'] else 'FAILED'}"


def checks_in_words(case: dict) -> list[str]:
    """The checks of one case as sentences."""
    ch, bt = case.get("checks") or {}, case.get("backtest") or {}
    lines = []
    if "independence" in ch:
        c = ch["independence"]
        lines.append(f"independence of the {c['blocks_s']:g} s maxima (Ljung-Box, {c['lags']} lags): {_p(c)}")
    if "stationarity" in ch:
        c = ch["stationarity"]
        lines.append(f"stationarity of the {c['blocks_s']:g} s maxima (KPSS, level): {_p(c)}")
    if "fit" in ch:
        lines.append(f"fit of the exceedances to the generalized Pareto (Anderson-Darling): {_p(ch['fit'])}")
    for lv in bt.get("levels", []):
        lines.append(
            f"backtest (fit on the first {bt['fit_s']:.0f} s): {format_ns(lv['value_ns'])} expected "
            f"{lv['expected']:g} time(s) in the last {bt['test_s']:.0f} s, seen {lv['observed']} "
            f"(p = {lv['p_value']:.3g})"
        )
    if bt.get("note"):
        lines.append(f"backtest: {bt['note']}")
    return lines


def text(result: dict) -> str:
    """The per-case, per-CPU tails as a text report."""
    lines = []
    for c in result["cases"]:
        head = f"{c['label']}  cpu {c['cpu']}: {c['verdict']}"
        if c["threshold_ns"] is not None:
            xi, (lo, hi) = c["shape"]["xi"], c["shape"]["ci"]
            f = lambda x: "?" if x is None else f"{x:.2f}"
            head += (
                f"  (threshold {format_ns(c['threshold_ns'])}, {c['exceedances']} exceedances in "
                f"{c['clusters']} clusters over {c['duration_s']:.0f} s; ξ = {f(xi)}, 95 % CI {f(lo)}–{f(hi)})"
            )
        lines.append(head)
        if c["verdict"] not in ("bounded", "light"):
            lines.append(f"  {c['note']}")
        else:
            lines += [f"  {tail.level_sentence(r)}" for r in c["return_levels"] if r["value_ns"] is not None]
        if c["end_point_ns"] is not None:
            lines.append(f"  estimated end point: {format_ns(c['end_point_ns'])}")
        lines += [f"  {w}" for w in checks_in_words(c)]
    lines.append(f"Note: {result['limits']}.")
    return "\n".join(lines)


def figure(case: dict) -> str | None:
    """A return-level plot (SVG): return period on a log axis against latency, the fitted curve with its 95 %
    band and the observed cluster peaks as points; None when there is no fit."""
    if case["threshold_ns"] is None or case["shape"]["xi"] is None:
        return None
    fitted = [(r["period_s"], r) for r in case.get("curve", []) if r["value_ns"] is not None]
    if not fitted:
        return None
    us = lambda ns: ns / 1000.0
    top = [r["ci_ns"][1] if r["ci_ns"][1] is not None else r["value_ns"] * 10 for _, r in fitted]
    series = [
        svgplot.Series(
            "fit, 95 % band", [p for p, _ in fitted], [us(t) for t in top], band=[us(r["ci_ns"][0]) for _, r in fitted]
        ),
        svgplot.Series(
            "observed peaks", [p for p, _ in case["observed"][:60]], [us(v) for _, v in case["observed"][:60]]
        ),
    ]
    fit_line = svgplot.Series("fitted level", [p for p, _ in fitted], [us(r["value_ns"]) for _, r in fitted])
    fig = svgplot.Figure(
        f"tail-{case['label']}-cpu{case['cpu']}",
        f"{case['label']} cpu {case['cpu']}: return levels ({case['verdict']})",
        [series[0], fit_line, series[1]],
        svgplot.Axis("return period (s)", log=True),
        svgplot.Axis("latency (us)"),
    )
    return svgplot.chart(fig)


REPORT_MIN_BLOCKS = 600  # the report's tail section: runs of at least 10 minutes (shorter: always insufficient)


def tail_section(r: dict) -> str:
    """The HTML report's tail of a case (its "blocks": BlockMaxima from the stream): per CPU row the verdict
    sentence, the checks in words and the return-level plot; "" for a run shorter than REPORT_MIN_BLOCKS
    blocks or without scipy (the report never needs it)."""
    from html import escape

    bm = r.get("blocks")
    if bm is None or max((len(a) for a in bm.per_cpu.values()), default=0) < REPORT_MIN_BLOCKS:
        return ""
    try:
        rows = analyse_case(bm, str(r.get("label") or r.get("id")))
    except RtqError:
        return ""
    out = ['<div class="tail"><h3>Tail beyond the run (rtqual tail, docs/tail.md)</h3>']
    for c in rows:
        out.append(f"<p><b>cpu {escape(c['cpu'])}: {escape(c['verdict'])}</b>: {escape(c['note'])}</p>")
        words = checks_in_words(c)
        if words:
            out.append("<ul>" + "".join(f"<li>{escape(w)}</li>" for w in words) + "</ul>")
        svg = figure(c)
        if svg:
            out.append(svg)
    out.append(f"<p>{escape(tail.LIMITS)}.</p></div>")
    return "\n".join(out)

"""`rtqual table LAYOUT BUNDLE...`: a seed paper's table with the paper's published values as reference rows
beside rtqual's rows of one or more bundles. Each layout takes only cases of the kinds its paper measured
(decided by probe and parameters), uses one unit per column as the paper does (the unit in the header), and
reads the paper's numbers from paper_values.json (each with the place in the paper it comes from).
Pure: results and the papers' values in, rows and text out; `show --table` (views.paper_table) is apart."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from rtqual.answers import caveats
from rtqual.errors import RtqError
from rtqual.publish.views import (
    STAGES,
    UIO_STAGES,
    cpu_name,
    environment_and_cases,
    kind,
    network_text,
    pinned,
    throughput_mb_s,
)
from rtqual.textfmt import format_table
from rtqual.units import format_cpulist, format_ns

PAPER = "paper"  # the source cell of a reference row: "paper 001"
NOT_MEASURED = "-"  # an rtqual cell without a value (no samples); a paper's missing number stays empty
MARK = " (!)"  # after the label of a case that ran degraded or with a condition not applied


@dataclass(frozen=True)
class Column:
    """One column: its header (with the unit), the key of its cells (paper_values.json's, and the measured
    rows'), the decimals of rtqual's numbers (None: a text column)."""

    head: str
    key: str
    digits: int | None = None


@dataclass(frozen=True)
class Table:
    """A layout filled: the title, the header, the rows (cells as printed) and the notes under it."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    left: int = 2  # the text columns before the numbers (flush left)


def paper_values() -> dict:
    """The seed papers' published values (paper_values.json, installed with the package)."""
    return json.loads(resources.files("rtqual.publish").joinpath("paper_values.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the kind of a case


def probe_name(r: dict) -> str:
    """A case's probe as the user named it (`ioc` for iocresp, rhealstone with its component)."""
    probe = str(r.get("run_as") or r.get("probe"))
    if probe == "rhealstone":
        return f"rhealstone {(r.get('params') or {}).get('component')}"
    return {"iocresp": "ioc"}.get(probe, probe)


# ---------------------------------------------------------------- cells


def _paper_cell(v: Any) -> str:
    """A paper's value as it printed it: its own digits, "~" where it says "about", "lo-hi" for a range."""
    if v is None:
        return ""
    if not isinstance(v, dict):
        return str(v)
    text = f"{v['low']}-{v['high']}" if "low" in v else str(v["value"])
    return "~" + text if v.get("about") else text


def _cell(v: Any, digits: int | None) -> str:
    """One of rtqual's cells: a number in the column's unit to `digits` decimals, "-" for none."""
    if v is None:
        return NOT_MEASURED
    return f"{v:.{digits}f}" if digits is not None and isinstance(v, int | float) else str(v)


def _in(unit_ns: float, ns: Any) -> float | None:
    """A duration in ns as a number of the column's unit (1e3: µs, 1e6: ms); None stays None."""
    return None if ns is None else ns / unit_ns


def _label(r: dict) -> str:
    """The case's label, marked when it ran degraded or with a condition not applied."""
    odd = r.get("degraded") or (r.get("conditions") or {}).get("applied") is False
    return r.get("label", r.get("id", "?")) + (MARK if odd else "")


Row = dict[str, Any]  # column key -> value (numbers in the column's unit, text as printed)
STAT = {"min": "min_ns", "median": "p50_ns", "mean": "mean_ns", "sd": "stddev_ns", "max": "max_ns"}


def _durations(s: dict, suffix: str, *stems: str) -> Row:
    """Statistics of s as cells of duration columns: stem -> "stem_us" (or _ms) in that unit; and "n", the
    samples they are of."""
    out: Row = {f"{stem}_{suffix}": _in(1e3 if suffix == "us" else 1e6, s.get(STAT[stem])) for stem in stems}
    return {**out, "n": s.get("count")}


def _threshold_us(r: dict) -> float | None:
    """The case's threshold in µs (the share over it is counted against it)."""
    return _in(1e3, (r.get("params") or {}).get("threshold_ns"))


# ---------------------------------------------------------------- the layouts' measured rows


def _kek_rows(results: list[dict]) -> Iterator[Row]:
    """Per case a row of all its CPUs, then one per CPU (the bundle's per-CPU statistics); an IOC case one
    row, its CPU cell the CPUs the IOC may run on."""

    def cells(s: dict) -> Row:
        return _durations(s, "us", "min", "mean", "sd", "max")

    for r in results:
        per_cpu = sorted((r.get("per_cpu") or {}).items(), key=lambda kv: int(kv[0]))
        if r.get("ioc"):
            yield {"case": _label(r), "cpu": f"{r['ioc'].get('cpus_allowed')} (IOC)", **cells(r["stats"])}
            continue
        cpus = format_cpulist([int(c) for c, _ in per_cpu]) if per_cpu else NOT_MEASURED
        yield {"case": _label(r), "cpu": cpus if pinned(r) else "unpinned", **cells(r["stats"])}
        if len(per_cpu) > 1:
            yield from ({"case": _label(r), "cpu": cpu_name(r, c).removeprefix("cpu"), **cells(s)} for c, s in per_cpu)


APS_TABLE = {"interrupt": "1", "wake-up": "3", "switch": "4", "timer-interrupt": "5"}  # kind -> seed 001 table
APS_STAGE_TABLE = {"wake": "1", "dispatch": "4", "total": "5"}  # IOC stage -> table (others: none)
# a UIO interrupt's stages (event --source uio) -> seed 001's interrupt tables: 1 interrupt latency, 2 top half to
# bottom half (the IRQ thread), 3 bottom half to the user-level ISR (the reader); its total as any event case's
APS_UIO_TABLE = {"hardirq": "1", "irq_thread_woken": "2", "irq_thread_running": "2", "reader_woken": "3",
                 "reader_running": "3", "read_returned": "3", "total": "1"}  # fmt: skip
APS_IOC_TABLE = {**APS_UIO_TABLE, **APS_STAGE_TABLE}  # an IOC case, its input a UIO interrupt or not


def _aps_rows(results: list[dict]) -> Iterator[Row]:
    """Per case one row under the paper table it corresponds to; an IOC case one per stage and the total."""

    def cells(s: dict, r: dict) -> Row:
        pct = s.get("over_threshold_pct")
        if pct is None and s.get("count"):
            pct = 100.0 * s.get("over_threshold", 0) / s["count"]
        over = {"over_pct": pct, "over_us": _threshold_us(r), "network": network_text(r) or "no load"}
        return {**_durations(s, "us", "min", "median", "max"), **over}

    for r in results:
        stages = (r.get("probe_summary") or {}).get("stages") or {}
        uio = kind(r) == "interrupt" and (r.get("params") or {}).get("source") == "uio"
        if not (kind(r) == "ioc" or uio) or not stages:
            yield {"table": APS_TABLE.get(kind(r), ""), "case": _label(r), **cells(r["stats"], r)}
            continue
        # an IOC over UIO (ioc --input uio:DEV): the interrupt's stages, then the IOC's; its total the IOC's
        names, tables = (UIO_STAGES, APS_UIO_TABLE) if uio else ((*UIO_STAGES, *STAGES), APS_IOC_TABLE)
        for name in [*(n for n in names if n in stages), "total"]:
            s = r["stats"] if name == "total" else stages[name]
            yield {"table": tables.get(name, ""), "case": f"{_label(r)}: {name}", **cells(s, r)}


def _madoca_rows(results: list[dict]) -> Iterator[Row]:
    """One row per case, all its CPUs, in ms as Table 1."""
    for r in results:
        yield {"case": _label(r), **_durations(r["stats"], "ms", "min", "max", "mean", "median", "sd")}


def _vme_rows(results: list[dict]) -> Iterator[Row]:
    """Context-switch cases: mean and SD in µs (Table 3); pio cases: MB/s (Fig. 1), relative filled later."""
    for r in results:
        p, s = r.get("params") or {}, r["stats"]
        if kind(r) == "transfer":
            ref = (p.get("width_bits"), p.get("op"))
            yield {"case": _label(r), "part": "transfer", "mb_s": throughput_mb_s(r), "relative": None, "ref": ref}
        else:
            yield {"case": _label(r), **_durations(s, "us", "mean", "sd")}


def _relative(rows: list[Row], several: bool) -> str | None:
    """Fill each transfer row's speed relative to its reference, as Fig. 1 normalises to the HP743rt: with
    several bundles the first bundle's case of the same width and op (the platforms compared), with one
    bundle its first transfer case. Returns the note naming the reference, None without transfer rows."""
    transfer = [r for r in rows if r.get("part") == "transfer"]
    if not transfer:
        return None
    refs: dict[Any, Row] = {}
    for r in transfer:
        ref = refs.setdefault(r["ref"] if several else None, r)
        speed, base = r.get("mb_s"), ref.get("mb_s")
        r["relative"] = speed / base if speed is not None and base else None
    if several:
        return f"relative: each transfer case over {transfer[0]['source']}'s case of the same width and op"
    return f"relative: each transfer case over {transfer[0]['case']} ({transfer[0]['source']})"


# ---------------------------------------------------------------- the layouts


@dataclass(frozen=True)
class Layout:
    """A seed paper's table: title, the kinds of case it takes (and those in words for the refusal), its
    columns after source and case, and the builder of rtqual's rows from one bundle's cases."""

    name: str
    title: str
    kinds: frozenset[str]
    what: str
    columns: tuple[Column, ...]
    rows: Callable[[list[dict]], Iterator[Row]]
    group: str | None = None  # a column whose value orders the rows (paper rows, then rtqual's, per value)


US, MS = "µs", "ms"


def _timed(unit: str, digits: int, *heads: tuple[str, str]) -> tuple[Column, ...]:
    """Duration columns in one unit: (header, key stem) -> Column("Header (µs)", "stem_us", digits)."""
    suffix = {US: "us", MS: "ms"}[unit]
    return tuple(Column(f"{head} ({unit})", f"{stem}_{suffix}", digits) for head, stem in heads)


LAYOUTS: dict[str, Layout] = {
    "kek": Layout(
        "kek",
        "KEK Raspberry Pi 4 (seeds 000/002): cyclictest latency and EPICS IOC delay, per case and per CPU",
        frozenset({"timer", "ioc"}),
        "timer-latency and IOC-response cases",
        (
            Column("CPU", "cpu"),
            *_timed(US, 1, ("Minimum", "min"), ("Average", "mean"), ("Standard deviation", "sd"), ("Maximum", "max")),
        ),
        _kek_rows,
    ),
    "aps": Layout(
        "aps",
        "APS IOCcore on Coldfire uC5282 (seed 001, Tables 1-5); IOC cases stage by stage",
        frozenset({"interrupt", "wake-up", "switch", "timer-interrupt", "ioc", "timer"}),
        "interrupt, wake-up, context-switch, timer and IOC-response cases",
        (
            Column("Table", "table"),
            Column("network", "network"),
            *_timed(US, 1, ("Minimum", "min"), ("Median", "median"), ("Maximum", "max")),
            Column("> threshold (%)", "over_pct", 3),
            Column(f"threshold ({US})", "over_us", 0),
        ),
        _aps_rows,
        group="table",
    ),
    "madoca": Layout(
        "madoca",
        "MADOCA II message round-trip time (seed 003, Table 1)",
        frozenset({"rtt"}),
        "message round-trip cases (msg, ca-rtt, pva-rtt)",
        _timed(MS, 3, ("Minimum", "min"), ("Maximum", "max"), ("Average", "mean"), ("Median", "median"))
        + _timed(MS, 3, ("Standard deviation", "sd")),
        _madoca_rows,
    ),
    "vme": Layout(
        "vme",
        "SPring-8 VME controllers (seed 004): context switch time mean (SD), Table 3; transfer speed, Fig. 1",
        frozenset({"switch", "transfer"}),
        "context-switch and PIO/transfer cases",
        (
            *_timed(US, 1, ("Context switch mean", "mean"), ("SD", "sd")),
            Column("Transfer (MB/s)", "mb_s", 1),
            Column("Transfer (relative)", "relative", 2),
        ),
        _vme_rows,
        group="part",
    ),
}


def refuse_other_kinds(layout: str, name: str, results: list[dict]) -> None:
    """One line and exit 1 when a bundle has no case, or cases of a kind the layout's paper did not measure."""
    lay = LAYOUTS[layout]
    if not results:
        raise RtqError(f"{name}: no case to tabulate")
    other = sorted({probe_name(r) for r in results if kind(r) not in lay.kinds})
    if other:
        raise RtqError(f"layout {layout} is for {lay.what}; {name} has {', '.join(other)} cases")


# ---------------------------------------------------------------- the table


def _duration(r: dict) -> str:
    """How long a case measured (its planned duration), as the N and duration columns put beside the papers'."""
    ns = (r.get("params") or {}).get("duration_ns")
    return format_ns(ns) if isinstance(ns, int | float) and ns > 0 else NOT_MEASURED


def build_models(layout: str, named: list[tuple[str, Any]]) -> Table:
    """build() of bundle models (each with its name): the caveat records from each model's environment."""
    quals = [environment_and_cases(m)[1] for _, m in named]
    return build(layout, [(n, m.cases) for n, m in named], quals=quals)


def build(
    layout: str,
    bundles: list[tuple[str, list[dict]]],
    paper: dict | None = None,
    quals: list[list[dict]] | None = None,
) -> Table:
    """The layout's table: the paper's rows (source "paper SEED") and, per bundle, rtqual's rows (source the
    bundle's name); grouped like the paper where the layout has groups (APS tables, VME parts). Refused
    (RtqError) when a bundle has cases of a kind the layout's paper did not measure."""
    lay, values = LAYOUTS[layout], paper or paper_values()
    ref = values[layout]
    for name, results in bundles:
        refuse_other_kinds(layout, name, results)
    quals = quals or [caveats.records(None, results) for _, results in bundles]
    measured = [
        {**row, "source": name, "flags": caveats.flags(q), "duration": _duration(r)}
        for (name, results), recs in zip(bundles, quals)
        for r, q in zip(results, recs)
        for row in lay.rows([r])
    ]
    relative = _relative(measured, len(bundles) > 1)
    papers = [{**p, "source": f"{PAPER} {p['seed']}", "case": p["label"]} for p in ref["rows"]]
    columns = (
        Column("source", "source"),
        Column("case", "case"),
        Column("flags", "flags"),
        *lay.columns,
        *((Column("N", "n", 0),) if any("n" in row for row in measured) else ()),
        Column("duration", "duration"),
    )
    cells = [[_row_cell(row, c) for c in columns] for row in _ordered(lay, papers, measured)]
    notes = _notes(lay, ref, values["papers"], measured) + ([relative] if relative else [])
    notes += [x for x in [caveats.legend("".join(str(row.get("flags") or "") for row in measured))] if x]
    notes.append("N: samples of the row; duration: how long the case measured (planned); the papers' rows: see above")
    left = next((i for i, c in enumerate(columns) if c.digits is not None), len(columns))
    return Table(lay.title, [c.head for c in columns], cells, notes, left)


def _ordered(lay: Layout, papers: list[Row], measured: list[Row]) -> list[Row]:
    """Paper rows then rtqual's; with groups (APS tables, VME parts) per group in the paper's order, groups
    only rtqual has (rows under no paper table) last."""
    rows = papers + measured
    if lay.group is None:
        return rows
    groups: list[str] = []
    for row in rows:
        g = str(row.get(lay.group) or "")
        groups += [] if g in groups else [g]
    return [row for g in groups for row in rows if str(row.get(lay.group) or "") == g]


def _row_cell(row: Row, c: Column) -> str:
    """A row's cell in column c: the paper's value as printed (empty: not given), rtqual's in the column's
    unit ("-": no value; empty: a column that is not about this kind of case)."""
    if row["source"].startswith(PAPER + " ") and c.digits is not None:
        return _paper_cell((row.get("values") or {}).get(c.key))
    if c.key not in row:
        return ""
    return _cell(row[c.key], c.digits)


def _notes(lay: Layout, ref: dict, papers: dict, measured: list[Row]) -> list[str]:
    """Under the table: what the paper rows are and where they come from, what each empty paper cell means,
    the marks on rtqual's rows."""
    out = [
        "paper rows (source 'paper SEED'): the published values, not measured here; ~ = 'about' in the paper; "
        "an empty cell is a number the paper does not give; where each value stands in its paper: "
        f'src/rtqual/publish/paper_values.json, "{lay.name}"',
        *(f"seed {s}: {papers[s]['title']}" for s in sorted({r["seed"] for r in ref["rows"]})),
        *ref.get("notes", []),
    ]
    if lay.name == "aps":
        out.append("Tables: " + "; ".join(f"{k} {v}" for k, v in ref["tables"].items()))
        out.append(
            "rtqual's rows stand under the paper's table they correspond to: event eventfd/gpio and IOC wake -> 1, "
            "event fifo -> 3, switch and IOC dispatch -> 4, event timerfd and IOC total -> 5; the timer "
            "baseline and IOC drive/chain/return under none"
        )
    out += [f"empty: paper {r['seed']} '{r['label']}': {r['missing']}" for r in ref["rows"] if r.get("missing")]
    if any(MARK in str(r.get("case")) for r in measured):
        out.append(f"{MARK.strip()} ran degraded or with a condition not applied: rtqual show BUNDLE says which")
    if any(r.get(c.key, "") is None for r in measured for c in lay.columns):
        out.append(f"{NOT_MEASURED} = rtqual has no value for it (no samples)")
    return out


def text(t: Table) -> str:
    """The table as text: title, aligned columns (text flush left, numbers right), notes."""
    return "\n".join([t.title, format_table(t.headers, t.rows, left=t.left), "", *t.notes])


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet reads a cell starting so as a formula (=HYPERLINK(...)): such a cell is written with a ' first."""


def csv_cell(cell: str) -> str:
    """A cell a spreadsheet shows as text: one starting like a formula prefixed with ' (a number, '-' and ''
    stay as they are)."""
    if not cell.startswith(FORMULA_STARTS) or cell == NOT_MEASURED:
        return cell
    try:
        float(cell)
        return cell
    except ValueError:
        return "'" + cell


def csv_text(t: Table) -> str:
    """The same rows as CSV (header first), for a spreadsheet or a paper's table; formula cells neutralised
    (csv_cell)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([csv_cell(c) for c in t.headers])
    w.writerows([csv_cell(c) for c in row] for row in t.rows)
    return out.getvalue()

"""Pure printers: tables and JSON from stored results (no measuring, no I/O beyond the text returned)."""

from __future__ import annotations

from rtqual.units import format_ns

STAT_COLUMNS = [
    ("count", "count"),
    ("min", "min_ns"),
    ("p50", "p50_ns"),
    ("mean", "mean_ns"),
    ("p99", "p99_ns"),
    ("p99.9", "p999_ns"),
    ("p99.99", "p9999_ns"),
    ("max", "max_ns"),
    ("stddev", "stddev_ns"),
    ("overruns", "overruns"),
    (">thr", "over_threshold"),
    ("%>thr", "over_threshold_pct"),
]
JSON_STAT_KEYS = [
    "count",
    "min_ns",
    "p50_ns",
    "mean_ns",
    "p99_ns",
    "p999_ns",
    "p9999_ns",
    "max_ns",
    "stddev_ns",
    "overruns",
    "over_threshold",
    "over_threshold_pct",
]
PERCENTILE_NOTE = (
    "percentiles: nearest rank, rank = ceil(p/100 * N); value = highest value of the "
    "histogram bucket holding it, capped at max (never below the exact value, at most 0.1 % above)"
)


def format_cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key.endswith("_ns"):
        return format_ns(value)
    if key.endswith("_pct"):
        return f"{value:.3g}%" if value else "0%"
    return str(value)


def format_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Aligned plain-text table: the first `left` columns flush left, the others (numbers) right."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    return "\n".join(line(r).rstrip() for r in [headers, ["-" * w for w in widths], *rows])


def stat_cells(stats: dict) -> list[str]:
    return [format_cell(key, stats.get(key)) for _, key in STAT_COLUMNS]


def case_table(result: dict) -> str:
    """One row per CPU and one for all CPUs."""
    rows = [[f"cpu{cpu}", *stat_cells(s)] for cpu, s in sorted(result["per_cpu"].items(), key=lambda kv: int(kv[0]))]
    rows.append(["all", *stat_cells(result["stats"])])
    return format_table(["", *[h for h, _ in STAT_COLUMNS]], rows)


STAGES = ("drive", "wake", "dispatch", "chain", "return")  # drive: GPIO lines only
STAGE_NOTE = (
    "stages: wake = stimulus -> IOC reader awake, dispatch = -> record processing (read_bi), "
    "chain = -> bo written, return = -> response read by the harness"
)
GPIO_STAGE_NOTE = (
    "stages: drive = stimulus line toggled -> IOC input edge (kernel timestamp), wake = -> IOC reader "
    "awake (the interrupt latency), dispatch = -> record processing (read_bi), chain = -> bo written, "
    "return = -> response edge (kernel timestamp)"
)


def stage_table(result: dict) -> str | None:
    """Per-stage statistics of an IOC response case (iocresp's summary "stages") and the total;
    None for other probes."""
    stages = ((result.get("probe_summary") or {}).get("stages")) or {}
    if not stages:
        return None
    keys = [
        ("count", "count"),
        ("min", "min_ns"),
        ("p50", "p50_ns"),
        ("mean", "mean_ns"),
        ("p99", "p99_ns"),
        ("max", "max_ns"),
        (">thr", "over_threshold"),
    ]
    rows = [[name, *(format_cell(k, stages[name].get(k)) for _, k in keys)] for name in STAGES if name in stages]
    rows.append(["total", *(format_cell(k, result["stats"].get(k)) for _, k in keys)])
    return format_table(["stage", *(h for h, _ in keys)], rows)


def ioc_lines(result: dict) -> list[str]:
    """The IOC a case measured (result["ioc"]) and its CA load's achieved rates."""
    ioc = result.get("ioc")
    if not ioc:
        return []
    threads = ioc.get("threads") or []
    rt = sorted({f"{t['comm']} {t['cls']} {t['rtprio']}" for t in threads if t.get("rtprio")})
    out = [
        f"ioc: preset {ioc.get('preset')}, mode {ioc.get('mode')}, EPICS {ioc.get('epics_version')}, "
        f"{len(threads)} threads ({len(rt)} real-time), VmLck {ioc.get('vm_lck')}, "
        f"CPUs {ioc.get('cpus_allowed')}"
    ]
    load = ioc.get("ca_load")
    if load:
        put, mon = load.get("put") or {}, load.get("monitor") or {}
        words = [f"CA load: {load.get('records')} records"]
        if put:
            words.append(
                f"put {_rate(put.get('rate_hz'))}/s (asked {_rate(put.get('requested_rate_hz'))}, "
                f"{put.get('errors', 0)} errors)"
            )
        if mon:
            words.append(f"monitor {_rate(mon.get('rate_hz'))} events/s on {mon.get('connected')} channels")
        out.append(", ".join(words))
    return out


def _rate(x) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.3g}"


def baseline_line(result: dict, results: list[dict]) -> str | None:
    """An IOC case next to the timer baseline measured in the same run: the timer case under the
    same loads, else the first timer case."""

    def loads(r):
        return sorted(ld.get("name") or "" for ld in r.get("loads") or [])

    timers = [r for r in results if r["probe"] == "timer" and r["stats"].get("count") and r is not result]
    base = next((r for r in timers if loads(r) == loads(result)), timers[0] if timers else None)
    if not result.get("ioc") or base is None:
        return None
    s, b = result["stats"], base["stats"]
    pairs = ", ".join(
        f"{name} {format_cell(k, s.get(k))} vs {format_cell(k, b.get(k))}"
        for name, k in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))
    )
    return f"vs timer baseline (case {base['id']}, same run): {pairs}"


def show_text(data: dict, table: str | None = None) -> str:
    """The human view of a bundle: per case, its table, verdict and warnings; then the summary table
    (one row per case, or a seed paper's layout)."""
    out = []
    m = data["manifest"]
    out.append(
        f"bundle {data['path']}  ({m.get('status')}, rtqual {m.get('rtqual_version')}, "
        f"host {m.get('hostname')}, started {m.get('start')})"
    )
    for r in data["cases"]:
        thr = r.get("params", {}).get("threshold_ns")
        out.append("")
        out.append(f"case {r['id']}: {r['label']}" + (f"  (threshold {format_ns(thr)})" if thr else ""))
        out.append(case_table(r))
        stages = stage_table(r)
        if stages:
            gpio = "drive" in (r.get("probe_summary") or {}).get("stages", {})
            out.extend(["", stages, GPIO_STAGE_NOTE if gpio else STAGE_NOTE])
        out.extend(ioc_lines(r))
        if baseline_line(r, data["cases"]):
            out.append(baseline_line(r, data["cases"]))
        out.append(f"verdict: {r['verdict'].upper()} - {r.get('reason', '')}")
        out.extend(f"warning: {w}" for w in r.get("warnings", []))
    table = table or data.get("table") or "cases"
    if data["cases"] and (len(data["cases"]) > 1 or table != "cases"):
        out.append("")
        out.append(cases_table(data["cases"]) if table == "cases" else paper_table(data["cases"], table))
    out.append("")
    out.append(PERCENTILE_NOTE)
    return "\n".join(out)


def cases_table(results: list[dict]) -> str:
    """One row per case (label and its all-CPU statistics), for studies with many cases."""
    keys = [
        "count",
        "min_ns",
        "p50_ns",
        "mean_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "stddev_ns",
        "overruns",
        "over_threshold_pct",
    ]
    head = ["case", "count", "min", "p50", "mean", "p99", "p99.9", "max", "stddev", "overruns", "%>thr", "verdict"]
    rows = [[r["label"], *(format_cell(k, r["stats"].get(k)) for k in keys), r["verdict"]] for r in results]
    return format_table(head, rows)


# The seed papers' table layouts: (heading, stats key or None for the threshold share).
PAPER_TABLES = {
    "aps": (
        "Layout of APS IOCcore on Coldfire (seed 001, Tables 1-5); IOC cases stage by stage",
        [("Minimum", "min_ns"), ("Median", "p50_ns"), ("Maximum", "max_ns"), ("% > {thr}", None)],
    ),
    "kek": (
        "KEK Raspberry Pi (seed 000, Figs. 1-8): average, standard deviation and maximum",
        [("Average", "mean_ns"), ("Standard deviation", "stddev_ns"), ("Maximum", "max_ns")],
    ),
    "madoca": (
        "MADOCA II RTT (seed 003, Table 1)",
        [
            ("Minimum", "min_ns"),
            ("Maximum", "max_ns"),
            ("Average", "mean_ns"),
            ("Median", "p50_ns"),
            ("Standard deviation", "stddev_ns"),
        ],
    ),
    "vme": (
        "VME context switch (seed 004, Table 3): mean (SD); transfer speed (Fig. 1)",
        [("mean (SD)", "mean_sd"), ("MB/s", "throughput")],
    ),
}


def throughput_mb_s(r: dict) -> float | None:
    """pio's transfer speed (MB = 10^6 B), summed over its CPUs; None for other probes."""
    rates = [c.get("throughput_mb_s") for c in ((r.get("probe_summary") or {}).get("cpus") or [])]
    rates = [x for x in rates if x is not None]
    return sum(rates) if rates else None


def _throughput(r: dict) -> str:
    x = throughput_mb_s(r)
    return "-" if x is None else f"{x:.1f}"


def _paper_rows(results: list[dict], layout: str):
    """(label, stats, result) per table row: one per case; in the APS layout an IOC case gives one
    row per stage and one for the total, as seed 001's Tables 1-5 list each latency."""
    for r in results:
        stages = (r.get("probe_summary") or {}).get("stages") or {}
        if layout != "aps" or not stages:
            yield r["label"], r["stats"], r
            continue
        for name in STAGES:
            if name in stages:
                s = dict(stages[name])
                s["over_threshold_pct"] = 100.0 * s.get("over_threshold", 0) / s["count"] if s.get("count") else 0.0
                yield f"{r['label']}: {name}", s, r
        yield f"{r['label']}: total", r["stats"], r


def paper_table(results: list[dict], layout: str) -> str:
    """One row per case in a seed paper's column layout (`rtqual show --table aps|kek|madoca|vme`)."""
    title, cols = PAPER_TABLES[layout]
    rows = []
    for label, s, r in _paper_rows(results, layout):
        cells = [label]
        for _, key in cols:
            if key is None:
                cells.append(format_cell("over_threshold_pct", s.get("over_threshold_pct")))
            elif key == "throughput":
                cells.append(_throughput(r))
            elif key == "mean_sd":
                cells.append(f"{format_ns(s.get('mean_ns'))} ({format_ns(s.get('stddev_ns'))})")
            else:
                cells.append(format_cell(key, s.get(key)))
        rows.append(cells)
    thrs = {r.get("params", {}).get("threshold_ns") for r in results}
    thr_text = format_ns(thrs.pop()) if len(thrs) == 1 else "threshold"
    head = ["case", *(h.format(thr=thr_text) for h, _ in cols)]
    return f"{title}\n{format_table(head, rows)}"


def show_json(data: dict) -> dict:
    """The `rtqual show --json` document (a contract: keys are never renamed)."""

    def pick(s):
        return {k: s.get(k) for k in JSON_STAT_KEYS}

    return {
        "bundle": data["path"],
        "schema_version": data["manifest"].get("schema_version"),
        "cases": [
            {
                "id": r["id"],
                "label": r["label"],
                "probe": r["probe"],
                "params": r["params"],
                "stats": pick(r["stats"]),
                "per_cpu": {c: pick(s) for c, s in r["per_cpu"].items()},
                "verdict": r["verdict"],
                "reason": r.get("reason"),
                "degraded": r.get("degraded", False),
                "warnings": r.get("warnings", []),
                **(
                    {"stages": (r.get("probe_summary") or {}).get("stages")}
                    if (r.get("probe_summary") or {}).get("stages")
                    else {}
                ),
                **({"ioc": r["ioc"]} if r.get("ioc") else {}),
            }
            for r in data["cases"]
        ],
    }

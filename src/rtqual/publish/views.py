"""The result model seen as rows and cells, shared by every exporter (text report, HTML report, comparison
printers, the store's history and check): the statistic columns, cell formatting, plain-text table layout,
IOC stage tables, IOC/network/spike lines and the seed papers' tables. Pure: text from results, no I/O;
no exporter is imported here, so exporters share this instead of importing each other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rtqual.answers import compare, spikes
from rtqual.answers import environment as environment_mod
from rtqual.results.bundle import Model
from rtqual.textfmt import format_table
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
SPIKES_SHOWN = 10  # spikes put in words per traced case by `rtqual show` (all in --json)


def stat_columns(leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """STAT_COLUMNS without the keys in leave_out: the narrower tables (cases, compare) take theirs from here."""
    return [(h, k) for h, k in STAT_COLUMNS if k not in leave_out]


PERCENTILE_NOTE = (
    "percentiles: nearest rank, rank = ceil(p/100 * N); value = highest value of the "
    "histogram bucket holding it, capped at max (never below the exact value, at most 0.1 % above)"
)


def format_cell(key: str, value: Any) -> str:
    """One statistic as the tables show it: latencies with their unit, shares in percent, "-" for none."""
    if value is None:
        return "-"
    if key.endswith("_ns"):
        return format_ns(value)
    if key.endswith("_pct"):
        return f"{value:.3g}%" if value else "0%"
    return str(value)


STAGES = ("drive", "wake", "dispatch", "chain", "return")  # drive: GPIO lines only
TIMERLAT_STAGES = ("irq", "thread", "user")  # timer expiry -> IRQ -> the timerlat thread -> back in user space
# a device's interrupt through UIO (event --source uio), in timeline order; hardirq only when rtqual raised it
UIO_STAGES = ("hardirq", "irq_thread_woken", "irq_thread_running", "reader_woken", "reader_running", "read_returned")


def stage_table(result: dict) -> str | None:
    """Per-stage statistics of an IOC response case (iocresp's summary "stages") or a timerlat case, and the
    total; None for other probes."""
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
    rows = [
        [name, *(format_cell(k, stages[name].get(k)) for _, k in keys)]
        for name in (*STAGES, *TIMERLAT_STAGES, *UIO_STAGES)
        if name in stages
    ]
    rows.append(["total", *(format_cell(k, result["stats"].get(k)) for _, k in keys)])
    return format_table(["stage", *(h for h, _ in keys)], rows)


def interrupt_lines(result: dict) -> list[str]:
    """A UIO event case's interrupt accounting and the IRQ thread that served it (event --source uio)."""
    ps = result.get("probe_summary") or {}
    n, irq = ps.get("interrupts"), ps.get("irq")
    if not n or not irq:
        return []
    params = result.get("params") or {}
    thread = (
        f"IRQ thread {irq['thread']} {irq.get('policy')} {irq.get('priority')} on CPU {irq.get('cpu')}"
        if irq.get("thread")
        else "no IRQ thread (the handler runs in the hard interrupt)"
    )
    out = [
        f"interrupts: {n['raised']} raised, {n['samples']} samples, {n.get('warmup', 0)} warm-up, {n['missed']} missed"
        f" (IRQ {irq['number']}, {params.get('mode')}: t0 = {params.get('t0')}); {thread}"
    ]
    if ps.get("stages_note"):
        out.append(ps["stages_note"])
    return out


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


def network_text(result: dict) -> str | None:
    """The achieved rates of a case's network loads in a few words ("udp 2000/s 1.0MB/s 0 drops"),
    None when the case ran none; "private" reads better than nothing in the APS table."""
    parts = []
    for ld in result.get("loads") or []:
        net = ld.get("network")
        if not net:
            continue
        a, asked = net.get("achieved") or {}, net.get("asked") or {}
        words = [f"{net.get('mode')} {_rate(a.get('packets_per_s'))}/s of {_rate(asked.get('packets_per_s'))}"]
        if a.get("bytes_per_s") is not None:
            words.append(f"{a['bytes_per_s'] / 1e6:.2f}MB/s")
        if asked.get("arp_per_s"):
            words.append(f"ARP {_rate(a.get('arp_per_s'))}/s")
        if a.get("drops") is not None:
            words.append(f"{a['drops']} drops")
        parts.append(" ".join(words))
    return "; ".join(parts) or None


def noise_lines(result: dict) -> list[str]:
    """A noise case's figures in words: rtqual's loop (noise per second, largest gap, steal, SMI) and, where the
    kernel's osnoise tracer ran beside it (probe_summary noise.osnoise), its figures per CPU with the ratio
    rtqual / osnoise; the tracer note; nothing for other probes."""
    ps = result.get("probe_summary") or {}
    noise = ps.get("noise") if isinstance(ps, dict) else None
    if not isinstance(noise, dict):
        return []
    osn: dict = noise["osnoise"] if isinstance(noise.get("osnoise"), dict) else {}
    theirs = {r.get("cpu"): r for r in osn.get("cpus") or [] if isinstance(r, dict)}
    out = []
    for c in ps.get("cpus") or []:
        if not isinstance(c, dict):
            continue
        line = (
            f"noise CPU {c.get('cpu')}: rtqual {format_ns(c.get('noise_ns_per_s'))}/s in {c.get('gaps')} gaps, "
            f"largest {format_ns(c.get('largest_gap_ns'))}"
        )
        if c.get("steal_ns") is not None:
            line += f", steal {format_ns(c['steal_ns'])}"
        if c.get("smi") is not None:
            line += f", {c['smi']} SMIs"
        r = theirs.get(c.get("cpu"))
        if r and r.get("periods"):
            counts = " ".join(f"{k.upper()} {v}" for k, v in (r.get("counts") or {}).items())
            ratio = r.get("ratio")
            line += (
                f"; osnoise {format_ns(r.get('noise_ns_per_s'))}/s, max single "
                f"{format_ns(r.get('max_single_noise_ns'))} ({counts}); rtqual/osnoise "
                + ("-" if ratio is None else f"{ratio:.3g}")
            )
        out.append(line)
    if osn.get("periods"):
        out.append(
            f"osnoise: the kernel's tracer on the same CPUs right after the loop, {osn.get('periods')} periods of "
            f"{format_ns((osn.get('runtime_us') or 0) * 1000)} in {format_ns(osn.get('duration_ns'))}, "
            f"noise above {format_ns(osn.get('threshold_ns'))}"
        )
    if noise.get("tracer_note"):
        out.append(f"tracers: {noise['tracer_note']}")
    return out


def network_lines(result: dict) -> list[str]:
    """Per network load: achieved rates and the interrupts/softirqs it cost the receiving CPU."""
    out = []
    for ld in result.get("loads") or []:
        net = ld.get("network")
        if not net:
            continue
        path = net.get("path") or {}
        where = f"via {path.get('interface')} to {path.get('peer')}" if path.get("interface") else "private veth pair"
        line = f"network load {ld.get('name')}: {network_text({'loads': [ld]})} ({where})"
        cpu = net.get("receiving_cpu")
        d = (net.get("irq_delta") or {}).get(str(cpu)) if cpu is not None else None
        if d:
            line += f"; CPU {cpu}: +{d.get('interrupts')} interrupts, +{d.get('net_rx')} NET_RX softirqs"
        out.append(line)
    return out


def spike_lines(result: dict, shown: int = SPIKES_SHOWN) -> list[str]:
    """A traced case (--trace): what was traced and, per spike (the first `shown`), what held its CPU
    in words; nothing for a case run without --trace."""
    trace = result.get("trace")
    if not isinstance(trace, dict):
        return []
    found = result.get("spikes") or []
    seen, analysed = trace.get("spikes_seen", len(found)), len(found)
    head = f"trace: {seen} spikes over the threshold"
    if seen > analysed:
        head += f", the first {analysed} analysed"
    head += f" (source: {trace.get('source')}; timerlat {trace.get('timerlat')}"
    if trace.get("lost_events"):
        head += f"; {trace['lost_events']} trace events lost"
    out = [head + ")"]
    out += [f"  {spikes.spike_line(s)}" for s in found[:shown]]
    if len(found) > shown:
        out.append(f"  {len(found) - shown} more spikes: rtqual show --json, cases/{result['id']}/spikes/")
    out += [f"  note: {n}" for n in trace.get("notes") or []]
    return out


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.3g}"


def cases_table(results: list[dict]) -> str:
    """One row per case (label and its all-CPU statistics), for studies with many cases."""
    columns = stat_columns(leave_out=("p9999_ns", "over_threshold"))
    keys = [k for _, k in columns]
    head = ["case", *(h for h, _ in columns), "verdict"]
    rows = [[r["label"], *(format_cell(k, r["stats"].get(k)) for k in keys), r["verdict"]] for r in results]
    return format_table(head, rows)


# The seed papers' table layouts: (heading, stats key or None for the threshold share).
PAPER_TABLES: dict[str, tuple[str, list[tuple[str, str | None]]]] = {
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


def _paper_rows(results: list[dict], layout: str) -> Iterator[tuple[str, dict, dict]]:
    """(label, stats, result) per table row: one per case; in the APS layout an IOC case gives one
    row per stage and one for the total, as seed 001's Tables 1-5 list each latency."""
    for r in results:
        stages = (r.get("probe_summary") or {}).get("stages") or {}
        if layout != "aps" or not stages:
            yield r["label"], r["stats"], r
            continue
        for name in (*STAGES, *UIO_STAGES):
            if name in stages:
                s = dict(stages[name])
                s["over_threshold_pct"] = 100.0 * s.get("over_threshold", 0) / s["count"] if s.get("count") else 0.0
                yield f"{r['label']}: {name}", s, r
        yield f"{r['label']}: total", r["stats"], r


def paper_table(results: list[dict], layout: str) -> str:
    """One row per case in a seed paper's column layout (`rtqual show --table aps|kek|madoca|vme`)."""
    title, cols = PAPER_TABLES[layout]
    networked = any(network_text(r) for r in results)  # a network column only when some case had one
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
        if networked:
            cells.append(network_text(r) or "private (none)")
        rows.append(cells)
    thrs = {r.get("params", {}).get("threshold_ns") for r in results}
    thr_text = format_ns(thrs.pop()) if len(thrs) == 1 else "threshold"
    head = ["case", *(h.format(thr=thr_text) for h, _ in cols), *(["network achieved"] if networked else [])]
    return f"{title}\n{format_table(head, rows)}"


# ---------------------------------------------------------------- comparisons (rtqual compare, --report)

COMPARE_COLUMNS = stat_columns(leave_out=("over_threshold",))


def threshold_text(results: list[dict | None]) -> str | None:
    """The threshold the cases' "over threshold" counts are against ("100us"), None where they differ or
    none is recorded: a table or figure that counts against it says which."""
    thrs = {(r.get("params") or {}).get("threshold_ns") for r in results if r}
    thr = thrs.pop() if len(thrs) == 1 else None
    return format_ns(thr) if isinstance(thr, int | float) and thr > 0 else None


def threshold_headers(columns: list[tuple[str, str]], results: list[dict | None]) -> list[str]:
    """Column headings with the threshold stated: '% over 100us' and 'over 100us' for '%>thr' and '>thr'."""
    thr = threshold_text(results)
    named = {"over_threshold_pct": f"% over {thr}", "over_threshold": f"over {thr}"} if thr else {}
    return [named.get(k, h) for h, k in columns]


def ratio_cell(sa: dict, sb: dict, key: str) -> str:
    """The B/A cell of one statistic: the ratio to two decimals, empty where there is none."""
    x = compare.ratios(sa, sb, [key]).get(key)
    return "" if x is None else f"{x:.2f}"


def environment_of(model: Model) -> dict:
    """A bundle model's `environment` (rtqual.answers.environment): from the host facts before the run and
    each intact case's result and environment record."""
    records = {r["id"]: model.environment_record(r["id"]) for r in model.cases}
    return environment_mod.environment(model.facts("before"), model.cases, records)

"""The result model seen as rows and cells, shared by every exporter (text report, HTML report, comparison
printers, the store's history and check): the statistic columns, cell formatting, plain-text table layout,
IOC stage tables, IOC/network/spike lines and the seed papers' tables. Pure: text from results, no I/O;
no exporter is imported here, so exporters share this instead of importing each other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rtqual.answers import caveats, compare
from rtqual.answers import environment as environment_mod
from rtqual.answers.evidence import spikes
from rtqual.results.bundle import Model, Unreadable
from rtqual.results.hist import Histogram
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


def stat_cell(key: str, stats: dict) -> str:
    """A statistic of `stats` as tables show it, a percentile only where its samples carry it ('-' else:
    rtqual.answers.caveats)."""
    return format_cell(key, caveats.shown(key, stats))


def carried_note(stats: list[dict], keys: list[str]) -> list[str]:
    """The note under a table whose percentile columns have dashes for too few samples ([] for none)."""
    note = caveats.not_carried_note([(s or {}).get("count") for s in stats], keys)
    return [note] if note else []


def pinned(result: dict) -> bool:
    """Whether the case's probe was bound to CPUs (a CPU option set: cpus, cpu, client/server/broker cpu)."""
    p = result.get("params") or {}
    for key in ("cpus", "cpu", "client_cpu", "server_cpu", "broker_cpu", "stimulus_cpu", "peer_cpu"):
        v = p.get(key)
        if (isinstance(v, list | str) and v) or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            return True
    return False


def cpu_name(result: dict, cpu: object) -> str:
    """A per-CPU row's or series' name: 'cpu1' where the case pinned its CPUs, 'unpinned' where it did not
    (the CPU it was seen on is no setting of the run)."""
    return f"cpu{cpu}" if pinned(result) else "unpinned" if len(result.get("per_cpu") or {}) <= 1 else f"unpinned {cpu}"


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
        [name, *(stat_cell(k, stages[name]) for _, k in keys)]
        for name in (*UIO_STAGES, *STAGES, *TIMERLAT_STAGES)
        if name in stages
    ]
    rows.append(["total", *(stat_cell(k, result["stats"]) for _, k in keys)])
    counted = [stages[n] for n in (*UIO_STAGES, *STAGES, *TIMERLAT_STAGES) if n in stages] + [result["stats"]]
    return "\n".join([format_table(["stage", *(h for h, _ in keys)], rows), *carried_note(counted, ["p99_ns"])])


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
    hw = noise.get("hwnoise") if isinstance(noise.get("hwnoise"), dict) else None
    if hw is not None:  # `run noise --hw`: the kernel's hwnoise mode (interrupts off) after the osnoise run
        hw_counts = hw.get("counts") or {}
        out.append(
            f"hwnoise (osnoise with interrupts off: hardware and NMI only): {format_ns(hw.get('noise_ns_per_s'))}/s, "
            f"max single {format_ns(hw.get('max_single_noise_ns'))} "
            f"(HW {hw_counts.get('hw')} NMI {hw_counts.get('nmi')}) in {hw.get('periods')} periods"
            if hw.get("periods")
            else f"hwnoise: {hw.get('note') or 'no period completed'}"
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
    over, bound = trace.get("over_ns"), trace.get("over_bound")
    if trace.get("mode") == "capture" and isinstance(over, int):  # --capture: a ring read at spikes over OVER
        head = f"capture: {analysed} spikes over {format_ns(over)} captured"
        if isinstance(bound, int) and bound:
            head += f", {bound} more past --capture-per-hour {trace.get('per_hour')} (counted)"
    head += f" (source: {trace.get('source')}; timerlat {trace.get('timerlat')}"
    if trace.get("lost_events"):
        head += f"; {trace['lost_events']} trace events lost"
    reader = trace.get("reader_cpu_ns")
    if isinstance(reader, int) and not isinstance(reader, bool) and reader >= 0:
        head += f"; its reader used {format_ns(reader)} of CPU"
    out = [head + ")"]
    out += [
        f"  {spikes.spike_line(s)}" + (f"; cause: {spikes.cause_words(s['cause'])}" if s.get("cause") else "")
        for s in found[:shown]
    ]
    if len(found) > shown:
        out.append(f"  {len(found) - shown} more spikes: rtqual show --json, cases/{result['id']}/spikes/")
    out += [f"  note: {n}" for n in trace.get("notes") or []]
    return out


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.3g}"


def duration_text(r: dict) -> str:
    """How long a case measured (its planned duration: the N and duration beside a paper's hour-long rows)."""
    ns = (r.get("params") or {}).get("duration_ns")
    return format_ns(ns) if isinstance(ns, int | float) and ns > 0 else "-"


def cases_table(results: list[dict]) -> str:
    """One row per case (label and its all-CPU statistics), for studies with many cases."""
    head, rows, notes = cases_cells(results)
    return "\n".join([format_table(head, rows), *notes])


def cases_cells(
    results: list[dict], flags: dict[str, str] | None = None
) -> tuple[list[str], list[list[str]], list[str]]:
    """cases_table as (header, rows of cells, notes under it): the text table's, and the HTML report's; with
    `flags` (case id -> caveat flags) a flags column."""
    columns = stat_columns(leave_out=("p9999_ns", "over_threshold"))
    keys = [k for _, k in columns]
    head = ["case", *(h for h, _ in columns), "duration", "verdict", *(["flags"] if flags is not None else [])]
    rows = [
        [r["label"], *(stat_cell(k, r["stats"]) for k in keys), duration_text(r), r["verdict"]]
        + ([flags.get(r["id"], "")] if flags is not None else [])
        for r in results
    ]
    return head, rows, carried_note([r["stats"] for r in results], keys)


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
        for name in (*UIO_STAGES, *STAGES):  # an IOC over UIO: the interrupt's stages first
            if name in stages:
                s = dict(stages[name])
                s["over_threshold_pct"] = 100.0 * s.get("over_threshold", 0) / s["count"] if s.get("count") else 0.0
                yield f"{r['label']}: {name}", s, r
        yield f"{r['label']}: total", r["stats"], r


def paper_table(results: list[dict], layout: str) -> str:
    """One row per case in a seed paper's column layout (`rtqual show --table aps|kek|madoca|vme`)."""
    title, head, rows = paper_cells(results, layout)
    return f"{title}\n{format_table(head, rows)}"


def paper_cells(
    results: list[dict], layout: str, flags: dict[str, str] | None = None
) -> tuple[str, list[str], list[list[str]]]:
    """A seed paper's layout as (title, header, rows of cells): paper_table's, and the HTML report's table;
    with `flags` (case id -> caveat flags) a flags column."""
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
                cells.append(stat_cell(key, s))
        cells += [format_cell("count", s.get("count")), duration_text(r)]
        cells += [flags.get(r["id"], "")] if flags is not None else []
        if networked:
            cells.append(network_text(r) or "private (none)")
        rows.append(cells)
    thrs = {r.get("params", {}).get("threshold_ns") for r in results}
    thr_text = format_ns(thrs.pop()) if len(thrs) == 1 else "threshold"
    head = [
        "case",
        *(h.format(thr=thr_text) for h, _ in cols),
        "N",
        "duration",
        *(["flags"] if flags is not None else []),
    ]
    head += ["network achieved"] if networked else []
    return title, head, rows


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


def environment_and_cases(model: Model) -> tuple[dict, list[dict]]:
    """A model's environment and its caveat records (rtqual.answers.caveats)."""
    env = environment_of(model)
    return env, caveats.records(env, model.cases)


def bundle_view(model: Model) -> dict:
    """A bundle as every view reads it (the one loader of show, report, compare, table and fleet): the model's
    keys (Model.as_dict), its host facts and tuning before the run, its plan, its `environment`, one caveat
    record per case ("caveats": rtqual.answers.caveats), each case's histograms per CPU ("cpu_hists": {case
    id: {cpu: Histogram}}) and merged over its CPUs ("hists": {case id: Histogram}, a case without a readable
    one left out), so the answer counts the samples over a limit."""
    data = {**model.as_dict(), "environment": environment_of(model)}
    data["caveats"] = caveats.records(data["environment"], data["cases"])
    if model.capacity is not None:  # a capacity sweep's answer (capacity.json)
        data["capacity"] = model.capacity
    data["facts"], data["tuning"], data["plan"] = model.facts("before"), model.tuning(), model.plan or {}
    data["hists"], data["cpu_hists"] = {}, {}
    for r in data["cases"]:
        try:
            per_cpu = {str(cpu): Histogram.from_record(rec) for cpu, rec in model.hists(r["id"]).items()}
            data["hists"][r["id"]] = Histogram.merged(per_cpu.values())
            data["cpu_hists"][r["id"]] = per_cpu
        except (Unreadable, ValueError, KeyError, TypeError, AttributeError):
            continue
    return data


def kind(r: dict) -> str:
    """What a case measured, from its probe and parameters: timer, ioc, interrupt, wake-up, timer-interrupt,
    switch, transfer, rtt; anything else is the probe's own name (rhealstone's with its component)."""
    probe, p = str(r.get("probe")), r.get("params") or {}
    if probe == "rhealstone":
        comp = str(p.get("component"))
        return {"task-switch": "switch", "interrupt-latency": "interrupt"}.get(comp, f"rhealstone {comp}")
    if probe == "event":
        return {"timerfd": "timer-interrupt", "fifo": "wake-up"}.get(str(p.get("source")), "interrupt")
    known = {"timer": "timer", "iocresp": "ioc", "switch": "switch", "pio": "transfer"}
    known.update({"msg": "rtt", "ca-rtt": "rtt", "pva-rtt": "rtt"})
    return known.get(probe, probe)


def temperature_line(env_case: dict | None) -> str | None:
    """'temperature: cpu-thermal 48.3 °C at the start, 55.1 °C at the end (max 56 °C)': a case's temperature before
    and after it (as seed 000 records a Raspberry Pi's CPU temperature per test), None where not recorded."""
    t = (env_case or {}).get("temperature_start_end")
    if not isinstance(t, dict):
        return None
    top = ((env_case or {}).get("temperature") or {}).get("max_c")
    peak = f" (max {top:g} °C)" if isinstance(top, int | float) else ""
    return f"temperature: {t['sensor']} {t['start_c']:g} °C at the start, {t['end_c']:g} °C at the end{peak}"

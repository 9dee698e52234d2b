"""Pure printers: tables and JSON from stored results (no measuring, no I/O beyond the text returned)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rtqual.answers import spikes
from rtqual.answers.requirements import describe
from rtqual.probes import has_section
from rtqual.results.facts import UNLIMITED, get_fact
from rtqual.units import format_cpulist, format_ns

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
JSON_STAT_KEYS = [k for _, k in STAT_COLUMNS]
SPIKES_SHOWN = 10  # spikes put in words per traced case by `rtqual show` (all in --json)


def stat_columns(leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """STAT_COLUMNS without the keys in leave_out: the narrower tables (cases, compare) take theirs from here."""
    return [(h, k) for h, k in STAT_COLUMNS if k not in leave_out]


PERCENTILE_NOTE = (
    "percentiles: nearest rank, rank = ceil(p/100 * N); value = highest value of the "
    "histogram bucket holding it, capped at max (never below the exact value, at most 0.1 % above)"
)


def format_cell(key: str, value: Any) -> str:
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

    def line(cells: list[str]) -> str:
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


def baseline_line(result: dict, results: list[dict]) -> str | None:
    """An IOC case next to the timer baseline measured in the same run: the timer case under the
    same loads, else the first timer case."""

    def loads(r: dict) -> list[str]:
        return sorted(ld.get("name") or "" for ld in r.get("loads") or [])

    timers = [r for r in results if has_section(r["probe"], "baseline") and r["stats"].get("count") and r is not result]
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
    if data.get("cut"):  # a run killed (SIGKILL) mid-case: its manifest stayed `running`
        out.append(
            f"cut: case {data['cut']} was running when rtqual was killed: no result; the cases below finished "
            f"(`rtqual restore {data['path']}` puts back what the run changed)"
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
        out.extend(network_lines(r))
        out.extend(spike_lines(r))
        baseline = baseline_line(r, data["cases"])
        if baseline:
            out.append(baseline)
        out.extend(f"requirement {describe(v)}" for v in r.get("requirement_verdicts") or [])
        out.append(f"verdict: {r['verdict'].upper()} - {r.get('reason', '')}")
        out.extend(f"warning: {w}" for w in r.get("warnings", []))
    table = table or data.get("table") or "cases"
    if data["cases"] and (len(data["cases"]) > 1 or table != "cases"):
        out.append("")
        out.append(cases_table(data["cases"]) if table == "cases" else paper_table(data["cases"], table))
    out.append("")
    out.append(PERCENTILE_NOTE)
    if m.get("capability"):  # written by the run (bundles of rtqual 0.1.0 have none)
        out += ["", "capability (from the numbers above):", *(f"  - {line}" for line in m["capability"])]
    return "\n".join(out)


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
        for name in STAGES:
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


def show_json(data: dict) -> dict:
    """The `rtqual show --json` document (a contract: keys are never renamed)."""

    def pick(s: dict) -> dict:
        return {k: s.get(k) for k in JSON_STAT_KEYS}

    return {
        **({"cut": data["cut"]} if data.get("cut") else {}),
        **({"damage": data["damage"]} if data.get("damage") else {}),
        "bundle": data["path"],
        "schema_version": data["manifest"].get("schema_version"),
        "cases": [
            {
                "id": r["id"],
                "label": r["label"],
                "probe": r["probe"],
                **({"run_as": r["run_as"]} if r.get("run_as") else {}),  # bundles before 0.2 lack it
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
                **({"requirements_judged": r["requirement_verdicts"]} if r.get("requirement_verdicts") else {}),
                **({"spikes": r.get("spikes") or [], "trace": r["trace"]} if isinstance(r.get("trace"), dict) else {}),
            }
            for r in data["cases"]
        ],
        "verdict": data["manifest"].get("verdict"),
        **({"capability": data["manifest"]["capability"]} if "capability" in data["manifest"] else {}),
    }


# ---------------------------------------------------------------- host facts (rtqual host)

RT_CAPS = ("CAP_SYS_NICE", "CAP_IPC_LOCK", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN", "CAP_SYS_RAWIO", "CAP_NET_ADMIN")
"""The capabilities a real-time measurement may need, shown in the Privileges row."""


def format_host(facts: dict) -> str:
    """The `rtqual host` table of a host.facts.collect() result."""
    return format_table(["fact", "value"], [list(r) for r in host_rows(facts)], left=2)


def _or(value: Any, missing: str = "unknown") -> str:
    """A value for the table, with a word for None."""
    return missing if value is None else str(value)


def _group_cpus(values: dict[int, str]) -> str:
    """{cpu: text} -> 'text (all)' or 'a (cpu 0-1); b (cpu 2)'."""
    if not values:
        return "unknown"
    groups: dict[str, list[int]] = {}
    for cpu, text in sorted(values.items()):
        groups.setdefault(text, []).append(cpu)
    if len(groups) == 1:
        return f"{next(iter(groups))} (all)"
    return "; ".join(f"{text} (cpu {format_cpulist(cpus)})" for text, cpus in groups.items())


def _governor_row(facts: dict) -> str:
    """Governor and current frequency per CPU, identical values merged."""
    per_cpu = get_fact(facts, "cpu.per_cpu") or []
    if per_cpu and all(e.get("governor") is None and e.get("reason") for e in per_cpu):
        reasons = sorted({e["reason"] for e in per_cpu})
        return f"not available ({', '.join(reasons)})"
    values = {}
    for e in per_cpu:
        khz = e.get("scaling_cur_freq_khz")
        freq = f"{khz / 1000:.0f} MHz" if isinstance(khz, int) else "? MHz"
        values[e.get("cpu")] = f"{_or(e.get('governor'), '?')}, {freq}"
    return _group_cpus(values)


def _preempt_row(facts: dict) -> str:
    """Model, its source and, for a dynamic kernel, the current mode."""
    p = get_fact(facts, "preempt") or {}
    text = f"{_or(p.get('model'))} (from {_or(p.get('model_source'))})"
    if p.get("model") == "PREEMPT_DYNAMIC":
        mode = p.get("dynamic_mode")
        text += f", mode {mode}" if mode else ", current mode unreadable (debugfs)"
    if p.get("cmdline_preempt") is not None:
        text += f", preempt={p['cmdline_preempt']} on cmdline"
    return text


def _cmdline_row(facts: dict) -> str:
    """The RT options present on the command line."""
    opts = get_fact(facts, "cmdline.rt_options") or {}
    words = [
        key if value is True else f"{key}={value}"
        for key, value in opts.items()
        if value is not None and value is not False
    ]
    return " ".join(words) if words else "none"


def _online_row(facts: dict) -> str:
    """Online CPUs against possible, SMT and isolation."""
    cpu = get_fact(facts, "cpu") or {}
    online = cpu.get("online_cpus")
    text = (
        f"{_or(cpu.get('online'))} ({len(online) if online is not None else '?'} of "
        f"{_or(cpu.get('possible_count'), '?')} possible)"
    )
    smt = cpu.get("smt_active")
    text += ", SMT " + {True: "active", False: "off", None: "unknown"}[smt]
    if cpu.get("isolated"):
        text += f", isolated {cpu['isolated']}"
    if cpu.get("nohz_full"):
        text += f", nohz_full {cpu['nohz_full']}"
    return text


def _cpuidle_row(facts: dict) -> str:
    """Driver, governor and the states of the first CPU with their exit latency."""
    idle = get_fact(facts, "cpuidle") or {}
    text = f"{_or(idle.get('driver'))} / {_or(idle.get('governor'))}"
    per_cpu = idle.get("per_cpu") or []
    if per_cpu and per_cpu[0].get("states"):
        states = [
            f"{s.get('name')} {_or(s.get('latency_us'), '?')}us" + (" (disabled)" if s.get("disabled") else "")
            for s in per_cpu[0]["states"]
        ]
        text += f"; cpu{per_cpu[0].get('cpu')}: " + ", ".join(states)
    return text


def _virt_row(facts: dict) -> str:
    """Virtualised or not, and what says so."""
    v = get_fact(facts, "virtualization") or {}
    word = {True: "yes", False: "no", None: "unknown"}[v.get("virtualized")]
    details = [
        x
        for x in (v.get("systemd_detect_virt_vm"), v.get("hypervisor_type"), v.get("dmi_product_name"))
        if x and x != "none"
    ]
    if v.get("systemd_detect_virt_container") not in (None, "none"):
        details.append(f"container {v['systemd_detect_virt_container']}")
    return word + (f" ({', '.join(details)})" if details else "")


def _throttling_row(facts: dict) -> str:
    """Whether RT tasks are throttled and to what share of each period."""
    runtime, period = get_fact(facts, "sched.rt_runtime_us"), get_fact(facts, "sched.rt_period_us")
    if runtime is None:
        text = "unknown"
    elif runtime < 0:
        text = "off (sched_rt_runtime_us = -1)"
    elif period:
        text = f"on: RT tasks get at most {100 * runtime / period:.0f}% of each {period} us"
    else:
        text = "on"
    fair_rt, fair_period = (
        get_fact(facts, "sched.fair_server_cpu0_runtime_ns"),
        get_fact(facts, "sched.fair_server_cpu0_period_ns"),
    )
    if fair_rt is not None and fair_period:
        text += f"; fair server cpu0 {fair_rt} ns per {fair_period} ns"
    return text


def _limit_text(limit: dict | None, scale: int = 1, unit: str = "") -> str:
    """'soft/hard' of one limit."""

    def one(v: Any) -> str:
        if v is None or v == UNLIMITED:
            return _or(v)
        return f"{v // scale}{unit}"

    limit = limit or {}
    return f"{one(limit.get('soft'))}/{one(limit.get('hard'))}"


def _privileges_row(facts: dict) -> str:
    """root or not, the RT-relevant capabilities, and what that allows."""
    p = get_fact(facts, "privileges") or {}
    who = "root" if p.get("root") else f"euid {_or(p.get('euid'))}"
    caps = p.get("capabilities")
    if caps is None:
        cap_text = "capabilities unknown"
    else:
        present = [c for c in RT_CAPS if c in caps]
        missing = [c for c in RT_CAPS if c not in caps]
        cap_text = f"{len(caps)} capabilities: " + (" ".join(present) or "none relevant")
        if missing:
            cap_text += " (missing " + " ".join(missing) + ")"
    yes = {True: "yes", False: "no", None: "unknown"}
    return f"{who}; {cap_text}; SCHED_FIFO {yes[p.get('can_sched_fifo')]}, mlock {yes[p.get('can_mlock')]}"


def _tracefs_row(facts: dict) -> str:
    """Where tracefs is and whether the timerlat tracer exists."""
    d = get_fact(facts, "devices") or {}
    if not d.get("tracefs"):
        return "not mounted"
    tracer = {True: "timerlat available", False: "no timerlat", None: "tracers unreadable"}
    return f"{d['tracefs']} ({tracer[d.get('timerlat')]})"


def _tools_row(facts: dict) -> str:
    """Tool names with versions."""
    parts = []
    for name, value in (get_fact(facts, "tools") or {}).items():
        if isinstance(value, dict):
            version = value.get("version") or value.get("path") or "?"
            parts.append(f"{name} {version}")
        elif value is None:
            parts.append(f"{name} not found")
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts) or "none"


def host_rows(facts: dict) -> list[tuple[str, str]]:
    """(label, value) rows for the human host table; a pure function of a collect() result."""
    k = get_fact(facts, "kernel") or {}
    cpu_model = _or(get_fact(facts, "cpu.model"))
    board = get_fact(facts, "cpu.board")
    if board and board != cpu_model:
        cpu_model += f" ({board})"
    clock = get_fact(facts, "clocksource") or {}
    limits = get_fact(facts, "limits") or {}
    d = get_fact(facts, "devices") or {}
    dma = get_fact(facts, "devices.cpu_dma_latency")
    return [
        ("Kernel", f"{_or(k.get('release'))} {_or(k.get('machine'), '')} {_or(k.get('version'), '')}".strip()),
        ("Preemption", _preempt_row(facts)),
        ("Cmdline RT options", _cmdline_row(facts)),
        ("CPU", cpu_model),
        ("Online CPUs", _online_row(facts)),
        ("Governor/frequency", _governor_row(facts)),
        (
            "Clocksource",
            f"{_or(clock.get('current'))} (available: {' '.join(clock.get('available') or []) or 'unknown'})",
        ),
        ("cpuidle", _cpuidle_row(facts)),
        ("Virtualization", _virt_row(facts)),
        (
            "sched_rt_runtime_us",
            f"{_or(get_fact(facts, 'sched.rt_runtime_us'))} of {_or(get_fact(facts, 'sched.rt_period_us'))} us",
        ),
        ("RT throttling", _throttling_row(facts)),
        (
            "Limits (rtprio/memlock/rttime)",
            f"rtprio {_limit_text(limits.get('rtprio'))}, "
            f"memlock {_limit_text(limits.get('memlock_bytes'), 1024, ' KiB')}, "
            f"rttime {_limit_text(limits.get('rttime_us'), 1, ' us')} (soft/hard)",
        ),
        ("Privileges", _privileges_row(facts)),
        ("cpu_dma_latency", {True: "present", False: "absent", None: "unknown"}[dma]),
        ("tracefs", _tracefs_row(facts)),
        (
            "GPIO/UIO",
            f"gpio: {' '.join(d.get('gpiochips') or []) or 'none'}; uio: {' '.join(d.get('uio') or []) or 'none'}",
        ),
        ("Tools", _tools_row(facts)),
    ]

"""cyclictest (rt-tests 2.x): its `--json=FILE` output, or the `-h`/`-H` histogram text it prints
(stdout or `--histfile`), one case per file.

Facts this relies on (rt-tests 2.4, checked here): latencies are truncated to whole µs (to ns with
-N/--nsecs, when the JSON says "resolution_in_ns": 1 and the histogram counts ns); per thread the
JSON has `cycles`, `min`, `max`, `avg`, `cpu` and, with -h, `histogram` (value -> count, non-zero
buckets only); no overflow count, stddev or percentiles, so overflow = cycles − Σ histogram; two keys
really end in a colon ("cmdline:", "rt_test_version:"). Threads > 0 run at interval + N·distance
(distance 500 µs unless -d says otherwise; 0 with -h). The text has one row per bucket and one column per thread
(-H adds a column summing them), then "# Total:", "# Min/Avg/Max Latencies:", "# Histogram
Overflows:"; it names no CPU, version or units (µs is assumed: cyclictest's default).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.imports import common
from rtqual.publish.imports.common import count, histogram, number, obj, read_json, read_text, uint
from rtqual.publish.imports.writer import MAX_CPUS, Case, Series, check_series
from rtqual.units import format_cpulist, format_duration

TOOL = "cyclictest"
DEFAULT_INTERVAL_US = 1000
DEFAULT_DISTANCE_US = 500
_POLICIES = {"fifo": "fifo", "rr": "rr", "other": "other", "normal": "other", "batch": "batch", "idle": "idle"}


def parse(path: Path) -> list[Case]:
    """One case from a cyclictest JSON file or histogram text, told apart by the first character."""
    text = read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        return [parse_json(path)]
    return [parse_text(path, text)]


def options(cmdline: str) -> dict:
    """The settings that shape a run, from cyclictest's command line (short, long, attached or not)."""
    words = cmdline.split()
    opts: dict = {}
    takes = {
        "-p": "priority",
        "--priority": "priority",
        "-i": "interval",
        "--interval": "interval",
        "-d": "distance",
        "--distance": "distance",
        "-l": "loops",
        "--loops": "loops",
        "-D": "duration",
        "--duration": "duration",
        "-h": "histogram",
        "--histogram": "histogram",
        "-H": "histogram",
        "--histofall": "histogram",
        "--policy": "policy",
    }
    optional = {"-a": "affinity", "--affinity": "affinity", "-t": "threads", "--threads": "threads"}
    flags = {"-S": "smp", "--smp": "smp", "-N": "nsecs", "--nsecs": "nsecs", "-m": "mlockall", "--mlockall": "mlockall"}
    i = 1
    while i < len(words):
        w = words[i]
        name, eq, value = w.partition("=") if w.startswith("--") else (w[:2], "", w[2:])
        if name in flags:
            opts[flags[name]] = True
        elif name in takes:
            if not (eq or value) and i + 1 < len(words):
                i, value = i + 1, words[i + 1]
            opts[takes[name]] = value
        elif name in optional:
            if not (eq or value) and i + 1 < len(words) and re.fullmatch(r"[0-9][0-9,\-]*", words[i + 1]):
                i, value = i + 1, words[i + 1]
            opts[optional[name]] = value or True
        i += 1
    return opts


def _int(opts: dict, key: str, default: int | None) -> int | None:
    try:
        return int(opts[key]) if key in opts else default
    except ValueError:
        return default


def settings(opts: dict, threads: int) -> tuple[dict, list[str]]:
    """Timer-like params (policy, priority, interval, loops) and warnings about what differs from rtqual's timer."""
    prio = _int(opts, "priority", 0) or 0
    policy = _POLICIES.get(str(opts.get("policy", "")).lower(), "fifo" if prio > 0 else "other")
    interval_us = _int(opts, "interval", DEFAULT_INTERVAL_US) or DEFAULT_INTERVAL_US
    distance_us = _int(opts, "distance", DEFAULT_DISTANCE_US)
    if opts.get("histogram") or (opts.get("smp") and "distance" not in opts):
        distance_us = 0  # cyclictest sets distance 0 with -h ("distance is ignored"), and -S without -d
    params: dict = {"policy": policy, "priority": prio, "interval_ns": interval_us * 1000}
    warnings = []
    if threads > 1 and distance_us:
        params["distance_ns"] = distance_us * 1000
        warnings.append(
            f"cyclictest ran thread N at {interval_us} + N*{distance_us} us (its -d distance); "
            "rtqual's timer runs every CPU at one interval"
        )
    if _int(opts, "loops", None):
        params["loops"] = _int(opts, "loops", None)
    if not opts.get("affinity") and not opts.get("smp"):
        warnings.append(
            "threads were not pinned (no -a): a thread's 'cpu' is where cyclictest saw it, it may have moved"
        )
    return params, warnings


def timer_label(params: dict, cpus: list[int]) -> str:
    """The label `rtqual run timer` gives the same settings, so `rtqual compare` pairs the cases."""
    prio = f":{params['priority']}" if params["policy"] != "other" else ""
    interval = format_duration(params["interval_ns"])
    if params.get("distance_ns"):
        interval += f"+{format_duration(params['distance_ns'])}/thread"
    return f"timer {params['policy']}{prio} {interval} cpus {format_cpulist(cpus)}"


def _timer_case(path: Path, series: dict[str, Series], params: dict, warnings: list[str], **more) -> Case:
    """The case of one cyclictest file: a timer case labelled as `rtqual run timer` would label it."""
    label = more.pop("label", None) or timer_label(params, params["cpus"])
    return Case(
        slug="timer",
        label=label,
        probe="cyclictest",
        tool=TOOL,
        version=more.pop("version", None),
        path=path,
        series=series,
        params=params,
        warnings=warnings,
        **more,
    )


def _add_intervals(params: dict, intervals_us: list[int]) -> None:
    """interval_ns from the threads' smallest interval, distance_ns (cyclictest -d) from the next one."""
    params["interval_ns"] = intervals_us[0] * 1000
    if len(intervals_us) > 1:
        params["distance_ns"] = (intervals_us[1] - intervals_us[0]) * 1000


def parse_json(path: Path) -> Case:
    """A `--json` file: per-thread cycles/min/avg/max and histogram, grouped by the thread's CPU."""
    data = read_json(path)
    threads = common.threads(str(path), data, "thread", "cyclictest --json output")
    unit_ns = 1 if data.get("resolution_in_ns") == 1 else 1000
    cmdline: str = data["cmdline:"] if isinstance(data.get("cmdline:"), str) else ""
    opts = options(cmdline)
    series: dict[str, Series] = {}
    thread_cpu, warnings, filled = {}, [], False
    for tid, t in sorted(threads.items(), key=lambda kv: (len(str(kv[0])), str(kv[0]))):
        where = f"{path}: thread {str(tid)[:20]}"
        t = obj(where, t)
        for key in ("cycles", "min", "max", "avg"):
            if key not in t:
                raise RtqError(f"{where}: no '{key}'")
        cycles = count(f"{where}.cycles", t["cycles"])
        buckets = histogram(f"{where}.histogram", t.get("histogram", {}))
        filled = filled or bool(buckets)
        s = Series(
            cycles,
            unit_ns,
            count(f"{where}.min", t["min"]) if cycles else None,
            count(f"{where}.max", t["max"]) if cycles else None,
            number(f"{where}.avg", t["avg"]) if cycles else None,
            buckets,
        )
        check_series(where, s)
        cpu = t.get("cpu")
        if isinstance(cpu, int) and not isinstance(cpu, bool):
            if not 0 <= cpu < MAX_CPUS:
                raise RtqError(f"{where}: cpu {cpu} is not a CPU number 0..{MAX_CPUS - 1}")
            key = str(cpu)
        elif uint(tid) is not None:
            warnings.append(f"thread {tid} names no CPU: it is listed as CPU {uint(tid)}")
            key = str(uint(tid))
        else:
            raise RtqError(f"{where}: names no CPU and is not numbered")
        thread_cpu[str(tid)] = int(key)
        series[key] = _merge(series[key], s) if key in series else s
    if len(thread_cpu) > len(series):
        warnings.append("several threads ran on one CPU: their histograms and counts are added per CPU")
    # With -h every thread has a histogram, empty when all its cycles overflowed; without, all are empty.
    no_hist = not ("histogram" in opts or filled)
    if no_hist:
        warnings.append(
            "no histogram (cyclictest ran without -h): count, min, mean and max only; percentiles and stddev unknown"
        )
        for s in series.values():
            s.buckets = None
    params, more = settings(opts, len(threads))
    params["cpus"] = sorted(int(k) for k in series)
    version = data.get("rt_test_version:")
    rc = data.get("return_code", 0)
    case = _timer_case(
        path,
        series,
        params,
        warnings + more + _resolution_note(unit_ns, no_hist),
        version=str(version) if version is not None else None,
        error=f"cyclictest returned {rc}" if rc not in (0, None) else None,
        hostname=_str((data.get("sysinfo") or {}).get("nodename") if isinstance(data.get("sysinfo"), dict) else None),
        start=_iso(data.get("start_time")),
        end=_iso(data.get("end_time")),
    )
    case.source = {
        "format": "cyclictest --json",
        "cmdline": cmdline or None,
        "sysinfo": data.get("sysinfo") if isinstance(data.get("sysinfo"), dict) else None,
        "thread_cpu": thread_cpu,
        "resolution_ns": unit_ns,
        **_precision(unit_ns, no_hist),
        "threads": {
            str(k): {x: v.get(x) for x in ("cycles", "min", "max", "avg", "cpu")}
            for k, v in threads.items()
            if isinstance(v, dict)
        },
    }
    return case


def _merge(a: Series, b: Series) -> Series:
    """Two threads on one CPU as one series (histograms added, avg weighted by cycles)."""
    n = a.count + b.count
    buckets = None
    if a.buckets is not None and b.buckets is not None:
        buckets = dict(a.buckets)
        for k, v in b.buckets.items():
            buckets[k] = buckets.get(k, 0) + v
    mins = [x for x in (a.min_units, b.min_units) if x is not None]
    maxs = [x for x in (a.max_units, b.max_units) if x is not None]
    avg = ((a.avg_units or 0) * a.count + (b.avg_units or 0) * b.count) / n if n else None
    return Series(n, a.unit_ns, min(mins) if mins else None, max(maxs) if maxs else None, avg, buckets)


_TEXT_ROW = re.compile(r"^(\d{1,18})((?:\s+\d{1,18})+)\s*$", re.ASCII)
_TEXT_SUM = re.compile(
    r"^#\s*(Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):((?:\s+\d{1,18})*)\s*$", re.ASCII
)
_STATUS = re.compile(r"T:\s*(\d{1,9})\s*\(\s*\d+\)\s*P:\s*(\d{1,9})\s*I:\s*(\d{1,12})\s*C:\s*(\d{1,18})", re.ASCII)


def parse_text(path: Path, text: str) -> Case:
    """The histogram text: bucket rows per thread, and the summary lines (Total = Σ histogram per thread)."""
    lines = text.splitlines()
    if not any(line.strip() == "# Histogram" for line in lines):
        if _STATUS_FULL.search(text):
            return parse_status(path, text)
        raise RtqError(f"{path}: not cyclictest output (no JSON, no '# Histogram' line, no 'T: N' status lines)")
    rows: dict[int, list[int]] = {}
    sums: dict[str, list[int]] = {}
    status: dict[int, tuple[int, int]] = {}  # thread -> (priority, interval us) from live status lines
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        m = _TEXT_ROW.match(line)
        if m:
            value = int(m.group(1))
            if value in rows:
                raise RtqError(f"{path}:{n}: bucket {value} given twice")
            rows[value] = [int(x) for x in m.group(2).split()]
            continue
        m = _TEXT_SUM.match(line)
        if m:
            sums[m.group(1)] = [int(x) for x in m.group(2).split()]
            continue
        for m in _STATUS.finditer(raw):
            status[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    missing = [k for k in ("Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows") if k not in sums]
    if missing:
        raise RtqError(f"{path}: cut short? no '# {missing[0]}:' line after the histogram")
    nthreads = len(sums["Min Latencies"])  # -H adds an all-threads value to Total, Max and Overflows only
    if not nthreads or any(len(v) not in (nthreads, nthreads + 1) for v in sums.values()):
        raise RtqError(f"{path}: the summary lines do not give one value per thread")
    sums = {k: v[:nthreads] for k, v in sums.items()}
    if any(len(r) < nthreads for r in rows.values()):
        raise RtqError(f"{path}: a histogram row has fewer columns than threads ({nthreads})")
    series = {}
    for t in range(nthreads):
        buckets = {v: r[t] for v, r in rows.items() if r[t]}
        hist_total = sum(buckets.values())
        if "Total" in sums and sums["Total"][t] != hist_total:
            raise RtqError(f"{path}: thread {t}: '# Total' {sums['Total'][t]} is not the histogram's sum {hist_total}")
        n = hist_total + sums["Histogram Overflows"][t]
        s = Series(
            n,
            1000,
            sums["Min Latencies"][t] if n else None,
            sums["Max Latencies"][t] if n else None,
            float(sums["Avg Latencies"][t]) if n else None,
            buckets,
        )
        check_series(f"{path}: thread {t}", s)
        series[str(t)] = s
    warnings = [
        "the histogram text names no CPU: per-CPU rows are cyclictest's thread numbers "
        "(with -a, thread N ran on CPU N)",
        "the histogram text gives no units: microseconds assumed (cyclictest's default; -N would make them ns)",
        "the histogram text gives avg in whole us: the mean is known to 1 us",
    ]
    if any(len(r) > nthreads for r in rows.values()):
        warnings.append("the -H summary column (all threads) is ignored: rtqual sums the threads itself")
    prio = max((p for p, _ in status.values()), default=None)
    intervals = sorted({i for _, i in status.values()})
    params: dict = {"cpus": list(range(nthreads))}
    if prio is not None and intervals:
        params.update(policy="fifo" if prio else "other", priority=prio)
        _add_intervals(params, intervals)
    label = timer_label(params, params["cpus"]) if "interval_ns" in params else f"cyclictest {path.name}"
    case = _timer_case(path, series, params, warnings, label=label)
    case.source = {
        "format": "cyclictest -h histogram text",
        "resolution_ns": 1000,
        **_precision(1000, False),
        "summary": sums,
        "status_lines": {str(t): {"priority": p, "interval_us": i} for t, (p, i) in sorted(status.items())},
    }
    return case


_STATUS_FULL = re.compile(
    r"T:\s*(\d{1,9})\s*\(\s*\d+\)\s*P:\s*(\d{1,9})\s*I:\s*(\d{1,12})\s*C:\s*(\d{1,18})\s*Min:\s*(\d{1,18})\s*"
    r"Act:\s*\d+\s*Avg:\s*(\d{1,18})\s*Max:\s*(\d{1,18})",
    re.ASCII,
)


def parse_status(path: Path, text: str) -> Case:
    """cyclictest's status lines ("T: 0 (pid) P:80 I:1000 C: 300 Min: 6 Act: 10 Avg: 38 Max: 3033"), the
    last one per thread: count, min, mean (whole us) and max; no histogram, no CPU."""
    last: dict[int, tuple[int, ...]] = {}
    for m in _STATUS_FULL.finditer(text):
        last[int(m.group(1))] = tuple(int(x) for x in m.groups()[1:])
    series = {}
    for t, (_prio, _interval, cycles, mn, avg, mx) in sorted(last.items()):
        s = Series(cycles, 1000, mn if cycles else None, mx if cycles else None, float(avg) if cycles else None)
        check_series(f"{path}: thread {t}", s)
        series[str(t)] = s
    prios, intervals = sorted({v[0] for v in last.values()}), sorted({v[1] for v in last.values()})
    params: dict = {"cpus": sorted(last), "policy": "fifo" if prios[-1] else "other", "priority": prios[-1]}
    _add_intervals(params, intervals)
    case = _timer_case(
        path,
        series,
        params,
        [
            "cyclictest status lines: count, min, mean (whole us) and max only; percentiles and stddev unknown",
            "the status lines name no CPU: per-CPU rows are cyclictest's thread numbers "
            "(with -a, thread N ran on CPU N)",
            "the status lines give no units: microseconds assumed (cyclictest's default; -N would make them ns)",
        ],
    )
    case.source = {
        "format": "cyclictest status lines (T: ...), the last per thread",
        "resolution_ns": 1000,
        **_precision(1000, True),
        "threads": {
            str(t): dict(zip(("priority", "interval_us", "cycles", "min", "avg", "max"), v)) for t, v in last.items()
        },
    }
    return case


def _precision(unit_ns: int, no_hist: bool) -> dict:
    """How the imported numbers relate to the true latencies (the same words for every cyclictest case)."""
    unit = "1 us" if unit_ns == 1000 else "1 ns"
    return {
        "values": f"upper edge of cyclictest's {unit} bucket (value*{unit_ns} + {unit_ns - 1} ns): at most {unit} "
        "above the true latency, never below",
        "percentiles": "unknown (no histogram)" if no_hist else f"nearest rank over all cycles, +-{unit}",
        "stddev": "unknown (no histogram)"
        if no_hist
        else f"from the histogram at {unit} resolution when nothing overflowed, else unknown",
        "mean": "cyclictest's avg over all cycles (truncated latencies), plus one unit minus 1 ns",
        "overflow": "cycles - sum(histogram), counted as out_of_range",
        "missing": ["overruns (cyclictest skips missed periods silently)", "threshold counts"],
    }


def _resolution_note(unit_ns: int, no_hist: bool) -> list[str]:
    if unit_ns == 1:
        return []
    return [
        "cyclictest records whole microseconds: values are bucket upper edges (at most 1 us above the truth)"
        + ("" if no_hist else ", percentiles carry +-1 us")
    ]


def _str(x) -> str | None:
    return x if isinstance(x, str) else None


def _iso(text) -> str | None:
    """cyclictest's 'Wed, 25 Nov 2026 01:52:51 +0000' in the manifest's ISO form; None if not that."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text.strip(), "%a, %d %b %Y %H:%M:%S %z").strftime("%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None

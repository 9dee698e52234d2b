"""The timer probe's Python side: its explicit command line, its one-case label, run time and scaling, and how
`rtqual selftest` measures it. Its options and defaults are the C table's (native_probes.json), like every probe's."""

from __future__ import annotations

from rtqual.fields import fail
from rtqual.units import format_cpulist, format_duration

US, MS, S = 1_000, 1_000_000, 1_000_000_000
SCENARIO_DEFAULT = True  # the probe of a scenario case that names none
EXTRAS = ("max_events", "no_tracemark")  # passed on only when not the probe's default


def deadline_params(p: dict, defaults: dict) -> dict:
    """--policy deadline: runtime, deadline and period in ns as the probe resolves them (the period is the
    wake-up interval; deadline defaults to the period, runtime to a tenth of the deadline, at least 2 us)."""
    period = p.get("period")
    if period and p["interval"] not in (period, defaults.get("interval")):
        fail(
            "",
            f"period ({format_duration(period)}) and interval ({format_duration(p['interval'])}) differ: a deadline "
            "thread wakes once per period; give one",
        )
    period = period or p["interval"]
    deadline = p.get("deadline") or period
    return {"runtime_ns": p.get("runtime") or max(deadline // 10, 2 * US), "deadline_ns": deadline, "period_ns": period}


def build(p: dict, defaults: dict) -> tuple[list[str], dict, dict]:
    """Full timer params -> rtqual-probe timer options (every one explicit), the case's params (ns) and
    requirements. `p` holds normalized values (ns ints, cpu list) with defaults filled; `loops` or `duration` set.
    """
    dl = deadline_params(p, defaults) if p["policy"] == "deadline" else None
    if dl is None and any(p.get(k) for k in ("runtime", "deadline", "period")):
        fail("", "runtime, deadline and period go with policy deadline")
    p = {**p, "interval": dl["period_ns"]} if dl else p
    loops = p.get("loops") or 0
    duration_ns = loops * p["interval"] if loops else p["duration"]
    args = ["--cpus", format_cpulist(p["cpus"]), "--policy", p["policy"], "--priority", str(p["priority"])]
    args += ["--interval", f"{p['interval']}ns", "--warmup", str(p["warmup"]), "--threshold", f"{p['threshold']}ns"]
    args += ["--loops", str(loops)] if loops else ["--duration", f"{duration_ns}ns"]
    if dl:
        args += [f"--{k[:-3]}={v}ns" for k, v in dl.items()]
    args += ["--no-dma-latency"] * bool(p.get("no_dma_latency")) + ["--allow-degraded"] * bool(p.get("allow_degraded"))
    params = {
        "cpus": p["cpus"],
        "policy": p["policy"],
        "priority": p["priority"],
        "interval_ns": p["interval"],
        "duration_ns": duration_ns,
        "loops": loops,
        "warmup": p["warmup"],
        "threshold_ns": p["threshold"],
        **(dl or {}),
    }
    for key in EXTRAS:
        if p.get(key) not in (None, False, defaults.get(key)):
            args += ["--" + key.replace("_", "-")] + ([] if p[key] is True else [str(p[key])])
            params[key] = p[key]
    requirements = {out: p[key] for key, out in (("max_latency", "max_ns"), ("p99_latency", "p99_ns")) if p.get(key)}
    return args, params, requirements


def label(params: dict) -> str:
    """The label `rtqual run timer` gives its single case."""
    if params["policy"] == "deadline":
        dl = "/".join(format_duration(params[k]) for k in ("runtime_ns", "deadline_ns", "period_ns"))
        return f"timer deadline {dl} cpus {format_cpulist(params['cpus'])}"
    prio = f":{params['priority']}" if params["policy"] not in ("other", "deadline") else ""
    return (
        f"timer {params['policy']}{prio} {format_duration(params['interval_ns'])} cpus {format_cpulist(params['cpus'])}"
    )


def time_ns(params: dict) -> int:
    """Estimated run time: the measured time and the warm-up periods."""
    return params["duration_ns"] + params["warmup"] * params["interval_ns"]


def slots(params: dict) -> int:
    """Threads taking one sample per period (rtqual.answers.planning): one per measured CPU."""
    return len(params["cpus"])


def scale(p: dict, factor: float) -> dict:
    """Duration (or loops) times factor, rounded to ms, never below 1 s or 10 intervals
    (or the original, when that is shorter)."""
    out = dict(p)
    floor_ns = max(S, 10 * p["interval"])
    if p.get("loops"):
        floor_loops = -(-floor_ns // p["interval"])
        out["loops"] = max(round(p["loops"] * factor), min(floor_loops, p["loops"]))
    else:
        ns = round(p["duration"] * factor)
        ns -= ns % MS if ns >= S else 0
        out["duration"] = max(ns, min(floor_ns, p["duration"]))
    return out


def scenario_params(case: dict) -> dict:
    """The case's params as a scenario file writes them (the one-case scenario.toml of `rtqual run timer`)."""
    p = case["params"]
    params = {
        "cpus": format_cpulist(p["cpus"]),
        "policy": p["policy"],
        "priority": p["priority"],
        "interval": f"{p['interval_ns']}ns",
        "warmup": p["warmup"],
        "threshold": f"{p['threshold_ns']}ns",
    }
    params.update({"loops": p["loops"]} if p["loops"] else {"duration": f"{p['duration_ns']}ns"})
    params.update({k: p[k] for k in EXTRAS if k in p})
    params.update({k[:-3]: f"{p[k]}ns" for k in ("runtime_ns", "deadline_ns", "period_ns") if k in p})
    params.update({"trace": True} if p.get("trace") else {})
    params.update({"capture": f"{p['capture_ns']}ns"} if p.get("capture_ns") else {})
    params.update({k.replace("_ns", "_latency"): f"{v}ns" for k, v in case["requirements"].items()})
    return params


def selftest_params(cpu: int, other: int, duration: str) -> dict:
    """`rtqual selftest`: one thread sleeping to 200 us deadlines on the CPU (a stall delays the first deadline
    inside it)."""
    return {"cpus": str(cpu), "interval": "200us", "duration": duration}


# rtqual selftest (rtqual.selftest.run): its place among the probes, the sampling period, the params; the
# reference probe keeps every stall size with --quick
SELFTEST = {
    "order": 1,
    "period_ns": 200 * US,
    "params": selftest_params,
    "quick_every_size": True,
    "blind": "none: its own deadlines on the CPU, one every 200 us, so every stall begins within one period of one",
}

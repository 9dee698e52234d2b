"""Probe registry: each probe's parameters (one Field each) and how they become probe options.

Adding a probe = one Probe entry in PROBES. The same table validates scenario files, fills
defaults, writes docs/scenario.schema.json and builds the native probe's command line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rtqual.scenario.fields import Field, check, defaults_of, fail, key_path, unknown_key
from rtqual.units import format_cpulist, format_duration

US, MS, S = 1_000, 1_000_000, 1_000_000_000


@dataclass(frozen=True)
class Probe:
    """name, parameter table, keys that exclude each other, and the builder of probe options."""

    name: str
    help: str
    params: dict
    exclusive: tuple = ()
    # full params (defaults filled, normalized) -> (args, case params, requirements)
    build: Callable[[dict], tuple[list[str], dict, dict]] = None
    label: Callable[[dict], str] = None  # case params -> the label of a one-case run
    label_keys: tuple = ()  # params shown in an automatic scenario case label
    time_ns: Callable[[dict], int] = None  # estimated run time from the case params
    scale: Callable[[dict, float], dict] = None  # full params, factor -> params with durations scaled
    service: Callable[[dict], dict | None] = None  # full params -> what runs around the probe (an IOC)
    native: str | None = None  # the rtqual-probe probe a case runs (default: name)


TIMER_PARAMS = {
    "cpus": Field("cpulist", "CPUs measured, one pinned thread each (default: all online, or the probe cpuset)"),
    "policy": Field("enum", "scheduling policy of the measurement threads", ("fifo", "rr", "other"), default="fifo"),
    "priority": Field("int", "real-time priority (fifo/rr)", lo=1, hi=99, default=80),
    "interval": Field("duration", "wake-up period", lo=10 * US, hi=10 * S, default="1ms"),
    "duration": Field(
        "duration", "measured time after warm-up (excludes loops)", lo=MS, hi=365 * 86400 * S, default="10s"
    ),
    "loops": Field("int", "measured periods per CPU instead of a duration", lo=1, hi=2**62),
    "warmup": Field("int", "samples discarded per CPU before measuring", lo=0, hi=10**9, default=100),
    "threshold": Field("duration", "samples above it are logged as events", lo=1, hi=60 * S, default="100us"),
    "max_latency": Field("duration", "requirement: the case fails if the max exceeds it", lo=1),
    "p99_latency": Field("duration", "requirement: the case fails if p99 exceeds it", lo=1),
    "no_dma_latency": Field("bool", "do not hold /dev/cpu_dma_latency at 0", default=False),
    "allow_degraded": Field("bool", "without RT privileges run as SCHED_OTHER, marked degraded", default=False),
}


def timer_build(p: dict) -> tuple[list[str], dict, dict]:
    """Full timer params -> rtqual-probe timer options, the case's params (ns) and requirements.

    `p` holds normalized values (ns ints, cpu list) with defaults filled; `loops` or `duration` set.
    """
    loops = p.get("loops") or 0
    duration_ns = loops * p["interval"] if loops else p["duration"]
    args = [
        "--cpus",
        format_cpulist(p["cpus"]),
        "--policy",
        p["policy"],
        "--priority",
        str(p["priority"]),
        "--interval",
        f"{p['interval']}ns",
        "--warmup",
        str(p["warmup"]),
        "--threshold",
        f"{p['threshold']}ns",
    ]
    args += ["--loops", str(loops)] if loops else ["--duration", f"{duration_ns}ns"]
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
    }
    requirements = {out: p[key] for key, out in (("max_latency", "max_ns"), ("p99_latency", "p99_ns")) if p.get(key)}
    return args, params, requirements


def timer_label(params: dict) -> str:
    """The label `rtqual run timer` gives its single case."""
    prio = f":{params['priority']}" if params["policy"] != "other" else ""
    return (
        f"timer {params['policy']}{prio} {format_duration(params['interval_ns'])} cpus {format_cpulist(params['cpus'])}"
    )


def timer_time_ns(params: dict) -> int:
    return params["duration_ns"] + params["warmup"] * params["interval_ns"]


def timer_scale(p: dict, factor: float) -> dict:
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


# Probes other than timer take their parameters from the native option table (`rtqual-probe
# --list`), kept in native_probes.json beside this file; a test checks it matches the binary.
NATIVE_TABLE = Path(__file__).with_name("native_probes.json")
MANAGED_OPTIONS = {"json-fd", "raw", "raw-max-bytes", "progress-ms", "script"}  # set by rtqual itself
_KINDS = {
    "duration": "duration",
    "int": "int",
    "enum": "enum",
    "flag": "bool",
    "cpulist": "cpulist",
    "path": "str",
    "string": "str",
}
REQUIREMENTS = {
    "max_latency": Field("duration", "requirement: the case fails if the max exceeds it", lo=1),
    "p99_latency": Field("duration", "requirement: the case fails if p99 exceeds it", lo=1),
}


def _native_field(opt: dict) -> Field:
    kind = _KINDS.get(opt["type"], "str")
    default = opt.get("default")
    if kind == "int" and default is not None:
        default = int(default)
    if kind == "bool":
        default = False
    return Field(
        kind, opt.get("help", ""), tuple(opt.get("choices") or ()), opt.get("min"), opt.get("max"), default=default
    )


def native_probe(entry: dict) -> Probe:
    """A Probe from one `rtqual-probe --list` entry: options pass straight to the binary."""
    name = entry["name"]
    params = {
        o["name"].lstrip("-").replace("-", "_"): _native_field(o)
        for o in entry["options"]
        if o["name"].lstrip("-") not in MANAGED_OPTIONS
    }
    params.update(REQUIREMENTS)
    defaults = defaults_of(params)

    def build(p: dict) -> tuple[list[str], dict, dict]:
        """Options given (defaults are the probe's own, so they are not repeated: some apply
        only to one mode, e.g. rhealstone --pi), and the case's full params."""
        args, case_params = [], {}
        for key, value in p.items():
            if key in REQUIREMENTS or value is None or value is False:
                continue
            kind = params[key].kind
            case_params[f"{key}_ns" if kind == "duration" else key] = value
            if defaults.get(key) == value:
                continue
            opt = "--" + key.replace("_", "-")
            if kind == "bool":
                args.append(opt)
            else:
                args += [
                    opt,
                    f"{value}ns" if kind == "duration" else format_cpulist(value) if kind == "cpulist" else str(value),
                ]
        if "duration" in params and not p.get("loops"):
            case_params.setdefault("duration_ns", p.get("duration"))
        requirements = {
            out: p[key] for key, out in (("max_latency", "max_ns"), ("p99_latency", "p99_ns")) if p.get(key)
        }
        return args, case_params, requirements

    def label(case_params: dict) -> str:
        words = [name] + [
            str(case_params[k])
            for k in ("mode", "ipc", "component", "transport", "source", "width")
            if k in case_params
        ]
        return " ".join(words)

    def time_ns(case_params: dict) -> int:
        return case_params.get("duration_ns") or 10 * S

    def scale(p: dict, factor: float) -> dict:
        out = dict(p)
        if p.get("duration"):
            out["duration"] = max(round(p["duration"] * factor), min(S, p["duration"]))
        elif p.get("loops"):
            out["loops"] = max(round(p["loops"] * factor), min(100, p["loops"]))
        return out

    exclusive = (("duration", "loops"),) if {"duration", "loops"} <= set(params) else ()
    return Probe(
        name,
        entry.get("summary", ""),
        params,
        exclusive=exclusive,
        build=build,
        label=label,
        label_keys=tuple(k for k in ("mode", "ipc", "component", "transport", "source", "width") if k in params),
        time_ns=time_ns,
        scale=scale,
    )


def _native_probes() -> dict[str, Probe]:
    try:
        entries = json.loads(NATIVE_TABLE.read_text())
    except (OSError, ValueError):
        return {}
    return {e["name"]: native_probe(e) for e in entries if e["name"] not in ("timer", "fake")}


# Probes measured against rtqual's own EPICS IOC, started around the probe (case["service"]).
# Their args name the IOC with macros the service fills in at run time: $(P) (PV prefix),
# $(IOC_IN) and $(IOC_OUT) (the device support's input and output FIFOs).
EPICS_SCANS = ("10 second", "5 second", "2 second", "1 second", ".5 second", ".2 second", ".1 second")
IOC_PARAMS = {
    "preset": Field(
        "enum",
        "record chain: kek = bi -> bo (KEK's two records), aps = bi -> calc -> bo",
        ("kek", "aps"),
        default="kek",
    ),
    "mode": Field(
        "enum",
        "process the records in the callback thread (scanIoRequest) or in the reader thread (scanIoImmediate)",
        ("callback", "immediate"),
        default="callback",
    ),
    "ioc_chain": Field(
        "int",
        "calc records between bi and bo, each passing the value on (default: the preset's, kek 0, aps 1)",
        lo=0,
        hi=10_000,
    ),
    "ioc_db": Field(
        "str",
        "a database file appended to the IOC's (macro P is the prefix): your own records "
        "(a relative path is taken from the current directory)",
    ),
    "ioc_prefix": Field("str", "PV prefix of the IOC's records (default: rtq<random hex>:, new each case)"),
    "ioc_priority": Field("int", "EPICS priority (0-99) of the IOC's input reader thread", lo=0, hi=99, default=90),
    "ioc_rtprio": Field(
        "int", "run the IOC process SCHED_FIFO at this priority, like chrt -f (default: as rtqual runs)", lo=1, hi=99
    ),
    "ioc_cpus": Field("cpulist", "CPU affinity of the IOC process, all its threads (default: all)"),
    "reader_cpu": Field("int", "CPU of the IOC's input reader thread (default: the IOC's affinity)", lo=0, hi=8191),
    "gpio": Field(
        "str",
        "a board's GPIO lines instead of the FIFOs, CHIP:STIM,IN,OUT,RESP (e.g. "
        "/dev/gpiochip0:17,27,22,23) with jumper wires STIM -> IN and OUT -> RESP: rtqual toggles "
        "STIM, the IOC's bi waits on IN, its bo drives OUT, rtqual timestamps RESP's edges "
        "(kernel timestamps)",
    ),
    "records": Field(
        "int",
        "CA load: records in the IOC scanned periodically and served to the CA clients (0: none)",
        lo=0,
        hi=100_000,
        default=0,
    ),
    "scan": Field("enum", "CA load: scan period of the load records", EPICS_SCANS, default=".1 second"),
    "put_rate": Field(
        "int",
        "CA load: puts per second by the put client, round-robin over the records (0: no put client)",
        lo=0,
        hi=1_000_000,
        default=1000,
    ),
    "ca_monitor": Field("enum", "CA load: a client monitoring every load record", ("yes", "no"), default="yes"),
}


def ioc_service(p: dict) -> dict:
    """The IOC service spec of a case (rtqual.epics.service.IocService takes it)."""
    spec = {"type": "ioc", **{k: p.get(k) for k in IOC_PARAMS}}
    spec["ca_monitor"] = p.get("ca_monitor") == "yes"
    if spec["ioc_db"]:
        spec["ioc_db"] = str(Path(spec["ioc_db"]).absolute())  # the bundle names the file itself
    return spec


def with_ioc(
    base: Probe, name: str, help: str, fixed: dict, label: Callable[[dict], str], external: str | None = None
) -> Probe:
    """A native probe run against rtqual's IOC: the IOC's parameters added to the probe's, the probe's
    `fixed` options filled with the IOC's macros. With `external` (an option of `fixed`), giving that
    option means the user's own IOC: no service is started and the IOC's parameters are ignored."""
    params = {k: f for k, f in base.params.items() if k not in fixed or external}
    params.update(IOC_PARAMS)
    params.update(REQUIREMENTS)

    def own_ioc(p: dict) -> bool:
        return not (external and p.get(external))

    def build(p: dict) -> tuple[list[str], dict, dict]:
        own = {k: v for k, v in p.items() if k in base.params and v is not None}
        if not own_ioc(p):
            return base.build(own)
        args, case_params, req = base.build({**fixed, **own})
        for k in fixed:
            case_params.pop(k, None)
        case_params.update({k: v for k, v in ioc_service(p).items() if k != "type"})
        return args, case_params, req

    def service(p: dict) -> dict | None:
        return ioc_service(p) if own_ioc(p) else None

    def time_ns(case_params: dict) -> int:
        return base.time_ns(case_params) + 2 * S  # the IOC starts in about a second

    return Probe(
        name,
        help,
        params,
        exclusive=base.exclusive,
        build=build,
        label=label,
        label_keys=("preset", "mode"),
        time_ns=time_ns,
        scale=base.scale,
        service=service,
        native=base.native or base.name,
    )


def _load_text(c: dict) -> str:
    return f" +{c['records']} records CA load" if c.get("records") else ""


def ioc_label(c: dict) -> str:
    chain = f" chain {c['ioc_chain']}" if c.get("ioc_chain") is not None else ""
    gpio = " gpio" if c.get("gpio") else ""
    return f"ioc {c['preset']}{chain} {c['mode']}{gpio} {c['rate']} Hz{_load_text(c)}"


def rtt_label(probe: str) -> Callable[[dict], str]:
    def label(c: dict) -> str:
        where = f"PV {c['put']}" if c.get("put") else "rtqual IOC"
        return f"{probe} {c['rate']} Hz {where}{_load_text(c)}"

    return label


def _ioc_probes(native: dict[str, Probe]) -> dict[str, Probe]:
    out = {}
    if "iocresp" in native:
        out["ioc"] = with_ioc(
            native["iocresp"],
            "ioc",
            "EPICS IOC response latency: stimulus -> bi -> (chain) -> bo -> response, total and per stage",
            {"in": "$(IOC_IN)", "out": "$(IOC_OUT)"},
            ioc_label,
        )
    rtt = {"ca-rtt": "Channel Access", "pva-rtt": "PV Access"}
    for name, protocol in rtt.items():  # without --put they measure through rtqual's own IOC
        if name in native:
            out[name] = with_ioc(
                native[name],
                name,
                f"{protocol} put -> monitor round trip through an IOC (rtqual's own unless --put names a PV)",
                {"put": "$(P)rtt:put", "monitor": "$(P)rtt:echo"},
                rtt_label(name),
                external="put",
            )
    return out


_NATIVE = _native_probes()
PROBES: dict[str, Probe] = {
    "timer": Probe(
        "timer",
        "cyclic timer wake-up latency (cyclictest-class)",
        TIMER_PARAMS,
        exclusive=(("duration", "loops"),),
        build=timer_build,
        label=timer_label,
        label_keys=("interval",),
        time_ns=timer_time_ns,
        scale=timer_scale,
    ),
    **_NATIVE,
    **_ioc_probes(_NATIVE),  # replaces the native ca-rtt and pva-rtt with the ones that start an IOC
}


def overlay(base: dict, top: dict, probe: str) -> dict:
    """Params of `top` over `base`; a key of an exclusive pair set in `top` drops its partner from `base`."""
    out = dict(base)
    for a, b in PROBES[probe].exclusive:
        if a in top:
            out.pop(b, None)
        if b in top:
            out.pop(a, None)
    out.update(top)
    return out


def check_params(probe: str, raw, path: str, name_of: Callable[[str], str] | None = None) -> dict:
    """Validate one table of probe params (no defaults filled). name_of renames keys in messages
    (the CLI passes lambda k: '--' + k.replace('_', '-'))."""
    fields = PROBES[probe].params
    if not isinstance(raw, dict):
        fail(path, "expected a table of probe parameters")
    out = {}
    for key, value in raw.items():
        if key not in fields:
            unknown_key(path, key, list(fields))
        where = name_of(key) if name_of else key_path(path, key)
        out[key] = check(fields[key], value, where)
    for a, b in PROBES[probe].exclusive:
        if a in out and b in out:
            fail(path, f"'{a}' and '{b}' exclude each other: give one")
    return out


def full_params(probe: str, params: dict, default_cpus: list[int]) -> dict:
    """Defaults filled under validated params; cpus from default_cpus when not given."""
    spec = PROBES[probe]
    full = overlay(defaults_of(spec.params), params, probe)
    if "cpus" in spec.params and "cpus" not in full:
        full["cpus"] = list(default_cpus)
    return full


def probe_case(probe: str, params: dict, default_cpus: list[int], case_id: str, label: str | None = None) -> dict:
    """A runnable case from validated params: the dict shape the runner takes (rtqual run and plans)."""
    spec = PROBES[probe]
    full = full_params(probe, params, default_cpus)
    args, case_params, requirements = spec.build(full)
    case = {
        "id": case_id,
        "label": label or spec.label(case_params),
        "probe": spec.native or probe,
        "args": args,
        "params": case_params,
        "requirements": requirements,
    }
    service = spec.service(full) if spec.service else None
    if service:
        case["service"] = service
    return case

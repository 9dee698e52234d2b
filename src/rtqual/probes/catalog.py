"""Probe registry: each probe's parameters (one Field each) and how they become probe options.

Every probe comes from the native table (rtqual.probes: a copy of the binaries' `--list`): its options,
defaults, label keys and the service its cases need. A probe's optional module (rtqual/probes/<name>.py)
may change how its options are built and labelled; a service (rtqual.services) adds its own parameters to
the probes run through it (`ioc` = iocresp run with rtqual's IOC). The same table validates scenario files,
fills defaults, writes docs/scenario.schema.json and builds the native probe's command line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rtqual import probes as native_table
from rtqual import services
from rtqual.errors import RtqError
from rtqual.fields import Field, check, defaults_of, fail, key_path, unknown_key
from rtqual.units import format_cpulist, format_duration

US, MS, S = 1_000, 1_000_000, 1_000_000_000
NATIVE_TABLE = native_table.NATIVE_TABLE
Build = Callable[[dict], tuple[list[str], dict, dict]]


@dataclass(frozen=True)
class Probe:
    """name, parameter table, keys that exclude each other, and the builder of probe options."""

    name: str
    help: str
    params: dict
    build: Build  # full params (defaults filled, normalized) -> (args, case params, requirements)
    label: Callable[[dict], str]  # case params -> the label of a one-case run
    time_ns: Callable[[dict], int]  # estimated run time from the case params
    scale: Callable[[dict, float], dict]  # full params, factor -> params with durations scaled
    exclusive: tuple = ()
    label_keys: tuple = ()  # params shown in an automatic scenario case label
    service: Callable[[dict], dict | None] | None = None  # full params -> what runs around the probe (an IOC)
    native: str | None = None  # the native probe a case runs (default: name)
    fixed: dict | None = None  # the native options the service fills ({option: macro}), from the table
    hidden: bool = False  # kept out of help and scenario files (the fake probe)


MANAGED_OPTIONS = {"json-fd", "raw", "raw-max-bytes", "progress-ms", "hist-delta"}  # set by rtqual itself
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

TRACE = {  # rtqual's own key of every probe's params (not the native probe's; not in Probe.params)
    "trace": Field(
        "bool",
        "trace the CPU of each spike (own tracefs instance) and name what held it (docs/trace.md)",
        default=False,
    ),
    "capture": Field(
        "duration",
        "keep the monitored CPUs' sched/irq events in a small ring (own tracefs instance) and, for each sample over "
        "this, keep the ring around it and name what held the CPU (docs/trace.md)",
        lo=1,
        hi=60 * S,
    ),
}


HW = {  # rtqual's own key of the probes whose module says HW_NOISE (the noise probe): the kernel's hwnoise mode
    "hw": Field(
        "bool",
        "also run the kernel's osnoise tracer with interrupts disabled (its hwnoise mode: only hardware and NMI "
        "noise remain), beside the noise figures; refused where the kernel has no osnoise tracer (docs/probes.md)",
        default=False,
    ),
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


def param_name(option: str) -> str:
    """'--max-events' -> 'max_events'."""
    return option.lstrip("-").replace("-", "_")


def native_probe(entry: dict) -> Probe:
    """A Probe from one native table entry: options pass straight to the binary, unless the probe's
    optional module builds them (rtqual.probes.<name>.build)."""
    name = entry["name"]
    params = {
        param_name(o["name"]): _native_field(o)
        for o in entry["options"]
        if o["name"].lstrip("-") not in MANAGED_OPTIONS
    }
    params.update(REQUIREMENTS)
    defaults = defaults_of(params)
    label_keys = tuple(entry.get("label_keys") or ())

    def build(p: dict) -> tuple[list[str], dict, dict]:
        """Options given (defaults are the probe's own, so they are not repeated: some apply
        only to one mode, e.g. rhealstone --pi), and the case's full params."""
        args, case_params = [], {}
        for key, value in p.items():
            if key in REQUIREMENTS or key in TRACE or key in HW or value is None or value is False:
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
        return " ".join([name] + [str(case_params[k]) for k in label_keys if k in case_params])

    def time_ns(case_params: dict) -> int:
        return case_params.get("duration_ns") or 10 * S

    def scale(p: dict, factor: float) -> dict:
        out = dict(p)
        if p.get("duration"):
            out["duration"] = max(round(p["duration"] * factor), min(S, p["duration"]))
        elif p.get("loops"):
            out["loops"] = max(round(p["loops"] * factor), min(100, p["loops"]))
        return out

    own_build = native_table.hook(name, "build")
    return Probe(
        name,
        entry.get("summary", ""),
        params,
        build=(lambda p: own_build(p, defaults)) if own_build else build,
        label=native_table.hook(name, "label", label),
        time_ns=native_table.hook(name, "time_ns", time_ns),
        scale=native_table.hook(name, "scale", scale),
        exclusive=(("duration", "loops"),) if {"duration", "loops"} <= set(params) else (),
        label_keys=label_keys,
        hidden=native_table.hook(name, "HIDDEN", False),
    )


def with_service(base: Probe, entry: dict) -> Probe:
    """A native probe run with the service its table entry names (`rtqual run ioc`: iocresp with rtqual's
    IOC): the service's parameters added to the probe's, the probe's `fixed` options filled with the
    service's macros. With `external` (an option of `fixed`), giving that option means the user's own
    service (their IOC): none is started and the service's parameters are ignored."""
    svc = entry["service"]
    kind = services.kind(svc["name"])
    fixed, external, run_as = dict(svc.get("fixed") or {}), svc.get("external"), svc["run_as"]
    fixed = {param_name(k): v for k, v in fixed.items()}
    params = {k: f for k, f in base.params.items() if k not in fixed or external}
    params.update(kind.params)
    params.update(REQUIREMENTS)

    def own_service(p: dict) -> bool:
        return not (external and p.get(param_name(external)))

    def build(p: dict) -> tuple[list[str], dict, dict]:
        own = {k: v for k, v in p.items() if k in base.params and v is not None}
        if not own_service(p):
            return base.build(own)
        args, case_params, req = base.build({**fixed, **own})
        for k in fixed:
            case_params.pop(k, None)
        case_params.update({k: v for k, v in kind.spec(p).items() if k != "type"})
        return args, case_params, req

    def service(p: dict) -> dict | None:
        return kind.spec(p) if own_service(p) else None

    def time_ns(case_params: dict) -> int:
        return base.time_ns(case_params) + kind.startup_ns

    return Probe(
        run_as,
        kind.help(run_as, base.help),
        params,
        build=build,
        label=kind.label(run_as),
        time_ns=time_ns,
        scale=base.scale,
        exclusive=base.exclusive,
        label_keys=kind.label_keys,
        service=service,
        native=base.native or base.name,
        fixed=fixed,
    )


def _all_probes() -> dict[str, Probe]:
    """Every probe of the native table, then those run with a service (replacing a native probe of the
    same name: ca-rtt without --put runs through rtqual's IOC)."""
    entries = native_table.table()
    out = {e["name"]: native_probe(e) for e in entries}
    for e in entries:
        if e.get("service"):
            out[e["service"]["run_as"]] = with_service(out[e["name"]], e)
    return out


ALL_PROBES: dict[str, Probe] = _all_probes()  # the hidden ones too (the fake probe)
PROBES: dict[str, Probe] = {k: p for k, p in ALL_PROBES.items() if not p.hidden}
# the probe of a scenario case that names none (the one whose module says SCENARIO_DEFAULT: the timer)
DEFAULT_PROBE = next((k for k in PROBES if native_table.hook(k, "SCENARIO_DEFAULT")), next(iter(PROBES), ""))


def fields_of(probe: Probe) -> dict:
    """Every key a case of the probe may give: its parameters and rtqual's own (`trace`, rtqual.measure.host.trace)."""
    return {**probe.params, **TRACE, **(HW if native_table.hook(probe.name, "HW_NOISE", False) else {})}


def overlay(base: dict, top: dict, probe: str) -> dict:
    """Params of `top` over `base`; a key of an exclusive pair set in `top` drops its partner from `base`."""
    out = dict(base)
    for a, b in ALL_PROBES[probe].exclusive:
        if a in top:
            out.pop(b, None)
        if b in top:
            out.pop(a, None)
    out.update(top)
    return out


def check_params(probe: str, raw: Any, path: str, name_of: Callable[[str], str] | None = None) -> dict:
    """Validate one table of probe params (no defaults filled). name_of renames keys in messages
    (the CLI passes lambda k: '--' + k.replace('_', '-'))."""
    fields = fields_of(ALL_PROBES[probe])
    if not isinstance(raw, dict):
        fail(path, "expected a table of probe parameters")
    out = {}
    for key, value in raw.items():
        if key not in fields:
            unknown_key(path, key, list(fields))
        where = name_of(key) if name_of else key_path(path, key)
        out[key] = check(fields[key], value, where)
    for a, b in ALL_PROBES[probe].exclusive:
        if a in out and b in out:
            fail(path, f"'{a}' and '{b}' exclude each other: give one")
    return out


def full_params(probe: str, params: dict, default_cpus: list[int]) -> dict:
    """Defaults filled under validated params; cpus from default_cpus when not given."""
    spec = ALL_PROBES[probe]
    full = overlay(defaults_of(spec.params), params, probe)
    if "cpus" in spec.params and "cpus" not in full:
        full["cpus"] = list(default_cpus)
    return full


def capture_over(probe: str, full: dict) -> int:
    """--capture OVER in ns, checked against the probe: it needs the probe's threshold events (samples over
    --threshold), so OVER may not be below --threshold, and --trace (every event read) is the other way."""
    over = int(full["capture"])
    if full.get("trace"):
        raise RtqError("--capture and --trace exclude each other: --trace reads every event, --capture keeps a ring")
    if "threshold" not in ALL_PROBES[probe].params:
        raise RtqError(f"--capture: probe {probe} reports no samples over a threshold to capture")
    threshold = full.get("threshold")
    if threshold is not None and over < int(threshold):
        raise RtqError(
            f"--capture {format_duration(over)}: below --threshold {format_duration(int(threshold))}; the probe "
            "reports only samples over its threshold: lower --threshold"
        )
    return over


def probe_case(probe: str, params: dict, default_cpus: list[int], case_id: str, label: str | None = None) -> dict:
    """A runnable case from validated params: the dict shape the runner takes (rtqual run and plans)."""
    spec = ALL_PROBES[probe]
    full = full_params(probe, params, default_cpus)
    args, case_params, requirements = spec.build(full)
    if full.get("trace"):  # rtqual's, not the probe's: the runner traces the case (rtqual.measure.host.trace)
        case_params["trace"] = True
    if full.get("capture"):
        case_params["capture_ns"] = capture_over(probe, full)
    if full.get("hw"):  # rtqual's too: the runner runs the kernel's hwnoise mode after the loop (measure.host.osnoise)
        case_params["hw"] = True
    case = {
        "id": case_id,
        "label": label or spec.label(case_params),
        "probe": spec.native or probe,
        "run_as": probe,
        "args": args,
        "params": case_params,
        "requirements": requirements,
    }
    service = spec.service(full) if spec.service else None
    if service:
        case["service"] = service
    return case

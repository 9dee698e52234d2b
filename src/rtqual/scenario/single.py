"""A single measurement from the command line (`rtqual run PROBE [options] [--load ...]`): its cases,
checked with the same tables as scenario files, under its loads, and the equivalent scenario file."""

from __future__ import annotations

import argparse
import json

from rtqual import probes as native_table
from rtqual.answers import planning
from rtqual.answers.requirements import Requirement, gather, legacy, needed_samples
from rtqual.errors import RtqError
from rtqual.fields import check
from rtqual.loadspec import load_name, parse_load
from rtqual.probes.catalog import ALL_PROBES, S, check_params, fields_of, probe_case
from rtqual.scenario.model import CONDITIONS
from rtqual.units import format_cpulist, online_cpus, parse_cpulist, parse_duration_ns

BASELINE_NS = 5 * S  # the timer baseline of a service probe's run, at the least (--baseline)
BASELINE_STAT = "p99.9"  # what the baseline must be long enough to state
SETTLE = CONDITIONS["settle"]  # --settle is a scenario file's conditions.settle: the same range and default
SETTLE_DEFAULT = SETTLE.default


def _given(value) -> bool:
    """An option the user gave: not left at None, a flag not False (a given 0 counts)."""
    return value is not None and value is not False


def _cli_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def given_options(name: str, a: argparse.Namespace) -> dict:
    """The probe options the user gave on the command line (as typed, before validation)."""
    return {k: getattr(a, k) for k in fields_of(ALL_PROBES[name]) if _given(getattr(a, k, None))}


def probe_options_case(name: str, a) -> dict:
    """Validate a probe's options with its table (the same as scenario files) and make the case."""
    params = check_params(name, given_options(name, a), "", name_of=_cli_name)
    if getattr(a, "cpus", None) and "cpus" in ALL_PROBES[name].params:
        parse_cpulist(a.cpus)  # every CPU asked for must be online here
    return probe_case(name, params, online_cpus(), f"001-{name}")


def baseline_probe() -> str | None:
    """The probe whose cases are the baseline others are set beside (the table's "baseline" section)."""
    return next((e["name"] for e in native_table.table() if "baseline" in (e.get("sections") or ())), None)


def baseline_duration(base_name: str, given: str | None, policy: str, priority: int) -> str:
    """--baseline as given, else BASELINE_NS, or longer where this host's CPUs need it for p99.9 with the
    plan's margin (2 CPUs at 1 ms: 6 s, 1 CPU: 11 s): a baseline that cannot state p99.9 compares nothing."""
    if given is not None:
        return given
    params = {"duration": f"{BASELINE_NS}ns", "policy": policy, "priority": priority}
    case = probe_case(base_name, check_params(base_name, params, ""), online_cpus(), "baseline")
    need = planning.planned(needed_samples(planning.PERCENTILES[BASELINE_STAT]))
    wanted = planning.duration_for(need, case["probe"], case["params"]) or 0
    return f"{max(BASELINE_NS, wanted)}ns"


def service_cases(name: str, a) -> list[dict]:
    """A probe measured with a service (`rtqual run ioc`): a baseline case on the same host first
    (--baseline: the timer), then the probe's case, whose service the run starts around it."""
    case = probe_options_case(name, a)
    base_name = baseline_probe()
    given = a.baseline
    off = given is not None and (given.strip() == "0" or not parse_duration_ns(given, "--baseline"))
    if base_name is None or off:
        return [case]
    policy, priority = case["params"]["policy"], case["params"]["priority"]
    base = {"duration": baseline_duration(base_name, given, policy, priority), "policy": policy, "priority": priority}
    if a.allow_degraded:
        base["allow_degraded"] = True
    params = check_params(base_name, base, "", name_of=lambda k: "--baseline" if k == "duration" else "--" + k)
    label = f"{base_name} baseline {format_cpulist(online_cpus())}"
    baseline = probe_case(base_name, params, online_cpus(), f"001-{base_name}-baseline", label=label)
    case["id"] = f"002-{name}"
    return [baseline, case]


def with_loads(cases: list[dict], a) -> list[dict]:
    """--load and --settle: every case measured under the loads, checked like a scenario's load tables."""
    specs = [parse_load(text) for text in a.load or []]
    if a.settle is not None and not specs:
        raise RtqError("--settle: only with --load (the time the loads run before the probe starts)")
    settle_ns = check(SETTLE, a.settle if a.settle is not None else SETTLE.default, "--settle")
    if not specs:
        return cases
    names = [load_name(spec) for spec in specs]
    for case in cases:
        case.update(loads=specs, load_names=names, conditions={"settle_ns": settle_ns})
        case["label"] += " under " + "+".join(names)
    return cases


def _toml(value) -> str:
    """A value of a one-case scenario file: TOML inline (a table as {k = v, ...})."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def scenario_text(cases: dict | list[dict], argv: list[str], given: dict | None = None) -> str | None:
    """The scenario equivalent to the command line, for the bundle (`rtqual plan` reads it): each case's
    params as its probe's module writes them (the timer: every one, in ns), the last case's (the probe the
    user named) else as given on the command line. None if a case cannot be written."""
    cases = [cases] if isinstance(cases, dict) else cases
    lines = [f"# {' '.join(argv)}"]
    for i, case in enumerate(cases):
        run_as = case.get("run_as") or case["probe"]
        writer = native_table.hook(run_as, "scenario_params")
        if writer is None and i < len(cases) - 1:
            return None
        params = writer(case) if writer else dict(given or {})
        lines += ["[[case]]", f'probe = "{run_as}"', f"label = {json.dumps(case['label'])}"]
        if params:
            lines.append(f"params = {_toml(params)}")
        shorthands = {r.text for r in legacy(case.get("requirements") or {})}  # written as params above
        given_texts = [r.text for r in case.get("require") or [] if r.text not in shorthands]
        if given_texts:
            lines.append(f"requirements = {_toml(given_texts)}")
        if case.get("loads"):
            lines.append("loads = [" + ", ".join(_toml(spec) for spec in case["loads"]) + "]")
            lines.append(f'conditions = {{ settle = "{case["conditions"]["settle_ns"]}ns" }}')
    return "\n".join(lines) + "\n"


def single_run(a, argv: list[str]) -> tuple[list[dict], str | None]:
    """`rtqual run PROBE ...`'s cases (a service probe: its baseline first), under --load if given, and the
    equivalent scenario file (None for a hidden probe). `--duration auto[:CAP]`: the measured case runs as
    long as its requirements need (rtqual.answers.planning.auto_duration, kept in its "duration_auto")."""
    probe = ALL_PROBES[a.probe]
    cap_ns = planning.parse_auto(getattr(a, "duration", None))
    if cap_ns is not None:
        a.duration = None  # the probe's default duration while its rate is worked out

    asked = gather(a.require, a.profile)  # parsed once, here

    def cases_of() -> tuple[list[dict], list[Requirement]]:
        cases = service_cases(a.probe, a) if probe.service else [probe_options_case(a.probe, a)]
        cases = with_loads(cases, a)
        # the measured case (the last: a service probe's baseline is for comparison only); --max-latency and
        # --p99-latency join its requirements here, the one route to its verdict
        return cases, gather(asked, None, limits=cases[-1]["requirements"])

    cases, require = cases_of()
    if cap_ns is not None:
        auto = planning.auto_duration(cases[-1]["probe"], cases[-1]["params"], require, cap_ns)
        a.duration = f"{auto['duration_ns']}ns"
        cases, require = cases_of()
        cases[-1]["duration_auto"] = auto
    if require:
        cases[-1]["require"] = require
    if a.profile:
        cases[-1]["profile"] = a.profile  # its requirements are judged against its cycle
    given = given_options(a.probe, a)
    return cases, None if probe.hidden else scenario_text(cases, argv, given)

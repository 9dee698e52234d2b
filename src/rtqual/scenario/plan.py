"""Plan: a validated scenario expanded into runnable cases, and its pure text/JSON views.

A case is the runner's dict ({"id","label","probe","args","params","requirements"}, as
`rtqual run timer` builds it) plus "loads" (load specs), "load_names", "conditions"
(governor, frequency_khz, cpuset {probe, loads}, settle_ns), "scale" and "estimate_ns".
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from rtqual import units
from rtqual.answers import planning
from rtqual.answers.requirements import Requirement, gather, kept
from rtqual.errors import RtqError
from rtqual.fields import defaults_of, format_khz, format_value
from rtqual.probes.catalog import DEFAULT_PROBE, PROBES, S, full_params, probe_case
from rtqual.scenario.model import AXIS_LOAD, CONDITIONS, IDLE, axes, load_specs, merge
from rtqual.textfmt import format_table
from rtqual.units import format_cpulist, format_duration, online_cpus

CASE_OVERHEAD_NS = 3 * S  # per case: loads and probe started and stopped, tunables set and restored
PLAN_SCHEMA_VERSION = 1
SETTLE_NS = defaults_of(CONDITIONS)["settle"]


def expand(
    scenario: dict, scale: float | None = None, cpus: list[int] | None = None, require: list[Requirement] | None = None
) -> list[dict]:
    """All cases of a validated scenario, in file order: explicit cases, then each matrix's product.

    scale (default [run].scale) multiplies durations and loop counts; labels and ids keep the
    nominal values so scaled and full runs compare case by case. cpus: the CPUs a case without
    `cpus` measures (default: this host's online CPUs). require: requirements judged on every case
    after its own (the command line's --profile/--require, from answers.requirements.gather).
    """
    scale = scenario["run"].get("scale", 1.0) if scale is None else scale
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 < scale <= 1000:
        raise RtqError(f"--scale: must be a number above 0 and at most 1000 (got {scale})")
    online = list(cpus) if cpus is not None else online_cpus()
    shapes = []  # (label or None, layers top last)
    for part in scenario["order"]:
        if part == "cases":
            shapes += [(c.get("label"), [c]) for c in scenario["cases"]]
        else:
            for m in scenario["matrices"]:
                shapes += _matrix_shapes(m)
    cases: list[dict] = []
    seen: dict[str, int] = {}
    for n, (label, layers) in enumerate(shapes, 1):
        case = _case(scenario, layers, label, n, scale, online, require or [])
        if case["label"] in seen:
            raise RtqError(
                f"{scenario.get('source', '<scenario>')}: cases {seen[case['label']]} and {n} are both "
                f"labelled '{case['label']}': give each [[case]] a label or each [[matrix]] a label prefix"
            )
        seen[case["label"]] = n
        cases.append(case)
    return cases


def _matrix_shapes(m: dict) -> list[tuple[str, list[dict]]]:
    """The cartesian product of a matrix's axes, as (label, [base, overlay]) in axis order."""
    names = list(m["axes"])
    varying = [k for k in names if len(m["axes"][k]) > 1] or names
    probe = m["base"].get("probe")
    fields = axes(probe or DEFAULT_PROBE)
    out = []
    for combo in itertools.product(*(m["axes"][k] for k in names)):
        top: dict[str, Any] = {"params": {}, "conditions": {}}
        for key, value in zip(names, combo):
            if key == "load":
                top["loads"] = value
            elif key in CONDITIONS:
                top["conditions"][key] = value
            else:
                top["params"][key] = value
        words = [m["label"]] if m.get("label") else []
        words += [axis_text(key, fields[key], v) for key, v in zip(names, combo) if key in varying]
        out.append((" ".join(words), [m["base"], top]))
    return out


def axis_text(key: str, field, value) -> str:
    """One axis value in a label: 'hackbench', '1ms', '1500MHz', 'priority 80', 'cpus 0-3'."""
    if field is AXIS_LOAD:
        return "+".join(value) or IDLE
    text = format_value(field, value)
    return text if field.kind in ("enum", "duration", "frequency") else f"{key} {text}"


def _case(
    scenario: dict,
    layers: list[dict],
    label: str | None,
    n: int,
    scale: float,
    online: list[int],
    also: list[Requirement],
) -> dict:
    d = scenario["defaults"]
    probe = next((x["probe"] for x in reversed([d, *layers]) if "probe" in x), DEFAULT_PROBE)
    shape = {k: v for k, v in d.items() if k != "params"}
    shape["params"] = d.get("params", {}).get(probe, {})
    for layer in layers:
        shape = merge(shape, layer, probe)
    cond = shape["conditions"]
    cpuset = cond.get("cpuset", {})
    default_cpus = cpuset.get("probe", online)
    nominal = full_params(probe, shape["params"], default_cpus)
    if "probe" in cpuset and "cpus" in nominal and not set(nominal["cpus"]) <= set(cpuset["probe"]):
        raise RtqError(
            f"{scenario.get('source', '<scenario>')}: case {n}: cpus {format_cpulist(nominal['cpus'])} "
            f"are outside the probe cpuset {format_cpulist(cpuset['probe'])}"
        )
    names, specs = load_specs(shape.get("loads", []), scenario["loads"])
    if label is None:
        label = _auto_label(probe, nominal, names, cond)
    params = PROBES[probe].scale(nominal, scale) if scale != 1 else nominal
    case = probe_case(probe, params, default_cpus, f"{n:03d}-{slug(label)}", label)
    conditions = {"settle_ns": cond.get("settle", SETTLE_NS) if specs else 0}
    if "governor" in cond:
        conditions["governor"] = cond["governor"]
    if "frequency" in cond:
        conditions["frequency_khz"] = cond["frequency"]
    if cpuset:
        conditions["cpuset"] = dict(cpuset)
    case.update(loads=specs, load_names=names, conditions=conditions, scale=scale)
    require = gather(
        [*(shape.get("requirements") or []), *also],  # [defaults]' texts parsed here, a case's already parsed
        shape.get("profile"),
        f"{scenario.get('source', '<scenario>')}: case {n}: requirement",
        limits=case["requirements"],  # max_latency/p99_latency: requirements like the others
    )
    if require:
        case["require"] = require
    if shape.get("profile"):
        case["profile"] = shape["profile"]  # its requirements are judged against its cycle
    case["estimate_ns"] = PROBES[probe].time_ns(case["params"]) + conditions["settle_ns"] + CASE_OVERHEAD_NS
    return case


def _auto_label(probe: str, full: dict, load_names: list[str], cond: dict) -> str:
    """'hackbench 1ms 600MHz': loads, the probe's label params, frequency and governor."""
    fields = PROBES[probe].params
    words = ["+".join(load_names) or IDLE]
    words += [format_value(fields[k], full[k]) for k in PROBES[probe].label_keys if k in full]
    words += [format_khz(cond["frequency"])] if "frequency" in cond else []
    words += [cond["governor"]] if "governor" in cond else []
    return " ".join(words)


def slug(label: str) -> str:
    """'hackbench 1ms 1500MHz' -> 'hackbench-1ms-1500mhz' (ids and directory names)."""
    return re.sub(r"[^a-z0-9.]+", "-", label.lower()).strip("-.")[:48].rstrip("-.") or "case"


def total_ns(cases: list[dict]) -> int:
    return sum(c["estimate_ns"] for c in cases)


format_hms = units.format_hms  # the one h:m:s formatter; plan.format_hms kept for callers


def _conditions_text(c: dict) -> str:
    words = [c["governor"]] if "governor" in c else []
    words += [format_khz(c["frequency_khz"])] if "frequency_khz" in c else []
    words += [f"cpuset {k}:{format_cpulist(v)}" for k, v in c.get("cpuset", {}).items()]
    return " ".join(words) or "-"


def plan_text(cases: list[dict], title: str | None = None) -> str:
    """The plan as a table (one row per case) and, per case, the samples it will give and what they decide
    (rtqual.answers.planning: a second table, then one line per requirement it cannot decide), and last the
    total estimated time; runs nothing."""
    rows = []
    for c in cases:
        p = c["params"]
        interval = (
            format_duration(p["interval_ns"])
            if "interval_ns" in p
            else format_duration(S // p["rate"])
            if p.get("rate")
            else "-"
        )  # stimulus probes: the period
        duration = (
            f"{p['loops']} loops"
            if p.get("loops")
            else format_duration(p["duration_ns"])
            if p.get("duration_ns")
            else "-"
        )
        rows.append(
            [
                c["id"],
                c["label"],
                c.get("run_as") or c["probe"],  # the name the user gives (ioc, not iocresp)
                ", ".join(c.get("load_names", [])) or IDLE,
                _conditions_text(c.get("conditions", {})),
                interval,
                duration,
                format_hms(c["estimate_ns"]),
            ]
        )
    table = format_table(["id", "label", "probe", "loads", "conditions", "interval", "duration", "time"], rows, left=5)
    measuring = sum(c["params"].get("duration_ns") or 0 for c in cases)
    total = total_ns(cases)
    scales = {c.get("scale", 1) for c in cases}
    scaled = f", durations scaled by {scales.pop():g}" if len(scales) == 1 and 1 not in scales else ""
    out = [title] if title else []
    out += [
        table,
        "",
        samples_text(cases),
        f"{len(cases)} case{'s' * (len(cases) != 1)}, about {format_hms(total)} in total "
        f"({format_hms(measuring)} measuring, {format_hms(total - measuring)} warm-up, load settling "
        f"and start/stop{scaled})",
    ]
    return "\n".join(out)


def samples_text(cases: list[dict]) -> str:
    """Per case: the samples it will give, the percentiles they decide (10/(1-p) with the plan's margin)
    and, with requirements, how many it decides; then each requirement it cannot decide and what it needs."""
    rows, lines = [], []
    for c in cases:
        planned = planning.case_plan(c)
        samples, names = planned["expected_samples"], planned["decidable"]
        reqs = planned.get("decidable_requirements", [])
        rows.append(
            [
                c["id"],
                "?" if samples is None else f"{samples:,}",
                "known once run" if names is None else " ".join(names) or "-",
                f"{sum(r['decidable'] is True for r in reqs)} of {len(reqs)}" if reqs else "-",
            ]
        )
        for r in reqs:
            if r["decidable"] is None:
                lines.append(f"{c['id']}: {r['requirement']}: needs {r['samples_needed']:,} samples, known once run")
            elif not r["decidable"]:
                lines.append(f"{c['id']}: cannot decide {planning.undecided_text(r, c['probe'], c['params'])}")
    headers = ["id", "samples", "decides", "requirements decidable"]
    if not any(c.get("require") for c in cases):
        headers, rows = headers[:3], [r[:3] for r in rows]
    note = (
        f"samples: expected; decides: the percentiles they decide, 10/(1-p) samples and {planning.MARGIN_PCT} % "
        "(a missed period is not a sample)"
    )
    return "\n".join([format_table(headers, rows, left=1), note, *lines])


def plan_json(cases: list[dict], scenario: dict | None = None) -> dict:
    """The plan as stored in a bundle's plan.json; each case with its planning keys (expected_samples,
    decidable, decidable_requirements: rtqual.answers.planning.case_plan)."""
    run = (scenario or {}).get("run", {})
    return {
        "schema_version": PLAN_SCHEMA_VERSION,
        "name": run.get("name"),
        "description": run.get("description"),
        "table": run.get("table", "cases"),
        "total_ns": total_ns(cases),
        "cases": [{**kept(c), **planning.case_plan(c)} for c in cases],
    }


def plan_title(scenario: dict, scale: float | None = None) -> str:
    """First line of `rtqual plan`: file, name and description."""
    run = scenario["run"]
    words = [scenario.get("source", "<scenario>")]
    words += [f"({run['name']})"] if "name" in run else []
    words += [f"- {run['description']}"] if "description" in run else []
    return " ".join(words)

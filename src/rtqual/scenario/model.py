"""Scenario files: TOML -> validated plain dicts, before anything runs.

Every mistake is one RtqError line: `<file>: <key path>: <what>` (unknown keys rejected with a
suggestion). The key tables below are the single source for validation, docs/scenario.md and
docs/scenario.schema.json. Array positions in key paths count from 1: case[1] is the first [[case]].
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from rtqual import loadspec
from rtqual.answers.requirements import PROFILES, requirement
from rtqual.errors import RtqError
from rtqual.fields import Field, check, check_table, fail, key_path, suggest, type_name, unknown_key
from rtqual.probes.catalog import DEFAULT_PROBE, PROBES, S, check_params, fields_of, overlay
from rtqual.util import system_tree

GOVERNORS = ("performance", "powersave", "ondemand", "conservative", "schedutil", "userspace")
LOAD_TYPES = tuple(loadspec.TYPES)  # the load types' names, in their order
IDLE = "idle"
MAX_CASES = 10_000  # cases per scenario (docs/scenario.md): a larger matrix is refused before it is expanded
MAX_SCENARIO_BYTES = 4 * 2**20  # a scenario file is text of a few KiB: a larger one is refused unread

RUN = {
    "name": Field("name", "short name of the scenario (bundle and report titles)"),
    "description": Field("str", "what the scenario measures and where it comes from"),
    "output": Field("str", "bundle directory (default rtqual-<host>-<time>)"),
    "scale": Field(
        "number", "multiplies every duration and loop count (--scale overrides)", lo=0.001, hi=1000, default=1.0
    ),
    "raw": Field("bool", "keep every sample of every case (raw.bin)", default=False),
    "table": Field(
        "enum",
        "the paper table `rtqual show` prints by default",
        ("cases", "aps", "kek", "madoca", "vme"),
        default="cases",
    ),
}
CPUSET = {
    "probe": Field("cpulist", "CPUs of a cgroup cpuset the probe runs in"),
    "loads": Field("cpulist", "CPUs of a cgroup cpuset the loads run in"),
}
CONDITIONS = {
    "governor": Field("enum", "cpufreq governor of every CPU during the case", GOVERNORS),
    "frequency": Field(
        "frequency",
        "fixed CPU frequency: scaling_min_freq = scaling_max_freq = this (600MHz, 1.5GHz, 600000kHz)",
        lo=1_000,
        hi=100_000_000,
    ),
    "cpuset": Field("table", "processor sets: cgroup cpusets for the probe and/or the loads", fields=CPUSET),
    "settle": Field(
        "duration",
        "time the loads run before the probe starts (ignored without loads)",
        lo=0,
        hi=3600 * S,
        default="2s",
    ),
}
# kinds handled here, not in fields.check: params (probe-dependent), loads, loadspec, loadset, load, cases, matrix
CASE = {
    "label": Field("str", "name in tables and reports; matches cases across runs (default: from the parameters)"),
    "probe": Field("enum", "what measures", tuple(PROBES), default=DEFAULT_PROBE),
    "params": Field("params", "probe parameters (see the probe's table)"),
    "loads": Field(
        "loads", "loads running during the case: names of [loads.NAME] tables, load types, or inline load tables"
    ),
    "conditions": Field("table", "host conditions set for the case and restored after it", fields=CONDITIONS),
    "requirements": Field(
        "strlist",
        'requirements judged on the case, e.g. ["p99 <= 100us", "over(100us) <= 0.1%", "overruns == 0"] '
        "(docs/requirements.md); a case's list replaces the one of [defaults]",
    ),
    "require": Field("strlist", "the same as `requirements` (the word of --require); give one of the two"),
    "profile": Field(
        "enum", "a named set of requirements (docs/requirements.md), judged before `requirements`", tuple(PROFILES)
    ),
}
BASE = {k: f for k, f in CASE.items() if k != "label"}
DEFAULTS = {
    **{k: f for k, f in BASE.items() if k != "params"},
    **{
        name: Field("params", f"default parameters of every {name} case", fields=fields_of(p))
        for name, p in PROBES.items()
    },
}
AXIS_LOAD = Field("load", f"a [loads.NAME] name, a load type, '{IDLE}' (no load), or an array of names run together")
MATRIX = {
    "label": Field("str", "prefix of each case label"),
    "base": Field("table", "settings shared by every case of the matrix (over [defaults])", fields=BASE),
}
TOP = {
    "run": Field("table", "run settings", fields=RUN),
    "defaults": Field(
        "table",
        "defaults under every case: probe, loads, conditions, and [defaults.<probe>] parameters",
        fields=DEFAULTS,
    ),
    "loads": Field("loadset", "named load specs: [loads.NAME] with a `type` and the load's options"),
    "case": Field("cases", "explicit cases, run in order"),
    "matrix": Field(
        "matrix",
        "cases from the cartesian product of the arrays of values given per parameter; "
        "one [matrix] or several [[matrix]]",
    ),
}


def axes(probe: str) -> dict:
    """Matrix axis name -> Field of one value: the load, the probe's params and the conditions."""
    return {"load": AXIS_LOAD, **fields_of(PROBES[probe]), **CONDITIONS}


def load(path: str | Path) -> dict:
    """Read and validate a scenario file (a regular file of at most MAX_SCENARIO_BYTES: never a FIFO or a
    device); RtqError (one line) on any problem."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:  # a FIFO must not block
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise RtqError(f"{path}: not a regular file")
            data = f.read(MAX_SCENARIO_BYTES + 1)
        if len(data) > MAX_SCENARIO_BYTES:
            raise RtqError(f"{path}: larger than {MAX_SCENARIO_BYTES // 2**20} MiB: not a scenario file")
    except OSError as e:
        raise RtqError(f"{path}: cannot read scenario: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RtqError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return loads(text, str(path))


def loads(text: str, source: str = "<scenario>") -> dict:
    """Parse and validate scenario TOML text; `source` names it in messages."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", msg)
        if m:
            raise RtqError(f"{source}:{m.group(1)}:{m.group(2)}: invalid TOML: {msg[: m.start()]}") from None
        end = msg.endswith("(at end of document)")
        lines = text.count("\n") + 1
        raise RtqError(
            f"{source}:{lines}:{'end' if end else '?'}: invalid TOML: {msg.removesuffix(' (at end of document)')}"
        ) from None
    except RecursionError:
        raise RtqError(f"{source}: invalid TOML: nested too deeply") from None
    result = validate(doc, source)
    result["text"] = text
    return result


def validate(doc: dict, source: str = "<scenario>") -> dict:
    """A parsed TOML document -> the validated scenario (normalized values, see docs/scenario.md)."""
    try:
        return {"source": source, **_validate(doc)}
    except RtqError as e:
        raise RtqError(f"{source}: {e}", e.exit_code) from None


def _validate(doc: dict) -> dict:
    if not isinstance(doc, dict):
        fail("", f"expected a TOML document, got {type_name(doc)}")
    for key in doc:
        if key not in TOP:
            unknown_key("", key, list(TOP))
    run = check_table(RUN, doc.get("run", {}), "run")
    tree = system_tree(run["output"]) if "output" in run else None
    if tree:
        fail("run.output", f"'{run['output']}' is in {tree}, a kernel or device tree: write results elsewhere")
    _check_case_count(doc)
    named = _check_loadset(doc.get("loads", {}), "loads")
    defaults = _check_defaults(doc.get("defaults", {}), named)
    probe = defaults.get("probe", DEFAULT_PROBE)
    order: list[str] = []
    out: dict[str, Any] = {
        "run": run,
        "defaults": defaults,
        "loads": named,
        "cases": [],
        "matrices": [],
        "order": order,
    }
    for key in doc:
        if key == "case":
            cases = doc["case"]
            if not isinstance(cases, list):
                fail("case", f"expected an array of tables ([[case]]), got {type_name(cases)}")
            out["cases"] = [_check_case(c, f"case[{i}]", CASE, probe, named) for i, c in enumerate(cases, 1)]
            order.append("cases")
        elif key == "matrix":
            ms = doc["matrix"]
            if isinstance(ms, dict):
                out["matrices"] = [_check_matrix(ms, "matrix", probe, named)]
            elif isinstance(ms, list):
                out["matrices"] = [_check_matrix(m, f"matrix[{i}]", probe, named) for i, m in enumerate(ms, 1)]
            else:
                fail("matrix", f"expected a table ([matrix]) or an array of tables ([[matrix]]), got {type_name(ms)}")
            order.append("matrices")
    if not out["cases"] and not out["matrices"]:
        fail("", "no cases: add [[case]] tables or a [matrix]")
    return out


def _check_case_count(doc: dict) -> None:
    """Refuse a scenario of more than MAX_CASES cases, counted as [[case]] tables plus each matrix's product of
    axis lengths, before any value is checked or any case made (a 10^6 matrix would take minutes)."""
    cases = doc.get("case")
    total = len(cases) if isinstance(cases, list) else 0
    ms = doc.get("matrix")
    for m in ms if isinstance(ms, list) else [ms] if isinstance(ms, dict) else []:
        if isinstance(m, dict):
            lengths = [len(v) for k, v in m.items() if k not in MATRIX and isinstance(v, list) and v]
            total += math.prod(lengths) if lengths else 0
        if total > MAX_CASES:
            break
    if total > MAX_CASES:
        fail("", f"{total} cases (the [[case]] tables plus each matrix's product of axis lengths): more than "
                 f"the cap of {MAX_CASES} cases per scenario: split it into several scenarios")  # fmt: skip


def _check_defaults(raw: Any, named: dict) -> dict:
    if not isinstance(raw, dict):
        fail("defaults", f"expected a table, got {type_name(raw)}")
    fields = {k: f for k, f in BASE.items() if k != "params"}
    out = _check_case(
        {k: v for k, v in raw.items() if k not in PROBES},
        "defaults",
        fields,
        DEFAULT_PROBE,
        named,
        known=list(DEFAULTS),
    )
    params = {name: check_params(name, raw[name], key_path("defaults", name)) for name in PROBES if name in raw}
    if params:
        out["params"] = params
    return out


def _check_case(raw: Any, path: str, fields: dict, probe: str, named: dict, known: list | None = None) -> dict:
    """A case-shaped table (case, [matrix.base], [defaults]); params checked against its probe."""
    if not isinstance(raw, dict):
        fail(path, f"expected a table, got {type_name(raw)}")
    for key in raw:
        if key not in fields:
            unknown_key(path, key, known or list(fields))
    out = {}
    for key in ("label", "probe", "conditions", "requirements", "profile"):
        if key in raw:
            out[key] = check(fields[key], raw[key], key_path(path, key))
    if "require" in raw:
        if "requirements" in raw:
            fail(path, "'require' and 'requirements' are the same key: give one")
        out["requirements"] = check(fields["require"], raw["require"], key_path(path, "require"))
    given = "require" if "require" in raw else "requirements"
    if path != "defaults" and "requirements" in out:  # parsed here, once: one line naming the case, key and text
        out["requirements"] = [
            requirement(text, f"{key_path(path, given)}[{i}]") for i, text in enumerate(out["requirements"], 1)
        ]
    # [defaults]' expressions are parsed in each case they reach (plan.expand: "case N: requirement '...'")
    probe = out.get("probe", probe)
    if "params" in raw:
        out["params"] = check_params(probe, raw["params"], key_path(path, "params"))
    if "loads" in raw:
        out["loads"] = _check_loads(raw["loads"], key_path(path, "loads"), named)
    return out


def _check_matrix(raw: Any, path: str, probe: str, named: dict) -> dict:
    if not isinstance(raw, dict):
        fail(path, f"expected a table, got {type_name(raw)}")
    base = _check_case(raw.get("base", {}), key_path(path, "base"), BASE, probe, named)
    probe = base.get("probe", probe)
    fields = axes(probe)
    out = {"base": base, "axes": {}}
    if "label" in raw:
        out["label"] = check(MATRIX["label"], raw["label"], key_path(path, "label"))
    for key, values in raw.items():
        if key in MATRIX:
            continue
        if key not in fields:
            unknown_key(path, key, [*MATRIX, *fields])
        where = key_path(path, key)
        if not isinstance(values, list) or not values:
            got = "an empty array" if values == [] else type_name(values)
            fail(where, f"expected a non-empty array of values, e.g. {key} = [a, b], got {got}")
        checked = []
        for i, v in enumerate(values, 1):
            c = _check_axis_load(v, f"{where}[{i}]", named) if key == "load" else check(fields[key], v, f"{where}[{i}]")
            if c in checked:
                fail(f"{where}[{i}]", f"'{_shown(v)}' is listed twice")
            checked.append(c)
        out["axes"][key] = checked
    for a, b in PROBES[probe].exclusive:
        if a in out["axes"] and b in out["axes"]:
            fail(path, f"'{a}' and '{b}' exclude each other: vary one")
    if not out["axes"]:
        fail(path, 'no parameter to vary: give at least one array, e.g. interval = ["1ms", "10ms"]')
    return out


def _shown(v: Any) -> str:
    return "+".join(map(str, v)) if isinstance(v, list) else str(v)


def _check_axis_load(v: Any, path: str, named: dict) -> list[str]:
    """One value of the `load` axis -> list of load names ([] for idle)."""
    names = v if isinstance(v, list) else [v]
    if not names or not all(isinstance(n, str) for n in names):
        fail(path, f"expected a load name or an array of names, got {type_name(v)}")
    for n in names:
        _check_ref(n, path, named)
    return [n for n in names if n != IDLE]


def _check_ref(name: str, path: str, named: dict) -> None:
    if name != IDLE and name not in named and name not in LOAD_TYPES:
        known = [IDLE, *named, *LOAD_TYPES]
        fail(
            path,
            f"unknown load '{name}'{suggest(name, known)} (define [loads.{name}] or use one of {', '.join(known)})",
        )


def _check_loads(raw: Any, path: str, named: dict) -> list:
    """A `loads` array: names (checked against [loads]) and inline load tables, in order."""
    if not isinstance(raw, list):
        fail(path, f"expected an array of load names or load tables, got {type_name(raw)}")
    out: list[str | dict] = []
    for i, item in enumerate(raw, 1):
        where = f"{path}[{i}]"
        if isinstance(item, str):
            _check_ref(item, where, named)
            if item != IDLE:
                out.append(item)
        else:
            out.append(check_load_spec(item, where))
    return out


def _check_loadset(raw: Any, path: str) -> dict:
    if not isinstance(raw, dict):
        fail(path, f"expected tables [loads.NAME], got {type_name(raw)}")
    out = {}
    for name, spec in raw.items():
        where = key_path(path, name)
        if name == IDLE:
            fail(where, f"'{IDLE}' is reserved (no load)")
        check(Field("name", ""), name, where)
        out[name] = check_load_spec(spec, where)
    return out


def check_load_spec(spec: Any, path: str) -> dict:
    """A load table: a `type` and the load's own options, checked in full by rtqual.loadspec."""
    if not isinstance(spec, dict):
        fail(path, f'expected a load table such as {{type = "hackbench"}}, got {type_name(spec)}')
    kind = spec.get("type")
    if not isinstance(kind, str):
        fail(
            path,
            f"missing 'type' (one of {', '.join(LOAD_TYPES)})"
            if kind is None
            else f"type: expected a string, got {type_name(kind)}",
        )
    try:
        loadspec.check(spec)
    except RtqError as e:
        fail(path, str(e))
    return dict(spec)


def load_specs(names_or_specs: list, named: dict) -> tuple[list[str], list[dict]]:
    """Resolve a validated loads list -> (display names, load specs); a [loads.NAME] spec gets that
    name (the loads' `name` option) unless it gives its own."""
    names, specs = [], []
    for item in names_or_specs:
        if isinstance(item, str):
            names.append(item)
            specs.append({"name": item, **named[item]} if item in named else {"type": item})
        else:
            names.append(item.get("name") or item["type"])
            specs.append(dict(item))
    return names, specs


def merge(lower: dict, upper: dict, probe: str) -> dict:
    """Case-shaped `upper` over `lower`: params and conditions key by key, loads replaced."""
    out = {**lower, **{k: v for k, v in upper.items() if k not in ("params", "conditions")}}
    out["params"] = overlay(lower.get("params", {}), upper.get("params", {}), probe)
    out["conditions"] = {**lower.get("conditions", {}), **upper.get("conditions", {})}
    return out

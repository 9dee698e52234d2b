"""JSON Schema (draft 2020-12) of scenario files, generated from the key tables of model and probes.

For editors (taplo / Even Better TOML: `#:schema ../docs/scenario.schema.json` on line 1). rtqual's
own check (model.validate) is stricter: it knows which probe a case uses and which loads exist.
Regenerate docs/scenario.schema.json with: python -m rtqual.scenario.schema > docs/scenario.schema.json
"""

from __future__ import annotations

import json
from typing import Any

from rtqual.fields import CPULIST_PATTERN, DURATION_PATTERN, FREQUENCY_PATTERN, MAX_CPU, NAME_PATTERN, Field
from rtqual.probes.catalog import PROBES, fields_of
from rtqual.scenario.model import AXIS_LOAD, BASE, CASE, CONDITIONS, LOAD_TYPES, MATRIX, TOP

_REFS = {id(CASE): "case", id(BASE): "base", id(CONDITIONS): "conditions"}


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


def _table(fields: dict) -> dict:
    return {
        "type": "object",
        "properties": {k: field_schema(f) for k, f in fields.items()},
        "additionalProperties": False,
    }


def _value(f: Field) -> dict:
    """The schema of one value of kind f.kind (without description)."""
    k = f.kind
    if k == "table":
        return _ref(_REFS[id(f.fields)]) if id(f.fields) in _REFS else _table(f.fields or {})
    if k == "params":
        return _table(f.fields) if f.fields else _ref("params")
    simple: dict[str, dict] = {
        "str": {"type": "string"},
        "strlist": {"type": "array", "items": {"type": "string"}},
        "bool": {"type": "boolean"},
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "enum": {"enum": list(f.choices)},
        "duration": {"type": "string", "pattern": DURATION_PATTERN},
        "frequency": {"type": "string", "pattern": FREQUENCY_PATTERN},
        "cpulist": {
            "anyOf": [
                {"type": "string", "pattern": CPULIST_PATTERN},
                {"type": "integer", "minimum": 0, "maximum": MAX_CPU},
                {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0, "maximum": MAX_CPU}},
            ]
        },
        "loads": {"type": "array", "items": {"anyOf": [{"type": "string"}, _ref("load")]}},
        "load": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "loadset": {
            "type": "object",
            "propertyNames": {"pattern": NAME_PATTERN, "not": {"const": "idle"}},
            "additionalProperties": _ref("load"),
        },
        "cases": {"type": "array", "items": _ref("case")},
        "matrix": {"anyOf": [_ref("matrix"), {"type": "array", "items": _ref("matrix")}]},
    }
    if k in simple:
        return simple[k]
    if k in ("int", "number"):
        out: dict[str, Any] = {"type": "integer" if k == "int" else "number"}
        if f.lo is not None:
            out["minimum"] = f.lo
        if f.hi is not None:
            out["maximum"] = f.hi
        return out
    raise AssertionError(f"no schema for kind {k}")


def field_schema(f: Field) -> dict:
    out = {"description": f.help, **_value(f)}
    if f.default is not None and f.kind != "table":
        out["default"] = f.default
    return out


def json_schema() -> dict:
    """The whole schema as a dict (stable order, so the committed file can be compared)."""
    values: dict[str, list[dict]] = {}  # a key several probes share may differ per probe: any of them
    helps: dict[str, str] = {}
    for f_name, f in [(k, f) for p in PROBES.values() for k, f in fields_of(p).items()] + [
        ("load", AXIS_LOAD),
        *CONDITIONS.items(),
    ]:
        helps.setdefault(f_name, f.help)
        if _value(f) not in values.setdefault(f_name, []):
            values[f_name].append(_value(f))

    def one_of(k: str) -> dict:
        return values[k][0] if len(values[k]) == 1 else {"anyOf": values[k]}

    params_keys = [k for p in PROBES.values() for k in fields_of(p)]
    params = {
        "type": "object",
        "properties": {k: {"description": helps[k], **one_of(k)} for k in params_keys},
        "additionalProperties": False,
    }
    matrix = {
        "type": "object",
        "properties": {
            **{k: field_schema(f) for k, f in MATRIX.items()},
            **{
                k: {"description": f"values of {k}: " + helps[k], "type": "array", "minItems": 1, "items": one_of(k)}
                for k in values
            },
        },
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rtqual scenario",
        "description": "rtqual scenario file (docs/scenario.md). Durations need a unit (500us, 1ms, 10m); "
        "frequencies too (600MHz, 1.5GHz).",
        **_table(TOP),
        "$defs": {
            "case": _table(CASE),
            "base": _table(BASE),
            "conditions": _table(CONDITIONS),
            "params": {
                **params,
                "description": "probe parameters (the union of every probe's; "
                "rtqual checks them against the case's probe)",
            },
            "load": {
                "type": "object",
                "description": "a load: its type and the load's own options",
                "required": ["type"],
                "properties": {"type": {"enum": list(LOAD_TYPES)}},
            },
            "matrix": matrix,
        },
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")

"""Declarative key tables: one Field per key of a probe, a load or a scenario file; checked here,
documented and turned into JSON Schema elsewhere (rtqual.scenario.schema).

A table is a plain dict {key: Field}. check() turns a TOML value into its normalized form (durations
in integer ns, frequencies in kHz, CPU lists as sorted lists) or raises RtqError("<path>: <what>").
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from rtqual.errors import RtqError
from rtqual.units import format_cpulist, format_duration, parse_cpulist, parse_duration_ns

DURATION_PATTERN = r"^\s*(\d+(\.\d*)?|\.\d+)\s*(ns|us|ms|s|m|h|d)\s*$"
FREQUENCY_PATTERN = r"^\s*(\d+(\.\d*)?|\.\d+)\s*([kKmMgG][hH][zZ])\s*$"
CPULIST_PATTERN = r"^\s*\d+(-\d+(:\d+)?)?(\s*,\s*\d+(-\d+(:\d+)?)?)*\s*$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
MAX_CPU = 8191
_KHZ = {"khz": 1, "mhz": 1_000, "ghz": 1_000_000}


@dataclass(frozen=True)
class Field:
    """One key of a probe, a load or a scenario table: kind (see check()), help for docs and schema,
    limits, default as written in TOML; the one option model of rtqual (loads: rtqual.loadspec).

    Kinds: str, name, bool, enum (choices), int, number (lo..hi), duration, frequency, cpulist,
    strlist (array of strings), argv (a command line: array of strings or a string split like a
    shell line), table (fields). required: the key must be given (loads' `command.argv`).
    """

    kind: str
    help: str
    choices: tuple = ()
    lo: int | float | None = None
    hi: int | float | None = None
    default: Any = None
    fields: dict | None = None  # kind "table": its keys
    required: bool = False


def key_path(path: str, key: Any) -> str:
    """'case[2].params' + 'interval' -> 'case[2].params.interval' (odd keys quoted)."""
    k = str(key)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", k):
        k = '"' + k.replace('"', '\\"') + '"'
    return f"{path}.{k}" if path else k


def fail(path: str, message: str) -> NoReturn:
    raise RtqError(f"{path}: {message}" if path else message)


def type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return names.get(type(value), "a date/time")


def suggest(word: str, choices: Iterable[Any]) -> str:
    """' (did you mean 'interval'?)' or '': a choice the word begins (an abbreviation) first, else the closest."""
    names = [str(c) for c in choices]
    close = [c for c in names if len(str(word)) >= 3 and c.startswith(str(word))][:1]
    close = close or difflib.get_close_matches(str(word), names, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_key(path: str, key: Any, known: list) -> NoReturn:
    fail(path, f"unknown key '{key}'{suggest(key, known)} (known: {', '.join(known)})")


def check_table(fields: dict, raw: Any, path: str) -> dict:
    """Check every key of a TOML table against its Field; unknown keys are errors."""
    if not isinstance(raw, dict):
        fail(path, f"expected a table, got {type_name(raw)}")
    out = {}
    for key, value in raw.items():
        if key not in fields:
            unknown_key(path, key, list(fields))
        out[key] = check(fields[key], value, key_path(path, key))
    return out


def check(f: Field, value: Any, path: str) -> Any:
    """One value of kind f.kind, normalized; RtqError with the key path otherwise."""
    kind = f.kind
    if kind == "table":
        return check_table(f.fields or {}, value, path)
    if kind == "str":
        if not isinstance(value, str):
            fail(path, f"expected a string, got {type_name(value)}")
        return value
    if kind == "name":
        if not isinstance(value, str) or not re.fullmatch(NAME_PATTERN, value):
            fail(path, f"'{value}' is not a name (letters, digits, '_', '-', '.')")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            fail(path, f"expected true or false, got {type_name(value)}")
        return value
    if kind == "enum":
        if not isinstance(value, str):
            fail(path, f"expected one of {', '.join(f.choices)}, got {type_name(value)}")
        if value not in f.choices:
            fail(path, f"'{value}' is not one of {', '.join(f.choices)}{suggest(value, f.choices)}")
        return value
    if kind in ("int", "number"):
        ok = isinstance(value, int) or (kind == "number" and isinstance(value, float) and math.isfinite(value))
        if isinstance(value, bool) or not ok:
            fail(path, f"expected {'an integer' if kind == 'int' else 'a number'}, got {type_name(value)}")
        _range(f, value, path, str)
        return value
    if kind == "duration":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            fail(path, f"expected a duration such as '1ms', got {type_name(value)}")
        ns = parse_duration_ns(str(value), path)
        _range(f, ns, path, format_duration)
        return ns
    if kind == "frequency":
        return _frequency(f, value, path)
    if kind == "cpulist":
        return _cpulist(value, path)
    if kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            fail(path, f"expected an array of strings, got {type_name(value)}")
        return list(value)
    if kind == "argv":
        return _argv(value, path)
    raise AssertionError(f"unknown field kind {kind}")


def _range(f: Field, v: int | float, path: str, fmt: Callable[[Any], str]) -> None:
    if (f.lo is not None and v < f.lo) or (f.hi is not None and v > f.hi):
        lo = fmt(f.lo) if f.lo is not None else None
        hi = fmt(f.hi) if f.hi is not None else None
        rng = (
            f"between {lo} and {hi}"
            if lo is not None and hi is not None
            else f"at least {lo}"
            if lo is not None
            else f"at most {hi}"
        )
        fail(path, f"must be {rng} (got {fmt(v) if fmt is not str else v})")


def _frequency(f: Field, value: Any, path: str) -> int:
    m = re.match(FREQUENCY_PATTERN, value) if isinstance(value, str) else None
    if not m:
        shown = value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else type_name(value)
        fail(path, f"'{shown}' is not a frequency (use a unit: 600MHz, 1.5GHz, 600000kHz)")
    number, _, unit = m.groups()
    whole, _, frac = number.partition(".")
    scale = _KHZ[unit.lower()]
    khz = int(whole or 0) * scale
    if frac:
        num = int(frac) * scale
        if num % 10 ** len(frac):
            fail(path, f"'{value}' is not a whole number of kHz")
        khz += num // 10 ** len(frac)
    _range(f, khz, path, format_khz)
    return khz


def _cpulist(value: Any, path: str) -> list[int]:
    if isinstance(value, list):
        if not value or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= MAX_CPU for c in value):
            fail(path, f'expected CPU numbers 0-{MAX_CPU}, e.g. [0, 1] or "0-3,8"')
        return sorted(set(value))
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        fail(path, f'expected a CPU list such as "0-3,8", got {type_name(value)}')
    if not re.match(CPULIST_PATTERN, value) or any(int(n) > MAX_CPU for n in re.findall(r"\d+", value)):
        fail(path, f"'{value}' is not a CPU list (e.g. 0-3,8 or 0-7:2; CPUs 0-{MAX_CPU})")
    try:
        return parse_cpulist(value.replace(" ", ""), check_online=False)
    except RtqError as e:
        fail(path, str(e).removeprefix("--cpus: "))


def _argv(value: Any, path: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = shlex.split(value)
        except ValueError as e:
            fail(path, f"cannot be split like a shell line: {e}")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        fail(path, f"expected a non-empty command line (an array of strings or a string), got {type_name(value)}")
    return list(value)


def format_khz(khz: int) -> str:
    """600000 -> '600MHz', 1500000 -> '1500MHz', 1234 -> '1234kHz'."""
    return f"{khz // 1000}MHz" if khz % 1000 == 0 else f"{khz}kHz"


def format_value(f: Field, v: Any) -> str:
    """A normalized value the way plans and labels show it."""
    if f.kind == "duration":
        return format_duration(v)
    if f.kind == "frequency":
        return format_khz(v)
    if f.kind == "cpulist":
        return format_cpulist(v)
    if f.kind == "table":
        fields = f.fields or {}
        return " ".join(f"{k}:{format_value(fields[k], x)}" for k, x in v.items())
    return str(v).lower() if isinstance(v, bool) else str(v)


def defaults_of(fields: dict) -> dict:
    """The normalized defaults of a table (keys without a default left out)."""
    return {k: check(f, f.default, k) for k, f in fields.items() if f.default is not None}

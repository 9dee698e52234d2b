"""`--load NAME[,key=value...]` on the command line: the same load names and options as scenario files.

Values are converted by the load's own option table (integers, true/false, CPU lists, command lines split
like a shell line); a part without '=' is a flag of the load (`pi_stress,rr`) or continues the value
before it (`cpus=0,2` keeps its comma).
"""

from __future__ import annotations

import shlex

from rtqual.errors import RtqError
from rtqual.fields import suggest
from rtqual.measure.loads import LOADS, make_load

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def parse_load(text: str) -> dict:
    """'hackbench,groups=4' -> {"type": "hackbench", "groups": 4}, checked like a scenario's load table;
    RtqError "--load hackbench: groups: expected an integer, got 'x'" otherwise."""
    kind, _, rest = text.partition(",")
    kind = kind.strip()
    where = f"--load {kind or text}"
    if kind not in LOADS:
        raise RtqError(f"{where}: unknown load{suggest(kind, LOADS)} (one of: {', '.join(LOADS)})")
    options = LOADS[kind].option_fields()
    raw: dict[str, str | bool] = {}
    last: str | None = None
    for part in rest.split(",") if rest else []:
        key, eq, value = part.partition("=")
        key = key.strip()
        if eq:
            if key not in options:
                raise RtqError(f"{where}: unknown option '{key}' (known: {', '.join(sorted(options))})")
            raw[key], last = value, key
        elif key in options and options[key].kind == "bool":
            raw[key], last = True, None
        elif last is not None:
            raw[last] = f"{raw[last]},{part}"
        else:
            raise RtqError(f"{where}: '{part}' is not key=value (options: {', '.join(sorted(options))})")
    spec: dict = {"type": kind}
    for key, given in raw.items():
        spec[key] = _convert(options[key].kind, given, f"{where}: {key}")
    try:
        make_load(dict(spec))
    except RtqError as e:
        msg = str(e).removeprefix(f"load '{kind}': ")
        raise RtqError(f"{where}: {msg}", e.exit_code) from None
    return spec


def _convert(kind: str, value: str | bool, where: str) -> object:
    """One option value from its text, by the option's kind."""
    if isinstance(value, bool):
        return value
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            raise RtqError(f"{where}: expected an integer, got '{value}'") from None
    if kind == "bool":
        if value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        raise RtqError(f"{where}: expected true or false, got '{value}'")
    if kind == "strlist":
        try:
            return shlex.split(value)
        except ValueError as e:
            raise RtqError(f"{where}: cannot be split like a shell line: {e}") from None
    return value


def load_name(spec: dict) -> str:
    """The name a load shows in labels and tables."""
    return str(spec.get("name") or spec["type"])

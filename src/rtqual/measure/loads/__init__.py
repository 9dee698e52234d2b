"""Background loads that stress the host while a probe measures (hackbench, pi_stress, stress-ng, ...).

Adding a load = one module with a Load subclass (its OPTIONS: {name: Field}) + one line in LOADS;
then `python -m rtqual.measure.loads > docs/loads.md`.
"""

import html
import json

from rtqual.errors import RtqError
from rtqual.measure.loads.base import COMMON_OPTIONS, Load, LoadSet
from rtqual.measure.loads.command import Command
from rtqual.measure.loads.cpu_hog import CpuHog
from rtqual.measure.loads.hackbench import Hackbench
from rtqual.measure.loads.inject import Inject
from rtqual.measure.loads.network import Network
from rtqual.measure.loads.pi_stress import PiStress
from rtqual.measure.loads.stress_ng import StressNg

LOADS: dict[str, type[Load]] = {
    "hackbench": Hackbench,
    "pi_stress": PiStress,
    "stress-ng": StressNg,
    "cpu-hog": CpuHog,
    "command": Command,
    "network": Network,
    "inject": Inject,
}

__all__ = ["COMMON_OPTIONS", "LOADS", "Load", "LoadSet", "make_load", "options_markdown"]


def make_load(spec: dict) -> Load:
    """A load from its spec: {"type": "hackbench", "groups": 4, "cpus": "1", ...}; keys and types checked."""
    if not isinstance(spec, dict):
        raise RtqError(f"load: expected a table of options, got {spec!r}")
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind not in LOADS:
        what = "missing 'type'" if kind is None else f"unknown type '{kind}'"
        raise RtqError(f"load: {what} (one of: {', '.join(LOADS)})")
    return LOADS[kind](**spec)


def options_markdown() -> str:
    """docs/loads.md: every load's options from their Field tables (python -m rtqual.measure.loads > docs/loads.md)."""

    def table(fields: dict) -> list[str]:
        rows = ["| option | kind | default | help |", "| --- | --- | --- | --- |"]
        for name, f in fields.items():
            kind = f"{f.kind} ({', '.join(f.choices)})" if f.choices else f.kind
            if f.lo is not None or f.hi is not None:
                kind += f" {'' if f.lo is None else f.lo}..{'' if f.hi is None else f.hi}"
            default = "required" if f.required else "" if f.default is None else f"`{json.dumps(f.default)}`"
            rows.append(f"| `{name}` | {kind} | {default} | {f.help} |")
        return rows

    out = [
        "# Loads",
        "",
        "Generated from the option tables in `src/rtqual/measure/loads` (`python -m rtqual.measure.loads >",
        "docs/loads.md`; a test fails when it is stale). A load table in a scenario file (`[loads.NAME]` or inline)",
        "has a `type` and these options; an empty default means the tool's own.",
        "",
        "## Every load",
        "",
        *table(COMMON_OPTIONS),
    ]
    for kind, cls in LOADS.items():
        doc = html.escape((cls.__doc__ or "").strip().splitlines()[0], quote=False)
        out += ["", f"## `{kind}`", "", doc]
        if cls.OPTIONS:
            out += ["", *table(cls.OPTIONS)]
    return "\n".join(out) + "\n"

"""The native probe table (a copy of `rtqual-probe --list`, `rtqual-ca --list`, `rtqual-pva --list`) and each
probe's optional Python module.

Every probe comes from the table: its options and defaults (the C option table), its binary, the keys of its
automatic case label, the service a case needs around it and the report sections it shows. A probe may add a
module rtqual/probes/<name>.py (dashes as underscores) with any of: HIDDEN (kept out of help and scenario
files), SCENARIO_DEFAULT (the probe of a scenario case that names none), build(p, defaults) (its options
and case params), label(case_params), time_ns(case_params), slots(case_params) (threads taking one sample
per period each, default 1: rtqual.answers.planning), scale(p, factor), scenario_params(case) (its params
in the one-case scenario.toml of `rtqual run`), SELFTEST (how `rtqual selftest` measures it:
rtqual.selftest.run.setup). A new probe needs none: one C file and one line in the C list, then
scripts/update-probe-table.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from pathlib import Path
from types import ModuleType

NATIVE_TABLE = Path(__file__).resolve().parent / "native_probes.json"
PYTHON_PROBES = ("timerlat",)  # probes whose process is Python: their module's ENTRY is their table line


@cache
def table() -> tuple[dict, ...]:
    """Every entry of the committed native table, in its order (empty if the file is missing or broken),
    then the entries of the Python probes."""
    try:
        native = tuple(json.loads(NATIVE_TABLE.read_text()))
    except (OSError, ValueError):
        native = ()
    return native + tuple(hook(name, "ENTRY") for name in PYTHON_PROBES)


def entry(name: str) -> dict | None:
    """The table entry of a native probe, or None."""
    return next((e for e in table() if e["name"] == name), None)


@cache
def hooks(name: str) -> ModuleType | None:
    """The probe's optional module rtqual.probes.<name>, or None."""
    try:
        return importlib.import_module(f"rtqual.probes.{name.replace('-', '_')}")
    except ModuleNotFoundError as e:
        if e.name != f"rtqual.probes.{name.replace('-', '_')}":
            raise
        return None


def hook(name: str, attr: str, default=None):
    """One attribute of a probe's optional module, or default."""
    return getattr(hooks(name), attr, default)


def binary_of(name: str) -> str:
    """The executable that runs a native probe (the table's "binary"; rtqual-probe if unknown)."""
    return (entry(name) or {}).get("binary") or "rtqual-probe"


def has_section(name: str, section: str) -> bool:
    """Whether cases of a native probe show a report section ("stages", "baseline")."""
    return section in ((entry(name) or {}).get("sections") or ())

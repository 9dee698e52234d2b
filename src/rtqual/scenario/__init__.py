"""Scenario files: validated model (model), probe parameter tables (probes), plans (plan), JSON Schema (schema).

sc = scenario.load("scenarios/quick.toml")      # RtqError: one line with file and key path
cases = scenario.expand(sc, scale=0.1)          # runner-ready case dicts
print(scenario.plan_text(cases, scenario.plan_title(sc)))
"""

from rtqual.probes.catalog import PROBES, check_params, probe_case
from rtqual.scenario.model import load, loads, validate
from rtqual.scenario.plan import expand, plan_json, plan_text, plan_title, total_ns

__all__ = [
    "load",
    "loads",
    "validate",
    "expand",
    "plan_json",
    "plan_text",
    "plan_title",
    "total_ns",
    "PROBES",
    "check_params",
    "probe_case",
]

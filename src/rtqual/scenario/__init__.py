"""Scenario files: validated model (model), probe parameter tables (probes), plans (plan), JSON Schema (schema).

sc = scenario.load("scenarios/quick.toml")      # RtqError: one line with file and key path
cases = scenario.expand(sc, scale=0.1)          # runner-ready case dicts
print(scenario.plan_text(cases, scenario.plan_title(sc)))
"""

from rtqual.answers.requirements import gather
from rtqual.errors import RtqError
from rtqual.probes.catalog import PROBES, check_params, probe_case
from rtqual.scenario.model import load, loads, validate
from rtqual.scenario.plan import expand, plan_json, plan_text, plan_title, total_ns


def load_scaled(
    path: str, scale: float | None, require: list[str] | None = None, profile: str | None = None
) -> tuple[dict, list[dict]]:
    """The scenario file of `rtqual run`/`plan`, validated, and its cases expanded at --scale (> 0); the
    command line's --profile and --require (checked first) judged on every case after its own."""
    if scale is not None and not 0 < scale < float("inf"):
        raise RtqError(f"--scale: must be greater than 0 (got {scale})")
    given = gather(require, profile)
    sc = load(path)
    return sc, expand(sc, scale=scale, require=given)


__all__ = [
    "load",
    "load_scaled",
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

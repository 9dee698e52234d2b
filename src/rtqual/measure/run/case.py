"""The typed case that flows plan -> run -> result: what a plan case says (plan.json keeps its dict form)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rtqual.answers.requirements import Requirement

PLAN_KEYS = (
    "id",
    "label",
    "probe",
    "run_as",
    "args",
    "params",
    "requirements",
    "require",
    "loads",
    "conditions",
    "service",
)


@dataclass(frozen=True)
class Case:
    """One measurement: the native probe that measures (probe) and the name the user gave (run_as, e.g.
    "ioc" for iocresp), its options, params and requirements, loads, conditions and the service spec a
    case needs around its probe. `extra` keeps the plan's other keys (load_names, scale, estimate_ns)."""

    id: str
    label: str
    probe: str
    run_as: str
    args: list[str]
    params: dict
    requirements: dict
    require: list[Requirement] = field(default_factory=list)  # parsed when the plan was made (docs/requirements.md)
    loads: list[dict] = field(default_factory=list)
    conditions: dict = field(default_factory=dict)
    service: dict | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_plan(cls, d: dict) -> Case:
        """A case from its plan dict (scenario.plan, scenario.probes.probe_case)."""
        return cls(
            id=d["id"],
            label=d["label"],
            probe=d["probe"],
            run_as=d.get("run_as") or d["probe"],
            args=list(d["args"]),
            params=dict(d.get("params") or {}),
            requirements=dict(d.get("requirements") or {}),
            require=list(d.get("require") or []),
            loads=list(d.get("loads") or []),
            conditions=dict(d.get("conditions") or {}),
            service=d.get("service"),
            extra={k: v for k, v in d.items() if k not in PLAN_KEYS},
        )

    def with_args(self, args: list[str]) -> Case:
        """The same case with other probe options (the service's filled in, --raw added)."""
        return replace(self, args=list(args))

    def view(self) -> dict[str, Any]:
        """The plan dict of the case (displays and statistics read it; params.json is a part of it)."""
        out = {k: getattr(self, k) for k in PLAN_KEYS if k != "service"}
        if self.service:
            out["service"] = self.service
        return {**out, **self.extra}

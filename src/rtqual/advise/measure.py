"""`rtqual advise --measure`: each fix that can be applied at run time, measured before it is recommended.

The fixes' writes (a finding's knobs) become the "tunables" condition of plan cases (an IRQ thread's priority the
"irq_threads" one), so the one run
(rtqual.measure.run) does everything else: the bundle, its change journal (each write saved BEFORE it is made,
put back after its case, in `finally`, and by `rtqual restore` after a kill), the signal guard, one probe session
per case. A round measures the baseline and every fix once, in an order that alternates from round to round
(so a drift of the host does not favour one arm); the bundle holds every round as a case. effects() compares
each fix's rounds with the baseline's (rtqual.answers.advice.advise.effects, which the report uses too), the rounds
named by each plan case's "advise" (arm and round), never read back from the case ids.
"""

from __future__ import annotations

import copy
from pathlib import Path

from rtqual.answers.advice.advise import BASELINE, effects, measurable
from rtqual.results.bundle import Model


def arms_of_round(fix_ids: list[str], round_no: int) -> list[str]:
    """The order of a round: baseline first then the fixes, reversed every other round."""
    arms = [BASELINE, *fix_ids]
    return arms if round_no % 2 == 0 else arms[::-1]


def plan(base_case: dict, findings: list[dict], rounds: int, root: str = "/") -> list[dict]:
    """The cases of the measurement: `rounds` rounds of the baseline and each fix (base_case with the fix's
    writes, below root, as its "tunables" condition, its IRQ threads' priority as "irq_threads"), ids NNN-rR-ARM,
    labels naming round and arm, "advise" saying which."""
    fixes = {f["id"]: f for f in measurable(findings)}
    cases, n = [], 0
    for r in range(rounds):
        for arm in arms_of_round(list(fixes), r):
            n += 1
            case = copy.deepcopy(base_case)
            case["id"] = f"{n:03d}-r{r + 1}-{arm}"
            case["label"] = f"{base_case['label']} · round {r + 1} · {arm if arm == BASELINE else 'with ' + arm}"
            case["advise"] = {"arm": arm, "round": r + 1}
            if arm != BASELINE:
                conditions = case.setdefault("conditions", {})
                knobs, condition = fixes[arm]["knobs"], f"advise:{arm}"
                conditions["tunables"] = [
                    {"knob": str(Path(root) / k["knob"].lstrip("/")), "value": k["value"], "condition": condition}
                    for k in knobs
                    if "knob" in k
                ]
                conditions["irq_threads"] = [
                    {"irq": k["irq"], "priority": k["priority"], "condition": condition} for k in knobs if "irq" in k
                ]
            cases.append(case)
    return cases


def measure(
    base_case: dict,
    findings: list[dict],
    rounds: int,
    argv: list[str],
    output: str | None = None,
    quiet: bool = False,
) -> tuple[Model, list[dict]]:
    """Run `rounds` rounds of the baseline and each run-time fix into one bundle (run_plan)."""
    return run_plan(plan(base_case, findings, rounds), findings, argv, output, quiet)


def run_plan(
    cases: list[dict], findings: list[dict], argv: list[str], output: str | None = None, quiet: bool = False
) -> tuple[Model, list[dict]]:
    """Run planned rounds into one bundle (every write journaled before it is made and restored after its case,
    at the run's end, or by `rtqual restore`); the bundle's model and the measured effects. The findings are
    kept in the bundle's plan.json ("advise"), so a report computes the same effects from the cases."""
    from rtqual.commands.run import measure_and_publish

    the_plan = {"schema_version": 1, "cases": cases, "advise": {"findings": findings}}
    model = measure_and_publish(cases, argv, "off", output=output, quiet=quiet, plan=the_plan)
    return model, effects(the_plan, list(model.cases), findings)

"""The step logic of a capacity sweep (pure): which load comes next, when to stop, and the answer.

A sweep raises one load dimension from `start` by `factor` each step (geometric), never above `ceiling`, until a
step does not carry the load; then it bisects (geometric midpoints) between the last step that carried and the
first that did not, until the two are within `resolution` of each other (or next integers). The load it would
then answer it carries is measured again (`confirm` more times): a load carried is one that met every requirement
each time it was measured, so one lucky step on a noisy host does not set the knee; a repeat that breaks makes that
load the break and the bisection goes on below it. Each step's outcome is one of:

    pass      every requirement met with the load held: the host carries this load
    fail      a requirement failed, a queue overflowed or the step ended in error: the host does not carry it
    not held  the load itself fell short (its own collect() says so): inconclusive, and not carried either
    stopped   interrupted, or not judgeable (degraded): the sweep stops here, every finished step kept

    r = Range(start=100, ceiling=10_000, factor=2.0)
    steps = []
    while (v := next_value(r, steps)) is not None:
        steps.append(Step(v, *measure(v)))      # (outcome, cause)
    answer(steps, r)                             # {"carries", "breaks_at", "cause", "stopped"}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PASS, FAIL, NOT_HELD, STOPPED = "pass", "fail", "not held", "stopped"
OUTCOMES = (PASS, FAIL, NOT_HELD, STOPPED)
BROKE = (FAIL, NOT_HELD)  # a step that did not carry its load
MAX_STEPS = 24  # a sweep that has not settled after this many steps stops (a bound, never reached by sane ranges)


@dataclass(frozen=True)
class Range:
    """start..ceiling of the swept load, the factor between climbing steps (> 1), the bisection's stop (hi/lo
    within 1 + resolution), and whether the load is a whole number (records, clients, Hz)."""

    start: float
    ceiling: float
    factor: float = 2.0
    resolution: float = 0.1
    integer: bool = True
    max_steps: int = MAX_STEPS
    confirm: int = 1  # how many more times the load answered as carried is measured

    def problem(self) -> str | None:
        """Why the range cannot be swept (one line), or None."""
        if self.start <= 0:
            return f"start {self.start:g} must be above 0"
        if self.ceiling < self.start:
            return f"ceiling {self.ceiling:g} is below the start {self.start:g}"
        if self.factor <= 1:
            return f"factor {self.factor:g} must be above 1"
        if self.resolution <= 0:
            return f"resolution {self.resolution:g} must be above 0"
        if not 0 <= self.confirm <= 5:
            return f"confirm {self.confirm} must be 0 to 5"
        return None


@dataclass(frozen=True)
class Step:
    value: float
    outcome: str
    cause: str = ""


def _bounds(steps: Sequence[Step]) -> tuple[float | None, float | None]:
    """(the highest load carried below the lowest that broke, the lowest that broke); None where none. A load
    measured more than once broke if any of its steps broke."""
    broke = min((s.value for s in steps if s.outcome in BROKE), default=None)
    carried = [s.value for s in steps if s.outcome == PASS and (broke is None or s.value < broke)]
    return max(carried, default=None), broke


def next_value(r: Range, steps: Sequence[Step]) -> float | None:
    """The load of the next step, or None when the sweep is done: stopped, the start broke, the ceiling carried,
    the break found within the resolution (each after the carried load's confirmation), or max_steps taken."""
    if not steps:
        return r.start
    if any(s.outcome == STOPPED for s in steps) or len(steps) >= r.max_steps:
        return None
    lo, hi = _bounds(steps)
    if lo is None:
        return None  # the first step broke: nothing below the start is swept
    if hi is None and lo < r.ceiling:
        up = min(lo * r.factor, r.ceiling)
        return float(max(math.ceil(up), int(lo) + 1)) if r.integer else up
    if hi is not None and hi > lo * (1 + r.resolution) and not (r.integer and hi - lo <= 1):
        mid = math.sqrt(lo * hi)
        if r.integer:
            mid = float(min(max(round(mid), int(lo) + 1), int(hi) - 1))
        if mid not in {s.value for s in steps}:
            return mid
    return lo if confirmations(steps, lo) < r.confirm else None


def confirmations(steps: Sequence[Step], value: float | None) -> int:
    """How many times a load met every requirement beyond its first."""
    return max(0, sum(1 for s in steps if s.value == value and s.outcome == PASS) - 1)


def answer(steps: Sequence[Step], r: Range) -> dict:
    """What the sweep found: carries (the highest load that met every requirement below the lowest that broke;
    None if none did), breaks_at (the lowest that broke; None if none), cause (why it broke, or why the sweep
    ended without a break) and stopped (the sweep was cut before its end)."""
    lo, hi = _bounds(steps)
    stopped = next((s for s in steps if s.outcome == STOPPED), None)
    if hi is not None:
        cause = next(s.cause for s in steps if s.value == hi and s.outcome in BROKE)
    elif stopped is not None:
        cause = f"not found: the sweep stopped at {fmt(stopped.value)} ({stopped.cause})"
    elif lo is not None and lo >= r.ceiling:
        cause = f"not found: carried the ceiling {fmt(r.ceiling)}"
    elif len(steps) >= r.max_steps:
        cause = f"not found: {len(steps)} steps taken (the most a sweep takes)"
    else:
        cause = "not found: no step finished"
    times = 1 + confirmations(steps, lo) if lo is not None else 0
    return {"carries": lo, "breaks_at": hi, "cause": cause, "stopped": stopped is not None, "carried_times": times}


def fmt(v: float | None) -> str:
    """A load as written in the answer: whole numbers without a decimal point."""
    if v is None:
        return "-"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.3g}"


def sentence(ans: dict, unit: str) -> str:
    """'carries up to 3,200 records (the last step that met every requirement); breaks at 4,525 records
    because ...' (or what was found instead)."""
    u = f" {unit}" if unit else ""
    if ans["carries"] is None and ans["breaks_at"] is not None:
        head = f"carries none of the swept range: breaks at its start, {fmt(ans['breaks_at'])}{u}"
        return f"{head}, because {ans['cause']}"
    times = ans.get("carried_times") or 1
    again = f", each of the {times} times it was measured" if times > 1 else ""
    carried = f"carries up to {fmt(ans['carries'])}{u} (the last step that met every requirement{again})"
    if ans["carries"] is None:
        return f"nothing carried: {ans['cause']}"
    if ans["breaks_at"] is None:
        return f"{carried}; the break was {ans['cause']}"
    return f"{carried}; breaks at {fmt(ans['breaks_at'])}{u} because {ans['cause']}"

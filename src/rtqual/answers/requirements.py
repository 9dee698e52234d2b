"""Requirements and their verdicts: `--require EXPR`, `requirements = [...]`, `--profile NAME`.

Grammar (docs/requirements.md):
    STAT OP DURATION        STAT: min p50 mean p99 p99.9 p99.99 p99.999 max stddev
    over(DURATION) OP PCT   share of samples above DURATION, in percent ("0.1%" or "0.1")
    overruns OP N           missed periods
    count OP N              samples measured
    return(PERIOD) OP DURATION  the latency exceeded once per PERIOD (extreme-value fit, answers/evidence/tail.py)
    OP: <= < >= > ==

Every function here is pure: a requirement and a case's statistics (and histogram) in, a verdict out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rtqual.answers.evidence import tail
from rtqual.errors import RtqError
from rtqual.results.hist import Histogram, needed_samples
from rtqual.units import format_ns, parse_duration_ns

# STAT -> (stats key, percentile in parts per million or None)
STATS = {
    "min": ("min_ns", None),
    "p50": ("p50_ns", 500_000),
    "mean": ("mean_ns", None),
    "p99": ("p99_ns", 990_000),
    "p99.9": ("p999_ns", 999_000),
    "p99.99": ("p9999_ns", 999_900),
    "p99.999": ("p99999_ns", 999_990),
    "max": ("max_ns", None),
    "stddev": ("stddev_ns", None),
}
COUNTS = ("overruns", "count")
OPS = {
    "<=": lambda v, lim: v <= lim,
    "<": lambda v, lim: v < lim,
    ">=": lambda v, lim: v >= lim,
    ">": lambda v, lim: v > lim,
    "==": lambda v, lim: v == lim,
}
_EXPR = re.compile(
    r"^\s*(?P<lhs>over\s*\(\s*(?P<over>[^)]*)\)|return\s*\(\s*(?P<period>[^)]*)\)|[a-z][a-z0-9.]*)\s*(?P<op><=|>=|==|<|>)\s*(?P<rhs>\S+)\s*$"
)
# A short run's maximum is what it saw, not a worst case: below this many samples the verdict says so.
WORST_CASE_SAMPLES = 1_000_000

# Named requirement sets (docs/requirements.md gives the reasoning of each limit). A profile's `period_ns` is
# the control cycle its requirements speak of (None: a threshold study, no cycle): its `overruns` requirement
# counts missed cycles of that period, whatever interval the probe sampled at (cycle_value).
PROFILES: dict[str, dict[str, Any]] = {
    "kek-50hz": {
        "help": "SuperKEKB injector linac (seeds 000/002): parameters switch every 20 ms (50 Hz pulse-to-pulse); "
        "a response must land well inside one cycle",
        "title": "50 Hz KEK cycle",
        "period_ns": 20_000_000,
        "requirements": ["max < 20ms", "p99.99 <= 2ms", "overruns == 0"],
    },
    "aps-100us": {
        "help": "APS IOCcore study (seed 001): the share of samples over 100 us, and a median under it",
        "title": "APS 100 us threshold",
        "period_ns": None,
        "requirements": ["over(100us) <= 1%", "p50 <= 100us"],
    },
    "1khz-loop": {
        "help": "a 1 kHz control loop: the worst wake-up inside half the 1 ms period, p99.99 within 10 % of it",
        "title": "1 kHz loop",
        "period_ns": 1_000_000,
        "requirements": ["max <= 500us", "p99.99 <= 100us", "overruns == 0"],
    },
    "10khz-loop": {
        "help": "a 10 kHz control loop (100 us period): the worst wake-up inside half the period",
        "title": "10 kHz loop",
        "period_ns": 100_000,
        "requirements": ["max <= 50us", "p99.99 <= 20us", "overruns == 0"],
    },
}


def profile_question(name: str) -> str:
    """A profile as the question it asks: '50 Hz KEK cycle, 20ms (profile kek-50hz)'."""
    p = PROFILES[name]
    period = f", {format_ns(p['period_ns'])}" if p.get("period_ns") else ""
    return f"{p['title']}{period} (profile {name})"


def probe_cycle_ns(params: dict) -> int | None:
    """The period a case's probe sampled at (its interval, or an IOC's stimulus period), or None."""
    cycle = (params or {}).get("interval_ns") or (params or {}).get("period_ns")
    return int(cycle) if cycle else None


@dataclass(frozen=True)
class Requirement:
    """One parsed requirement, made once when the plan is made (gather) or a bundle is read (from_bundle); every
    later step reads its fields. text: the expression as given (what bundles keep); stat: a STATS name, "over",
    "return", "overruns" or "count"; limit in `unit` (ns for a STAT or return(), percent for over(), a number
    for overruns/count); over_ns: over()'s threshold; period_s: return()'s period."""

    text: str
    stat: str
    op: str
    limit: float
    over_ns: int | None = None
    period_s: float | None = None

    @property
    def unit(self) -> str:
        return "ns" if self.stat in STATS or self.stat == "return" else "%" if self.stat == "over" else "count"

    @property
    def upper(self) -> bool:
        """An upper bound (< or <=): its margin is the room below the limit."""
        return self.op in ("<", "<=")

    def margin(self, value: float) -> float | None:
        """Room left between the value and the limit on the side the requirement allows (negative: beyond it);
        None for ==."""
        if self.op == "==":
            return None
        return self.limit - value if self.upper else value - self.limit


MAX_NS = 2**63 - 1  # a duration in a requirement: what a signed 64-bit nanosecond count (the probes') holds
MAX_COUNT = 2**63 - 1  # overruns and count: a signed 64-bit counter, as the probes keep them
PPM = 1_000_000
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")  # ASCII digits only: no '²', no other scripts' digits


def parse(text: str, what: str = "--require") -> Requirement:
    """'p99 <= 100us' -> Requirement, checked to be judged without error (its numbers ASCII and bounded, a
    share's sample need finite); anything else: one line naming the expression and what is wrong."""
    m = _EXPR.match(str(text))
    where = f"{what} '{json.dumps(str(text), ensure_ascii=False)[1:-1]}'"  # one line, whatever the text holds
    if not m:
        raise RtqError(f"{where}: expected STAT OP LIMIT, e.g. 'p99 <= 100us', 'over(100us) <= 0.1%', 'overruns == 0'")
    lhs, op, rhs, given = m["lhs"], m["op"], m["rhs"], str(text).strip()
    if m["over"] is not None:
        over_ns = _duration(m["over"].strip(), f"{where}: over()")
        pct = rhs.removesuffix("%")
        if not _NUMBER.fullmatch(pct):
            raise RtqError(f"{where}: '{rhs}' is not a percentage (e.g. 0.1%)")
        limit = float(pct)
        if not 0 <= limit <= 100:
            raise RtqError(f"{where}: {rhs} is not between 0 and 100 %")
        if limit > 0 and round(PPM - limit * PPM / 100) >= PPM:
            raise RtqError(f"{where}: {rhs} is finer than one sample in a million (0.0001 %): give 0 or more")
        return Requirement(given, "over", op, limit, over_ns)
    if m["period"] is not None:
        period_ns = _duration(m["period"].strip(), f"{where}: return()")
        if period_ns <= 0:
            raise RtqError(f"{where}: the return period must be longer than 0")
        return Requirement(given, "return", op, _duration(rhs, f"{where}: limit"), period_s=period_ns / 1e9)
    if lhs in STATS:
        return Requirement(given, lhs, op, _duration(rhs, f"{where}: limit"))
    if lhs in COUNTS:
        if not re.fullmatch(r"[0-9]+", rhs) or int(rhs) > MAX_COUNT:
            raise RtqError(f"{where}: '{rhs}' is not a whole number (ASCII digits, at most {MAX_COUNT})")
        return Requirement(given, lhs, op, int(rhs))
    names = ", ".join([*STATS, "over(DURATION)", "return(PERIOD)", *COUNTS])
    raise RtqError(f"{where}: unknown statistic '{lhs}' (one of {names})")


def _duration(text: str, what: str) -> int:
    """A requirement's duration in ns, at most MAX_NS (one line beyond it)."""
    ns = parse_duration_ns(text, what)
    if ns > MAX_NS:
        raise RtqError(f"{what}: {text!r} is longer than {MAX_NS:,} ns (292 years): not a duration to judge")
    return ns


def requirement(given: str | Requirement, what: str = "--require") -> Requirement:
    """The door: a requirement given as text (the command line, a scenario, a profile) parsed, one already
    parsed kept. Every requirement a plan holds came through here."""
    return given if isinstance(given, Requirement) else parse(given, what)


def from_bundle(text: object) -> Requirement | None:
    """A requirement a bundle stores as text (result.json's requirement_verdicts, plan.json's require), parsed
    as it is read; None when this version cannot read it (an old or foreign bundle's text)."""
    try:
        return parse(str(text), "bundle")
    except RtqError:
        return None


def texts(reqs: Sequence[Requirement | str]) -> list[str]:
    """Requirements as the text a bundle keeps (plan.json, params.json, a service's spec)."""
    return [r.text if isinstance(r, Requirement) else str(r) for r in reqs]


def profile(name: str) -> list[Requirement]:
    """The requirements of a named profile; an unknown name is one line listing the known ones."""
    if name not in PROFILES:
        raise RtqError(f"--profile: unknown profile '{name}' (one of {', '.join(PROFILES)})")
    return [requirement(t, f"profile {name}") for t in PROFILES[name]["requirements"]]


def legacy(requirements: dict) -> list[Requirement]:
    """The old shorthands kept in a case ({"max_ns": N, "p99_ns": N} from --max-latency/--p99-latency) as
    requirements: the case fails when the statistic exceeds the limit."""
    names = {"max_ns": "max", "p99_ns": "p99"}
    return [Requirement(f"{names[k]} <= {v}ns", names[k], "<=", v) for k, v in requirements.items() if k in names]


def needed_for(req: Requirement) -> int | None:
    """Samples a requirement needs before it is decided (a percentile's 10/(1-p), a share's 10/(P/100)),
    or None when any count decides it (max, mean, p50, counts, a share of 0 %)."""
    ppm = _ppm(req)
    return needed_samples(ppm) if ppm else None


def _ppm(req: Requirement) -> int | None:
    """The share of samples (parts per million) a requirement's limit sits at, when a count must carry it."""
    ppm = STATS.get(req.stat, (None, None))[1]
    if req.stat == "over" and req.limit > 0:
        ppm = round(PPM - req.limit * PPM / 100)
    return ppm if ppm and req.stat != "p50" else None


def value_of(req: Requirement, stats: dict, hist: Histogram | None) -> float | None:
    """The measured value a requirement speaks of (None when the case has no such statistic)."""
    if req.stat == "over":
        count = stats.get("count") or 0
        if hist is None or not count:
            return None
        return 100.0 * hist.count_above(req.over_ns or 0) / count
    if req.stat in COUNTS:
        return stats.get(req.stat)
    key, ppm = STATS[req.stat]
    if stats.get(key) is None and ppm is not None and hist is not None and hist.count:
        return hist.percentile_ns(ppm)
    return stats.get(key)


def cycle_value(hist: Histogram | None, cycle_ns: int, probe_ns: int | None) -> tuple[float | None, str]:
    """A profile's `overruns` on a probe that sampled at another interval (or none): (the wake-ups later than
    one cycle of the profile, a note saying so); without samples in a histogram (None, why not judged)."""
    sampled = f"this case sampled every {format_ns(probe_ns)}" if probe_ns else "this case has no period"
    if hist is None:
        return None, f"needs a probe interval of {format_ns(cycle_ns)}; {sampled}"
    if not hist.count:
        return None, "no samples"
    return hist.count_above(cycle_ns), f"samples later than one {format_ns(cycle_ns)} cycle ({sampled})"


def evaluate(
    req: Requirement,
    stats: dict,
    hist: Histogram | None = None,
    run_ns: int | None = None,
    cycle_ns: int | None = None,
    probe_ns: int | None = None,
    tail_case: dict | None = None,
) -> dict:
    """The verdict of one requirement on one case: pass, fail or inconclusive, with the value, the limit,
    the margin (positive: room left) and a note when the number cannot carry the claim. cycle_ns: the period
    of the profile the requirement comes from; its `overruns` then counts missed cycles of that period (the
    probe's own overruns only when it sampled at that period, probe_ns). A return() requirement is judged on
    the case's tail analysis (tail_case, answers/evidence/tail.py)."""
    if req.stat == "return":
        return tail.requirement_verdict(req, tail_case)
    count = int(stats.get("count") or 0)
    value = value_of(req, stats, hist)
    cycle_note = ""
    if req.stat == "overruns" and cycle_ns and probe_ns != cycle_ns:
        value, cycle_note = cycle_value(hist, cycle_ns, probe_ns)
    out = {
        "requirement": req.text,
        "stat": req.stat,
        "op": req.op,
        "limit": req.limit,
        "unit": req.unit,
        "value": value,
        "margin": None,
        "margin_pct": None,
        "verdict": "inconclusive",
        "note": "",
    }
    if value is None:
        out["note"] = cycle_note or ("no samples" if not count else f"the case has no {req.stat}")
        return out
    upper = req.upper
    margin = req.margin(value)
    if margin is not None:
        out["margin"] = margin
        out["margin_pct"] = 100.0 * margin / req.limit if req.limit else None
    ppm = _ppm(req)
    if ppm and count < needed_samples(ppm):
        need = needed_samples(ppm)
        if not (upper and _fails_anyway(req, hist, need, ppm)):
            longer = f" ({_longer(need, count, run_ns)})" if count else ""
            name = req.text if req.stat == "over" else req.stat
            out["note"] = f"{name} needs at least {need:,} samples (10/(1-p)); the case has {count:,}{longer}"
            return out
    out["verdict"] = "pass" if OPS[req.op](value, req.limit) else "fail"
    if cycle_note:
        out["note"], out["cycle_ns"] = cycle_note, cycle_ns
    if req.stat == "max" and count < WORST_CASE_SAMPLES:
        out["note"] = f"the largest of {count:,} samples: a short run's maximum, not a worst case"
    return out


def _fails_anyway(req: Requirement, hist: Histogram | None, need: int, ppm: int) -> bool:
    """Too few samples to pass, but enough to fail: the samples already above the limit would break it
    even in a run of `need` samples with no further one above it."""
    if hist is None:
        return False
    threshold_ns = req.over_ns if req.stat == "over" else req.limit
    allowed = (1_000_000 - ppm) * need / 1_000_000
    return hist.count_above(int(threshold_ns or 0)) > allowed


def _longer(need: int, count: int, run_ns: int | None) -> str:
    factor = -(-need // count)
    if run_ns:
        return f"run about {format_ns(run_ns * factor)} at this rate"
    return f"run {factor}x longer"


def describe(r: dict) -> str:
    """One line: 'p99 <= 100us: pass (55.5us, 44.5us to spare)'."""
    if r["value"] is None:
        return f"{r['requirement']}: {r['verdict']} ({r['note']})"
    value = _fmt(r["value"], r["unit"])
    words = [value]
    if r["margin"] is not None and r["verdict"] != "inconclusive":
        room = _fmt(abs(r["margin"]), r["unit"])
        beyond = "under the limit" if r.get("op") in (">", ">=") else "over the limit"
        words.append(f"{room} to spare" if r["margin"] >= 0 else f"{room} {beyond}")
    if r["note"]:
        words.append(r["note"])
    return f"{r['requirement']}: {r['verdict']} ({', '.join(words)})"


def _fmt(x: float, unit: str) -> str:
    return format_ns(x) if unit == "ns" else f"{x:.3g}%" if unit == "%" else f"{x:g}"


def upper_limits_ns(reqs: Sequence[Requirement]) -> dict[str, float]:
    """{STAT: its tightest upper limit, ns} of the latency requirements among `reqs` ('max <= 100us' ->
    {"max": 100000}): what PVs' alarm limits are set from (rtqual.monitor.pvs, the IOC's operator
    records). Lower bounds, ==, over(), counts and return() set none."""
    out: dict[str, float] = {}
    for r in reqs:
        if r.stat in STATS and r.upper:
            out[r.stat] = min(out.get(r.stat, r.limit), r.limit)
    return out


def gather(
    exprs: Sequence[str | Requirement] | None,
    profile_name: str | None,
    what: str = "--require",
    limits: dict | None = None,
) -> list[Requirement]:
    """The requirements of a case, parsed once here, the one route to its verdict: the shorthands' (`limits`,
    the case's {"max_ns": N, "p99_ns": N} from --max-latency/--p99-latency), a profile's, then the ones given
    (texts parsed: one line naming a bad one; requirements already parsed kept), each once (by its text)."""
    reqs = legacy(limits or {}) + (profile(profile_name) if profile_name else [])
    reqs += [requirement(t, what) for t in exprs or []]
    once: dict[str, Requirement] = {}
    for r in reqs:
        once.setdefault(r.text, r)
    return list(once.values())


def kept(case: dict) -> dict:
    """A plan case as a bundle keeps it: its requirements as the text they were given in."""
    return {**case, "require": texts(case["require"])} if case.get("require") else case

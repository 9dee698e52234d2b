"""Requirements and their verdicts: `--require EXPR`, `requirements = [...]`, `--profile NAME`.

Grammar (docs/requirements.md):
    STAT OP DURATION        STAT: min p50 mean p99 p99.9 p99.99 p99.999 max stddev
    over(DURATION) OP PCT   share of samples above DURATION, in percent ("0.1%" or "0.1")
    overruns OP N           missed periods
    count OP N              samples measured
    return(PERIOD) OP DURATION  the latency exceeded once per PERIOD (extreme-value fit, answers/tail.py)
    OP: <= < >= > ==

Every function here is pure: a requirement and a case's statistics (and histogram) in, a verdict out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rtqual.answers import tail
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
    """One parsed requirement. limit: ns for a STAT, percent for over(), a number for overruns/count."""

    text: str
    stat: str  # a STATS name, "over", "overruns" or "count"
    op: str
    limit: float
    over_ns: int | None = None
    period_s: float | None = None  # return(PERIOD): the return period

    @property
    def unit(self) -> str:
        return "ns" if self.stat in STATS or self.stat == "return" else "%" if self.stat == "over" else "count"


def parse(text: str, what: str = "--require") -> Requirement:
    """'p99 <= 100us' -> Requirement; anything else: one line naming the expression and what is wrong."""
    m = _EXPR.match(str(text))
    where = f"{what} '{json.dumps(str(text), ensure_ascii=False)[1:-1]}'"  # one line, whatever the text holds
    if not m:
        raise RtqError(f"{where}: expected STAT OP LIMIT, e.g. 'p99 <= 100us', 'over(100us) <= 0.1%', 'overruns == 0'")
    lhs, op, rhs = m["lhs"], m["op"], m["rhs"]
    if m["over"] is not None:
        over_ns = parse_duration_ns(m["over"].strip(), f"{where}: over()")
        pct = rhs.removesuffix("%")
        try:
            limit = float(pct)
        except ValueError:
            raise RtqError(f"{where}: '{rhs}' is not a percentage (e.g. 0.1%)") from None
        if not 0 <= limit <= 100:
            raise RtqError(f"{where}: {rhs} is not between 0 and 100 %")
        return Requirement(str(text).strip(), "over", op, limit, over_ns)
    if m["period"] is not None:
        period_s = parse_duration_ns(m["period"].strip(), f"{where}: return()") / 1e9
        if period_s <= 0:
            raise RtqError(f"{where}: the return period must be longer than 0")
        limit = parse_duration_ns(rhs, f"{where}: limit")
        return Requirement(str(text).strip(), "return", op, limit, period_s=period_s)
    if lhs in STATS:
        return Requirement(str(text).strip(), lhs, op, parse_duration_ns(rhs, f"{where}: limit"))
    if lhs in COUNTS:
        if not rhs.isdigit():
            raise RtqError(f"{where}: '{rhs}' is not a whole number")
        return Requirement(str(text).strip(), lhs, op, int(rhs))
    names = ", ".join([*STATS, "over(DURATION)", "return(PERIOD)", *COUNTS])
    raise RtqError(f"{where}: unknown statistic '{lhs}' (one of {names})")


def profile(name: str) -> list[Requirement]:
    """The requirements of a named profile; an unknown name is one line listing the known ones."""
    if name not in PROFILES:
        raise RtqError(f"--profile: unknown profile '{name}' (one of {', '.join(PROFILES)})")
    return [parse(t, f"profile {name}") for t in PROFILES[name]["requirements"]]


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
        ppm = round(1_000_000 - req.limit * 10_000)
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
    the case's tail analysis (tail_case, answers/tail.py)."""
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
    upper = req.op in ("<", "<=")
    if req.op != "==":
        margin = (req.limit - value) if upper else (value - req.limit)
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
        words.append(f"{room} to spare" if r["margin"] >= 0 else f"{room} over the limit")
    if r["note"]:
        words.append(r["note"])
    return f"{r['requirement']}: {r['verdict']} ({', '.join(words)})"


def _fmt(x: float, unit: str) -> str:
    return format_ns(x) if unit == "ns" else f"{x:.3g}%" if unit == "%" else f"{x:g}"


def upper_limits_ns(texts: list[str]) -> dict[str, float]:
    """{STAT: its tightest upper limit, ns} of the latency requirements among `texts` ('max <= 100us' ->
    {"max": 100000}): what PVs' alarm limits are set from (rtqual.monitor.pvs, the IOC's operator
    records). Lower bounds, ==, over(), counts and return() set none."""
    out: dict[str, float] = {}
    for r in map(parse, texts):
        if r.stat in STATS and r.op in ("<", "<="):
            out[r.stat] = min(out.get(r.stat, r.limit), r.limit)
    return out


def gather(
    exprs: list[str] | None, profile_name: str | None, what: str = "--require", limits: dict | None = None
) -> list[str]:
    """The requirement texts of a case, the one route to its verdict: the shorthands' (`limits`, the case's
    {"max_ns": N, "p99_ns": N} from --max-latency/--p99-latency), a profile's, then the ones given; each
    checked now (one line naming a bad one), each once."""
    texts = [r.text for r in legacy(limits or {})]
    texts += list(PROFILES[profile_name]["requirements"]) if profile_name else []
    if profile_name:
        profile(profile_name)
    for t in exprs or []:
        parse(t, what)
        texts.append(str(t).strip())
    return list(dict.fromkeys(texts))

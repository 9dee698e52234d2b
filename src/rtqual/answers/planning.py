"""Run-length planning: the samples a case will give, the statistics and requirements they decide, and the
run a requirement needs (`rtqual plan`, `rtqual run PROBE --duration auto`, the timer baseline of `run ioc`).

One rule says how many samples a statistic needs: rtqual.answers.requirements.needed_samples (10/(1-p)).
A plan asks for MARGIN_PCT % more, because a period the probe missed (an overrun) is not a sample: a 5 s
timer baseline on 2 CPUs at 1 ms plans 10,000 periods, and one overrun leaves 9,999 samples, one short of
p99.9's 10,000. Every function here is pure: a case's probe and params in, numbers out.
"""

from __future__ import annotations

from rtqual import probes as native_table
from rtqual.answers.requirements import STATS, Requirement, needed_for, needed_samples
from rtqual.errors import RtqError
from rtqual.units import format_duration, format_hms, parse_duration_ns

S = 1_000_000_000
MARGIN_PCT = 10  # samples planned beyond a statistic's need: missed periods (overruns) are not samples
PERCENTILES = {name: ppm for name, (_key, ppm) in STATS.items() if ppm}  # p50 … p99.999, ppm
AUTO_STATS = ("p99.9", "p99.99")  # what --duration auto plans for when the case has no requirement
AUTO_CAP_NS = 600 * S  # --duration auto's cap unless auto:CAP says another
AUTO_FLOOR_NS = S  # the shortest run --duration auto chooses


def planned(need: int) -> int:
    """Samples a plan asks for a statistic that needs `need`: MARGIN_PCT % more, rounded up."""
    return need + -(-need * MARGIN_PCT // 100)


def period_ns(params: dict) -> int | None:
    """The case's sampling period: its interval, or the period of its rate (as the probes compute it:
    1 s // rate); None for a probe measuring back to back (its rate is known only once it ran)."""
    if params.get("interval_ns"):
        return int(params["interval_ns"])
    if params.get("rate"):
        return S // int(params["rate"])
    return None


def slots(probe: str, params: dict) -> int:
    """Threads that each take one sample per period (the timer: one per CPU; the probe module's `slots`)."""
    own = native_table.hook(probe, "slots")
    return int(own(params)) if own else 1


def rate_hz(probe: str, params: dict) -> float | None:
    """Samples per second of measured time, or None when it is not known before the run."""
    period = period_ns(params)
    return slots(probe, params) * S / period if period else None


def expected_samples(probe: str, params: dict) -> int | None:
    """Samples the case will give with no period missed: its loops (passes) per slot, else its measured
    duration over its period per slot (the probes' own arithmetic); None when not known before the run."""
    n = slots(probe, params)
    for key in ("loops", "passes"):
        if params.get(key):
            return n * int(params[key])
    period, duration = period_ns(params), params.get("duration_ns")
    return n * (int(duration) // period) if period and duration else None


def samples_needed(req: Requirement) -> int:
    """Samples a requirement needs before its verdict can say pass (0: any count decides), as
    rtqual.answers.requirements.evaluate asks: a percentile's 10/(1-p) (p50 decides at any count),
    over(D) <= X %'s 10/(X %) (requirements.needed_for)."""
    return needed_for(req) or 0


def decidable(samples: int | None) -> list[str] | None:
    """The percentiles `samples` decide with the margin to spare (p50, p99, …), None when not known."""
    if samples is None:
        return None
    return [name for name, ppm in PERCENTILES.items() if planned(needed_samples(ppm)) <= samples]


def duration_for(samples: int, probe: str, params: dict) -> int | None:
    """Measured time (ns, whole seconds, at least AUTO_FLOOR_NS) giving `samples` samples, None when the
    probe's rate is not known before it runs."""
    period = period_ns(params)
    if not period:
        return None
    periods = -(-samples // slots(probe, params))
    return max(AUTO_FLOOR_NS, -(-periods * period // S) * S)


def requirement_plan(req: Requirement, probe: str, params: dict) -> dict:
    """Whether the case decides one requirement: {"requirement", "samples_needed" (the rule's count),
    "decidable" (True/False; None when the case's samples are not known), "duration_needed_ns" (the
    measured time giving the needed samples with the margin; None when none are needed or the rate is
    unknown)}."""
    need = samples_needed(req)
    expected = expected_samples(probe, params)
    ok = True if not need else None if expected is None else expected >= planned(need)
    return {
        "requirement": req.text,
        "samples_needed": need,
        "decidable": ok,
        "duration_needed_ns": duration_for(planned(need), probe, params) if need else None,
    }


def case_plan(case: dict) -> dict:
    """The planning keys of one plan case: "expected_samples", "decidable" (percentile names) and, for a
    case with requirements, "decidable_requirements" (requirement_plan of each)."""
    probe, params = case["probe"], case["params"]
    samples = expected_samples(probe, params)
    out: dict = {"expected_samples": samples, "decidable": decidable(samples)}
    if case.get("require"):
        out["decidable_requirements"] = [requirement_plan(r, probe, params) for r in case["require"]]
    return out


def undecided_text(r: dict, probe: str, params: dict) -> str:
    """Why a requirement the case cannot decide needs more: 'p99.99 <= 2ms: needs 110,000 samples
    (100,000 and 10 %), about 55s at 2,000/s'."""
    rate = rate_hz(probe, params)
    words = f"{r['requirement']}: needs {planned(r['samples_needed']):,} samples "
    words += f"({r['samples_needed']:,} and {MARGIN_PCT} %)"
    if r["duration_needed_ns"] and rate:
        words += f", a run of about {format_hms(r['duration_needed_ns'])} at {rate:,.0f}/s"
    return words


def parse_auto(text: str | None, what: str = "--duration") -> int | None:
    """'auto' -> AUTO_CAP_NS, 'auto:CAP' -> CAP in ns; None for any other text (a plain duration)."""
    if text is None or not str(text).strip().startswith("auto"):
        return None
    word, colon, cap = str(text).strip().partition(":")
    if word != "auto" or (colon and not cap.strip()):
        raise RtqError(f"{what} {text}: expected auto or auto:CAP (e.g. auto:10m)")
    cap_ns = parse_duration_ns(cap.strip(), f"{what} auto:") if colon else AUTO_CAP_NS
    if cap_ns < AUTO_FLOOR_NS:
        raise RtqError(f"{what} {text}: the cap must be at least {format_duration(AUTO_FLOOR_NS)}")
    return cap_ns


def auto_duration(probe: str, params: dict, reqs: list[Requirement], cap_ns: int) -> dict:
    """The measured time --duration auto chooses: enough for every requirement's samples (none given, or
    none that needs samples: AUTO_STATS) with the margin, at the case's rate, capped at cap_ns.
    Returns {"duration_ns", "cap_ns", "capped", "samples_needed", "for", "note"}; RtqError when the
    probe's rate is not known before it runs."""
    rate = rate_hz(probe, params)
    if not rate:
        raise RtqError(
            f"--duration auto: {probe} measures back to back, its rate is known only once it ran: give --duration"
        )
    needs = {r.text: samples_needed(r) for r in reqs}
    needs = {t: n for t, n in needs.items() if n} or {s: needed_samples(PERCENTILES[s]) for s in AUTO_STATS}
    target, need = max(needs.items(), key=lambda kv: kv[1])
    wanted = duration_for(planned(need), probe, params) or AUTO_FLOOR_NS
    chosen = min(wanted, cap_ns)
    head = f"--duration auto: {format_hms(chosen)} of measurement for {target} "
    head += f"({planned(need):,} samples: {need:,} and {MARGIN_PCT} %, at {rate:,.0f}/s)"
    if wanted > cap_ns:
        head = (
            f"--duration auto: capped at {format_hms(cap_ns)}: {target} needs about {format_hms(wanted)} "
            f"({planned(need):,} samples at {rate:,.0f}/s) and will stay undecided (raise the cap: auto:CAP)"
        )
    return {
        "duration_ns": chosen,
        "cap_ns": cap_ns,
        "capped": wanted > cap_ns,
        "samples_needed": need,
        "for": target,
        "note": head,
    }

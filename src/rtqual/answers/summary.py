"""The capability summary: a few plain sentences from a bundle's measured numbers, nothing else.

Per case: the tightest deadline met by 99.9 % and 99.99 % of the samples and the worst seen; then what
that means for common control rates (not in a run whose IOC cases were judged: its timer cases are their
baseline);
for IOC cases, the input -> output budget judged: a budget comes from
a profile or a requirement, never from the values seen. A percentile that the sample count cannot carry
(fewer than 10/(1-p) samples) is said to be so, never stated.
"""

from __future__ import annotations

from rtqual.answers.requirements import needed_samples
from rtqual.units import format_ns

# (name, period in ns): the rates an accelerator control engineer asks about
RATES = [("a 10 kHz loop", 100_000), ("a 1 kHz loop", 1_000_000), ("the KEK 50 Hz injection cycle", 20_000_000)]
P999_PPM, P9999_PPM = 999_000, 999_900


def _measured(results: list[dict]) -> list[dict]:
    return [r for r in results if (r.get("stats") or {}).get("count") and r.get("verdict") not in ("error", "skip")]


def is_response(r: dict) -> bool:
    """An input -> output case (an IOC) rather than a wake-up latency."""
    stages = (r.get("probe_summary") or {}).get("stages") or {}
    return bool(r.get("ioc") or (stages and r.get("probe") != "timerlat"))  # timerlat's stages split a wake-up


def case_sentence(r: dict) -> str:
    """'timer idle: 99.9 % within 40us, 99.99 % within 60us; worst 80us in 200,000 samples.' Percentiles
    only where the sample count carries them (10/(1-p) samples)."""
    s = r["stats"]
    what = "events answered" if is_response(r) else "samples"
    worst = f"worst {format_ns(s['max_ns'])} in {s['count']:,} {what}"
    if s["count"] >= needed_samples(P9999_PPM):
        p999, p9999 = format_ns(s["p999_ns"]), format_ns(s["p9999_ns"])
        return f"{r['label']}: 99.9 % within {p999}, 99.99 % within {p9999}; {worst}."
    if s["count"] >= needed_samples(P999_PPM):
        return (
            f"{r['label']}: 99.9 % within {format_ns(s['p999_ns'])}; {worst} "
            f"(99.99 % needs {needed_samples(P9999_PPM):,})."
        )
    return f"{r['label']}: {worst} (too few for 99.9 %: {needed_samples(P999_PPM):,} needed)."


def is_periodic(r: dict) -> bool:
    """A wake-up latency against periodic deadlines (the timer): what a control loop's rate speaks of."""
    return bool((r.get("params") or {}).get("interval_ns")) and not is_response(r)


def rate_sentence(name: str, period_ns: int, cases: list[dict]) -> str:
    """Which cases keep every sample, or 99.99 % of them, inside one period of the rate."""
    every = [r["label"] for r in cases if r["stats"]["max_ns"] < period_ns]
    mostly = [
        r["label"]
        for r in cases
        if r["stats"]["max_ns"] >= period_ns
        and r["stats"]["count"] >= needed_samples(P9999_PPM)
        and (r["stats"].get("p9999_ns") or period_ns) < period_ns
    ]
    never = [r["label"] for r in cases if r["label"] not in every and r["label"] not in mostly]
    head = f"For {name} ({format_ns(period_ns)} period):"
    words = []
    if every:
        words.append(f"every sample within the period under {_names(every)}")
    if mostly:
        words.append(f"99.99 % within it but not every sample under {_names(mostly)}")
    if never:
        worst = max((r for r in cases if r["label"] in never), key=lambda r: r["stats"]["max_ns"])
        words.append(
            f"a sample over the period under {_names(never)} (worst {format_ns(worst['stats']['max_ns'])}, "
            f"{worst['label']})"
        )
    return f"{head} {'; '.join(words)}."


def _names(labels: list[str]) -> str:
    return ", ".join(labels) if len(labels) <= 3 else f"{', '.join(labels[:3])} and {len(labels) - 3} more"


BUDGET_WORDS = {"pass": "met", "fail": "not met", "inconclusive": "undecided"}


def budget_sentence(r: dict) -> str:
    """An IOC case's input -> output budget: each latency limit judged on it (from its profile or its
    requirements) and whether it was met; without one, what was seen and how to give a budget."""
    limits = [
        v
        for v in r.get("requirement_verdicts") or []
        if v.get("unit") == "ns" and v.get("op") in ("<", "<=") and v.get("stat") not in ("min", "mean", "stddev")
    ]
    head = f"IOC input -> output ({r['label']}):"
    if limits:
        words = [
            f"{v['requirement']}{_from(v)} {BUDGET_WORDS.get(v['verdict'], v['verdict'])}{_seen(v)}" for v in limits
        ]
        return f"{head} budget {', '.join(words)}."
    s = r["stats"]
    if s["count"] >= needed_samples(P999_PPM):
        seen = f"99.9 % of {s['count']:,} events within {format_ns(s['p999_ns'])}, worst {format_ns(s['max_ns'])}"
    else:
        seen = f"worst {format_ns(s['max_ns'])} in {s['count']:,} events (a short run)"
    return f"{head} {seen}; no budget judged (give one with --require 'max <= BUDGET' or --profile)."


def _seen(v: dict) -> str:
    """' (p50 42us)': the statistic a budget constrains, as measured ('' when the case has none)."""
    value = v.get("value")
    if not isinstance(value, (int, float)):
        return ""
    return f" ({'worst' if v.get('stat') == 'max' else v.get('stat')} {format_ns(value)})"


def _from(v: dict) -> str:
    """' (profile kek-50hz)' for a requirement a profile gave, else ''."""
    return f" (profile {v['profile']})" if v.get("profile") else ""


def capability(results: list[dict]) -> list[str]:
    """The summary of a bundle's cases, in sentences; empty when nothing was measured."""
    cases = _measured(results)
    if not cases:
        return []
    latency = [r for r in cases if is_periodic(r)]
    response = [r for r in cases if is_response(r)]
    out = [case_sentence(r) for r in cases]
    if latency and not any(r.get("requirement_verdicts") for r in response):  # a judged IOC run: its budget, not
        # the loop rates of its timer baseline
        out += [rate_sentence(name, period, latency) for name, period in RATES]
    out += [budget_sentence(r) for r in response]
    short = [r for r in cases if r["stats"]["count"] < needed_samples(P9999_PPM)]
    if short:
        out.append(
            f"{len(short)} of {len(cases)} case(s) are short runs: their maximum is the largest sample seen, "
            "not a worst case; run longer for tail figures."
        )
    return out

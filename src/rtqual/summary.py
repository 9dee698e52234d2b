"""The capability summary: a few plain sentences from a bundle's measured numbers, nothing else.

Per case: the tightest deadline met by 99.9 % and 99.99 % of the samples and the worst seen; then what
that means for common control rates; for IOC cases, the input -> output budget met. A percentile that
the sample count cannot carry (fewer than 10/(1-p) samples) is said to be so, never stated.
"""

from __future__ import annotations

from rtqual.requirements import needed_samples
from rtqual.units import format_ns

# (name, period in ns): the rates an accelerator control engineer asks about
RATES = [("a 10 kHz loop", 100_000), ("a 1 kHz loop", 1_000_000), ("the KEK 50 Hz injection cycle", 20_000_000)]
P999_PPM, P9999_PPM = 999_000, 999_900


def _measured(results: list[dict]) -> list[dict]:
    return [r for r in results if (r.get("stats") or {}).get("count") and r.get("verdict") not in ("error", "skip")]


def is_response(r: dict) -> bool:
    """An input -> output case (an IOC) rather than a wake-up latency."""
    return bool(r.get("ioc") or (r.get("probe_summary") or {}).get("stages"))


def _within(stats: dict, key: str, ppm: int, share: str) -> str:
    need = needed_samples(ppm)
    if stats["count"] < need:
        return f"too few samples for {share} ({stats['count']:,} of the {need:,} needed)"
    return f"{share} within {format_ns(stats[key])}"


def case_sentence(r: dict) -> str:
    """'timer hackbench: 99.9 % within 112us, too few samples for 99.99 % (...); worst 916us in 1,000 samples.'"""
    s = r["stats"]
    what = "events answered" if is_response(r) else "samples"
    parts = [_within(s, "p999_ns", P999_PPM, "99.9 %"), _within(s, "p9999_ns", P9999_PPM, "99.99 %")]
    return f"{r['label']}: {', '.join(parts)}; worst {format_ns(s['max_ns'])} in {s['count']:,} {what}."


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


def capability(results: list[dict]) -> list[str]:
    """The summary of a bundle's cases, in sentences; empty when nothing was measured."""
    cases = _measured(results)
    if not cases:
        return []
    latency = [r for r in cases if not is_response(r)]
    response = [r for r in cases if is_response(r)]
    out = [case_sentence(r) for r in cases]
    if latency:
        out += [rate_sentence(name, period, latency) for name, period in RATES]
    for r in response:
        s = r["stats"]
        budget = s["p999_ns"] if s["count"] >= needed_samples(P999_PPM) else s["max_ns"]
        basis = "99.9 % of events" if s["count"] >= needed_samples(P999_PPM) else "every event of this short run"
        out.append(f"IOC input -> output ({r['label']}): a budget of {format_ns(budget)} is met by {basis}.")
    short = [r for r in cases if r["stats"]["count"] < needed_samples(P9999_PPM)]
    if short:
        out.append(
            f"{len(short)} of {len(cases)} case(s) are short runs: their maximum is the largest sample seen, "
            "not a worst case; run longer for tail figures."
        )
    return out

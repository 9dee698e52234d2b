"""The answer first: one line per question a run can answer, from its case results (docs/requirements.md).

Questions: each profile judged ("50 Hz KEK cycle, 20ms (profile kek-50hz)"), each other requirement judged
("p99.99 <= 2ms"), and, for a run of periodic wake-up cases judged against nothing, the standard control rates
of summary.RATES ("1 kHz loop (1ms)": is every wake-up inside one period?). A question is answered from the
requirement that decides it: its evidence is the statistic that requirement constrains (a p50 requirement
quotes the p50), on the kind of case it is about (in a run with judged IOC cases, the IOC cases: the timer cases
there are their baseline, and a run asked its own questions gets no loop-rate ones), and a "no" names the
requirement that failed. Each answer is
{"question", "answer": "yes" | "no" | "undecided", "evidence", "needs_s"}: "no" when a case proves it
(a failed requirement, a wake-up later than the period), "undecided" when a case cannot carry the claim (too
few samples: needs_s says how many seconds more per case; ran degraded; not measured as asked), "yes" when
every case meets it. The evidence names the numbers, the load and the conditions. Pure: results in, answers out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rtqual.answers.requirements import PROFILES, from_bundle, needed_for, probe_cycle_ns, profile_question
from rtqual.answers.summary import RATES, is_periodic, is_response
from rtqual.answers.verdict import degradation, worst
from rtqual.results.hist import Histogram
from rtqual.units import format_hms, format_ns

RATE_QUESTIONS = {100_000: "10 kHz loop", 1_000_000: "1 kHz loop", 20_000_000: "50 Hz KEK cycle"}
WORDS = {"pass": "yes", "fail": "no", "inconclusive": "undecided"}


def answers(results: Sequence[dict], hists: Mapping[str, Histogram] | None = None) -> list[dict]:
    """One answer per question the run's cases can answer (none when nothing was measured). hists: each case's
    histogram merged over its CPUs, by case id, to count the samples over a limit (without it the evidence
    gives the statistic instead)."""
    hists = hists or {}
    questions: dict[str, list[tuple[dict, list[dict]]]] = {}
    response = any(is_response(r) for r in results if r.get("requirement_verdicts"))
    for r in results:
        if response and not is_response(r):
            continue  # an IOC run's timer cases are its baseline: the requirements ask about the IOC
        for v in r.get("requirement_verdicts") or []:
            q = profile_question(v["profile"]) if v.get("profile") in PROFILES else _pretty(v["requirement"])
            pairs = questions.setdefault(q, [])
            if pairs and pairs[-1][0] is r:
                pairs[-1][1].append(v)
            else:
                pairs.append((r, [v]))
    out = [_judged(q, pairs, hists) for q, pairs in questions.items()]
    periodic = [r for r in results if _measured(r) and is_periodic(r) and not r.get("requirement_verdicts")]
    if periodic and not questions:  # the loop rates: only when nothing was asked (an IOC run's baseline unasked)
        out += [_rate(period_ns, periodic, hists) for _, period_ns in RATES]
    return out


def answer_lines(items: Sequence[dict], env_lines: Sequence[str] = ()) -> list[str]:
    """The answers as lines ('1 kHz loop (1ms): no — 16 of 30,000 wake-ups over 1ms under hackbench'), then
    env_lines: sentences saying where the numbers were measured and what that means for them (a VM, steal
    time, throttling), printed with the answers they qualify."""
    return [f"{a['question']}: {a['answer']} — {a['evidence']}" for a in items] + list(env_lines)


# ---- one question


def _judged(question: str, pairs: list[tuple[dict, list[dict]]], hists: Mapping) -> dict:
    """A question judged by requirements on one or more cases: no when one fails, undecided when one
    cannot carry it, yes when all pass."""
    rows = []  # (answer, case, its verdicts of this question)
    for r, vs in pairs:
        got = WORDS.get(worst(v["verdict"] for v in vs), "undecided")
        if r.get("verdict") in ("error", "skip") or (got == "yes" and r.get("verdict") == "inconclusive"):
            got = "undecided"  # the case did not end, or was not measured, as asked
        rows.append((got, r, vs))
    got_all = {a for a, _, _ in rows}
    final = "no" if "no" in got_all else "undecided" if "undecided" in got_all else "yes"
    chosen = [(r, vs) for a, r, vs in rows if a == final]
    if final == "no":
        missed = [_missed(r, v, hists.get(r["id"])) for r, vs in chosen[:2] for v in vs if v["verdict"] == "fail"]
        return _answer(question, "no", "; ".join(missed))
    if final == "undecided":
        needs = [_needs_s(r, vs) for r, vs in chosen]
        known = [n for n in needs if n is not None]
        r, vs = chosen[0]
        more = max(known) if len(known) == len(needs) else None
        return _answer(question, "undecided", _undecided(r, vs, needs[0]), more)
    return _answer(question, "yes", _held(chosen))


def _rate(period_ns: int, cases: list[dict], hists: Mapping) -> dict:
    """Is every wake-up inside one period of this rate? no when one was later; undecided when a case ran
    degraded or not as asked; else yes."""
    question = f"{RATE_QUESTIONS.get(period_ns, 'loop')} ({format_ns(period_ns)})"
    late = [r for r in cases if r["stats"]["max_ns"] >= period_ns and not degradation(r)]
    if late:
        evidence = "; ".join(_over(r, period_ns, hists.get(r["id"])) for r in late[:2])
        return _answer(question, "no", evidence + (f"; {len(late) - 2} more case(s)" if len(late) > 2 else ""))
    unsure = [r for r in cases if degradation(r) or r.get("verdict") == "inconclusive"]
    if unsure:
        r = unsure[0]
        why = "; ".join(degradation(r)) or r.get("reason") or "not measured as asked"
        return _answer(question, "undecided", f"{r['label']}: {why}")
    return _answer(question, "yes", _worst_seen(max(cases, key=lambda c: c["stats"]["max_ns"]), len(cases)))


def _answer(question: str, answer: str, evidence: str, needs_s: float | None = None) -> dict:
    return {"question": question, "answer": answer, "evidence": evidence, "needs_s": needs_s}


# ---- evidence


def _measured(r: dict) -> bool:
    return bool((r.get("stats") or {}).get("count")) and r.get("verdict") not in ("error", "skip")


def _noun(r: dict) -> str:
    return "events" if is_response(r) else "wake-ups" if is_periodic(r) else "samples"


def where(r: dict) -> str:
    """'under hackbench, governor performance' / 'under no load': the case's loads and the host conditions it
    asked for (a condition not applied is said so)."""
    loads = [str(ld.get("name") or ld.get("type")) for ld in r.get("loads") or [] if isinstance(ld, Mapping)]
    words = [f"under {' + '.join(loads) or 'no load'}"]
    for c in (r.get("conditions") or {}).get("changes") or []:
        if isinstance(c, Mapping) and not str(c.get("condition", "")).startswith("cpuset"):
            words.append(f"{c.get('condition')} {c.get('after')}" + ("" if c.get("applied") else " not applied"))
    return ", ".join(words)


def _held(chosen: list[tuple[dict, list[dict]]]) -> str:
    """Why every case met the question's requirements, in the statistics they constrain, on the case with
    the least room: 'p50 42us in 23,978 events under no load; 0.12 % over 100us' (a return level: the tail's
    estimate with its interval, not the run's maximum)."""
    r, vs = min(chosen, key=lambda rv: min((_room(v) for v in rv[1]), default=math.inf))
    words = [_value_text(r, v) for v in vs]
    s = r.get("stats") or {}
    more = f" (least room of {len(chosen)} cases)" if len(chosen) > 1 else ""
    context = f" in {s.get('count') or 0:,} {_noun(r)} {where(r)}" if vs[0].get("stat") != "return" else ""
    return "; ".join([words[0] + context + more, *words[1:]])


def _room(v: dict) -> float:
    """A judged requirement's room left, as a share of its limit (none known: no room to compare)."""
    m = v.get("margin_pct")
    return float(m) if isinstance(m, (int, float)) and math.isfinite(m) else math.inf


def _value_text(r: dict, v: dict) -> str:
    """The measured value a requirement constrains, named by its statistic: 'worst 5ms', 'p50 42us',
    '0.12 % over 100us', '0 wake-ups later than one 20ms cycle', 'overruns 0', the tail's level."""
    stat, value = v.get("stat"), v.get("value")
    if stat == "return":
        return f"{v['requirement']}: {v.get('note')}"
    if value is None:
        return f"{v['requirement']}: {v.get('note') or 'no value'}"
    if stat == "max":
        return f"worst {format_ns(value)}"
    if v.get("unit") == "ns":
        return f"{stat} {format_ns(value)}"
    if stat == "over":
        req = from_bundle(v.get("requirement"))
        above = f" over {format_ns(req.over_ns)}" if req and req.over_ns is not None else f" ({v['requirement']})"
        return f"{value:.3g} %{above}"
    if v.get("cycle_ns"):
        return f"{value:g} {_noun(r)} later than one {format_ns(v['cycle_ns'])} cycle"
    return f"{stat} {value:g}"


def _worst_seen(r: dict, ncases: int) -> str:
    """'worst 8.3ms in 30,000 wake-ups under hackbench' (and how many cases, when more than one)."""
    s = r["stats"]
    more = f" (worst of {ncases} cases)" if ncases > 1 else ""
    return f"worst {format_ns(s['max_ns'])} in {s['count']:,} {_noun(r)} {where(r)}{more}"


def _over(r: dict, limit_ns: float, hist: Histogram | None) -> str:
    """'16 of 30,000 wake-ups over 1ms under hackbench (worst 2.1ms)'; without a histogram: the worst only."""
    s = r["stats"]
    worst_ns = f"worst {format_ns(s['max_ns'])}"
    if hist is not None and hist.count:
        n = hist.count_above(int(limit_ns))
        if n:
            return f"{n:,} of {s['count']:,} {_noun(r)} over {format_ns(limit_ns)} {where(r)} ({worst_ns})"
    return f"{worst_ns} in {s['count']:,} {_noun(r)} {where(r)}, over {format_ns(limit_ns)}"


def _missed(r: dict, v: dict, hist: Histogram | None) -> str:
    """Why a failed requirement failed, in numbers: the samples over its limit, the tail's estimate, or its
    value."""
    failed = f"{_pretty(v['requirement'])} not met"
    if v.get("stat") == "return":
        return f"{failed}: {v.get('note')}"
    if v.get("stat") in ("max", "p99", "p99.9", "p99.99", "p99.999") and v.get("op") in ("<", "<="):
        return f"{failed}: {_value_text(r, v)}, {_over(r, v['limit'], hist)}"
    return f"{failed}: {_value_text(r, v)} in {(r.get('stats') or {}).get('count') or 0:,} {_noun(r)} {where(r)}"


def _undecided(r: dict, vs: list[dict], needs_s: float | None) -> str:
    """Why a case cannot decide: the samples it lacks (and the time), or what it ran without."""
    count = (r.get("stats") or {}).get("count") or 0
    need = max((n for v in vs if v["verdict"] == "inconclusive" and (n := _need(v))), default=0)
    if need > count and not degradation(r) and r.get("verdict") not in ("error", "skip"):
        more = f", about {_seconds(needs_s)} more per case" if needs_s is not None else ""
        return f"needs {need:,} samples{more} ({r['label']}: {count:,})"
    notes = [v["note"] for v in vs if v["verdict"] == "inconclusive" and v.get("note")]
    return f"{r['label']}: {notes[0] if notes else r.get('reason') or 'not measured as asked'}"


def _need(v: dict) -> int | None:
    """Samples a judged requirement needs (its text as the bundle keeps it); None when this version cannot
    read the text (an old or foreign bundle's)."""
    r = from_bundle(v.get("requirement"))
    return needed_for(r) if r else None


def _needs_s(r: dict, vs: list[dict]) -> float | None:
    """Seconds more a case needs for its undecided requirements, at the rate it sampled; None when more time
    cannot decide them (degraded, not measured as asked) or the rate is unknown."""
    undecided = [v for v in vs if v["verdict"] == "inconclusive"]
    count = (r.get("stats") or {}).get("count") or 0
    if r.get("verdict") in ("error", "skip") or degradation(r) or not count:
        return None
    need = [_need(v) for v in undecided]
    if not undecided or any(n is None or n <= count for n in need):
        return None
    params = r.get("params") or {}
    per_sample_s = (params.get("duration_ns") or count * (probe_cycle_ns(params) or 0)) / count / 1e9
    if not per_sample_s:
        return None
    return float(math.ceil((max(n for n in need if n) - count) * per_sample_s))


def _seconds(s: float) -> str:
    return format_hms(s * 1e9)


def _pretty(text: str) -> str:
    """A requirement as a question: 'p99.99 ≤ 2ms'."""
    return text.replace("<=", "≤").replace(">=", "≥")

"""`rtqual advise`'s answers: the checks (rtqual.answers.advice.hostchecks, one function per check registered in
CHECKS) run over a host's facts, ranked, and weighed against the requirement; the settings those checks read
(what `rtqual compare` names when they differ); and the measured effect of each fix `advise --measure` tried,
from the rounds each plan case names (case["advise"]). Rendering (text, What to change, --emit) is in
rtqual.publish.advise.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

from rtqual.answers import requirements as reqs
from rtqual.answers.advice.hostchecks import (
    CHECKS,
    DEFAULT_PRIORITY,
    SEVERITIES,
    Context,
    cpus_of,
    dicts,
    finding,
    whole,
)
from rtqual.units import format_cpulist, format_ns

__all__ = ["CHECKS", "SEVERITIES", "advise", "bundle_advice", "effects", "finding", "judge", "settings"]
STATS = ("p50_ns", "p99_ns", "p999_ns", "max_ns")  # what a measured fix is judged on
BASELINE = "baseline"  # the arm of `advise --measure` without a fix
MAX_ROUNDS = 1000  # more rounds than any measurement takes: a round number beyond is no round


# ---------------------------------------------------------------- the checks, ranked and weighed


def default_cpus(facts: dict, tun: dict) -> list[int]:
    """The CPUs that will run real-time work when --cpus is not given: the isolated ones, else every online CPU
    but the first (the first alone on a one-CPU host)."""
    c = Context(facts, tun, [], DEFAULT_PRIORITY, None)
    isolated = [x for x in cpus_of(c.fact("cpu.isolated")) or [] if x in c.online]
    return isolated or c.online[1:] or c.online[:1] or [0]


def advise(
    facts: dict,
    tun: dict,
    cpus: list[int] | None = None,
    priority: int | None = None,
    budget_ns: int | None = None,
    requirement: Budget | None = None,
    input_irqs: list[int] | None = None,
) -> dict:
    """Every check over the host facts: {"cpus", "priority", "findings" (blockers first), "passed" (ids)}, and
    "refused" (what the facts held that no command may be built from) when any. With a requirement, each
    blocker is weighed against it (judge). input_irqs: the IRQs of the measured input (advise --measure's case),
    whose threads the irq-thread-priority fix raises."""
    cpus = cpus or default_cpus(facts, tun)
    c = Context(facts, tun, cpus, priority or DEFAULT_PRIORITY, budget_ns, input_irqs)
    findings, passed = [], []
    for name, check in CHECKS.items():
        f = check(c)
        if f is None:
            passed.append(name)
        else:
            findings.append(f)
    if requirement is not None:
        findings = judge(findings, requirement)
    out = {"cpus": format_cpulist(cpus), "priority": c.priority, "findings": ranked(findings), "passed": passed}
    return out | ({"refused": c.refused} if c.refused else {})


def ranked(findings: list[dict]) -> list[dict]:
    """Findings blockers first (stable within a severity)."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f["severity"]))


class Budget:
    """What advise weighs a blocker against: the upper latency limits of the requirements given (--profile,
    --require: {stat: ns}), and what a bundle measured of each (the worst over its cases)."""

    def __init__(self, given: list[reqs.Requirement], name: str = ""):
        self.given, self.name = given, name
        self.measured: dict[str, float] | None = None
        self.limits = reqs.upper_limits_ns(given)
        self.budget_ns = int(min(self.limits.values())) if self.limits else None

    def broken(self) -> list[str]:
        """The limits the measurement exceeds ('max 25ms > 20ms'); [] when it meets them all."""
        return [
            f"measured {stat} {format_ns(v)} > {format_ns(self.limits[stat])}"
            for stat, v in (self.measured or {}).items()
            if v > self.limits[stat]
        ]

    def holds(self) -> str:
        """The measured values within the limits, as words ('max 310us within 20ms, p99.99 ...')."""
        return ", ".join(
            f"{stat} {format_ns(v)} within {format_ns(self.limits[stat])}" for stat, v in (self.measured or {}).items()
        )


def requirement_of(given: list[reqs.Requirement], cases: list[dict] | None = None, name: str = "") -> Budget | None:
    """The requirement advise weighs severities against (None without a latency limit); with a bundle's cases,
    what they measured of each limited statistic: the worst over the cases whose sample count carries it
    (a p99.99 needs 100,000 samples: requirements.needed_for)."""
    req = Budget(given, name=name)
    if req.budget_ns is None:
        return None
    if cases is not None:
        need = {r.stat: reqs.needed_for(r) or 0 for r in given if r.stat in req.limits}
        measured: dict[str, float] = {}
        for stat in req.limits:
            values = [v for r in cases if (v := _measured(r, reqs.STATS[stat][0], need.get(stat, 0))) is not None]
            if values:
                measured[stat] = max(values)
        req.measured = measured or None
    return req


def _measured(case: dict, key: str, need: int) -> float | None:
    """A case's statistic when it is a number its sample count carries, else None."""
    stats: dict = case["stats"] if isinstance(case.get("stats"), dict) else {}
    v, count = stats.get(key), stats.get("count")
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v or not isinstance(count, int):
        return None
    return v if count >= need else None


def judge(findings: list[dict], req: Budget) -> list[dict]:
    """Each blocker weighed against the requirement: a blocker only when the evidence says it threatens the
    limits, else major with "gain" saying what fixing it would gain. The evidence: a bundle's measured values
    (one beyond its limit: each blocker stays; every limit measured and met: none threatens them), else the
    finding's known effect (effect_ns) against the tightest limit (unknown: it stays). rt-limits is no
    latency: it stays."""
    out = []
    complete = bool(req.measured) and set(req.measured or {}) == set(req.limits)
    for f in findings:
        effect = f.get("effect_ns")
        gain = f"up to {format_ns(effect)}" if effect is not None else "an unknown share of the latency"
        seen = f"; measured {req.holds()}" if req.measured else ""
        note = None
        if f["severity"] != "blocker" or f["id"] == "rt-limits":
            pass
        elif req.broken():
            f = f | {"evidence": [*f["evidence"], f"{req.name}: {'; '.join(req.broken())}"]}
        elif complete:
            note = f"{req.name} holds as measured ({req.holds()}): fixing it gains {gain}"
        elif effect is not None and effect <= (req.budget_ns or 0):
            within = f"the {format_ns(req.budget_ns or 0)} of {req.name}{seen}"
            note = f"its known effect ({format_ns(effect)}) is within {within}: fixing it gains {gain}"
        out.append(f | {"severity": "major", "gain": note} if note else f)
    return out


def profile_budget_ns(profile: str | None) -> int | None:
    """The tightest latency limit (ns) of a requirement profile, which sets how deep an idle state may be."""
    req = requirement_of(list(reqs.profile(profile))) if profile else None
    return req.budget_ns if req else None


# ---------------------------------------------------------------- the settings the checks read, as values


def _per_cpu_text(values: Mapping[int, str | None]) -> str | None:
    """One value per CPU in words: 'performance' when all agree, else '0 performance; 1-3 powersave'."""
    known = {cpu: v for cpu, v in values.items() if v is not None}
    if not known:
        return None
    groups: dict[str, list[int]] = {}
    for cpu, v in sorted(known.items()):
        groups.setdefault(v, []).append(cpu)
    return next(iter(groups)) if len(groups) == 1 else "; ".join(f"{format_cpulist(c)} {v}" for v, c in groups.items())


def _word(value: Any, none: str = "none") -> str | None:
    """A recorded value as compare shows it: None stays None (not recorded), '' and 'absent' become `none`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value) if str(value) != "" else none


def _cmdline_setting(key: str) -> Callable[[Context], str | None]:
    """A kernel command line word's value ('none' where absent, None where the command line was not read)."""

    def read(c: Context) -> str | None:
        opts = c.fact("cmdline.rt_options")
        return None if not isinstance(opts, dict) else "none" if opts.get(key) is None else _word(opts[key])

    return read


def _governors(c: Context) -> str | None:
    return _per_cpu_text({e["cpu"]: str(e.get("governor") or "none") for e in c.cpufreq}) if c.cpufreq else None


def _idle_states_text(c: Context) -> str | None:
    if c.fact("cpuidle.per_cpu") is None:
        return None
    enabled = {
        e["cpu"]: ",".join(str(s.get("name")) for s in dicts(e.get("states")) if not s.get("disabled")) or "none"
        for e in c.idle
    }
    return _per_cpu_text(enabled) or "none"


def _watchdog_text(c: Context) -> str | None:
    w = c.tun.get("watchdog")
    if not w or w.get("watchdog") is None:
        return None
    return " ".join(f"{k}={w.get(k)}" for k in ("watchdog", "nmi_watchdog", "soft_watchdog")) + (
        f" cpumask={w['cpumask']}" if w.get("cpumask") else ""
    )


def _swap_text(c: Context) -> str | None:
    m = c.tun.get("memory")
    return None if m is None else (", ".join(m.get("swaps") or []) or "off")


def _irqbalance_text(c: Context) -> str | None:
    running = (c.tun.get("irqs") or {}).get("irqbalance")
    return None if running is None else "running" if running else "not running"


# setting -> (the check that reads it, its value from the recorded facts; None where not recorded)
SETTINGS: dict[str, tuple[str, Callable[[Context], str | None]]] = {
    "isolcpus": ("isolcpus", _cmdline_setting("isolcpus")),
    "nohz_full": ("isolcpus", _cmdline_setting("nohz_full")),
    "rcu_nocbs": ("isolcpus", _cmdline_setting("rcu_nocbs")),
    "irqaffinity": ("isolcpus", _cmdline_setting("irqaffinity")),
    "threadirqs": ("irq-thread-priority", _cmdline_setting("threadirqs")),
    "irqbalance": ("irq-affinity", _irqbalance_text),
    "rt-throttling": ("rt-throttling", lambda c: _word(c.fact("sched.rt_runtime_us"))),
    "governor": ("governor", _governors),
    "boost": ("governor", lambda c: _word(c.tun.get("boost"))),
    "idle states": ("cstates", _idle_states_text),
    "smt": ("smt", lambda c: _word(c.fact("cpu.smt_active"))),
    "timer-migration": ("timer-migration", lambda c: _word(c.fact("sched.timer_migration"))),
    "watchdog": ("watchdog", _watchdog_text),
    "thp": ("thp", lambda c: _word((c.tun.get("memory") or {}).get("thp"))),
    "ksm": ("thp", lambda c: _word((c.tun.get("memory") or {}).get("ksm_run"))),
    "numa-balancing": ("thp", lambda c: _word(c.fact("sched.numa_balancing"))),
    "swap": ("thp", _swap_text),
    "workqueue": ("workqueue", lambda c: _word(c.tun.get("workqueue_cpumask"))),
    "clocksource": ("clocksource", lambda c: _word(c.fact("clocksource.current"))),
}


def settings(facts: dict | None, tun: dict | None) -> dict[str, str]:
    """The tunable settings the checks read, as {setting: value} from recorded host facts (a bundle's
    facts-before and tuning-before); a setting not recorded is left out. `rtqual compare` names those that
    differ between bundles."""
    if not isinstance(facts, dict):
        return {}
    c = Context(facts, tun if isinstance(tun, dict) else {}, [0], DEFAULT_PRIORITY, None)
    values = {name: read(c) for name, (_, read) in SETTINGS.items()}
    return {name: v for name, v in values.items() if v is not None}


# ---------------------------------------------------------------- measured effects


def measurable(findings: list[dict]) -> list[dict]:
    """The findings whose fix can be applied at run time and written by rtqual (they have knobs)."""
    return [f for f in findings if f["runtime"] and f["knobs"]]


def arms_of(plan: dict | None) -> dict[str, tuple[str, int]]:
    """case id -> (arm, round) from the plan's cases ("advise": {"arm", "round"}, as `advise --measure` plans
    them); a case without one, or with one of the wrong kind, is in no arm."""
    out = {}
    for case in dicts((plan or {}).get("cases") if isinstance(plan, dict) else None):
        arm = case.get("advise")
        if not isinstance(arm, dict) or not isinstance(arm.get("arm"), str) or not isinstance(case.get("id"), str):
            continue
        if (r := whole(arm.get("round"), 1, MAX_ROUNDS)) is not None:
            out[case["id"]] = (arm["arm"], r)
    return out


def rounds_by_arm(cases: list[dict], arms: dict[str, tuple[str, int]]) -> dict[str, list[dict]]:
    """arm -> the statistics of its rounds that measured something, in round order, each with the changes
    that did not apply."""
    out: dict[str, list[dict]] = {}
    for c in cases:
        arm = arms.get(str(c.get("id")))
        stats: dict = c["stats"] if isinstance(c.get("stats"), dict) else {}
        if arm is None or not stats.get("count"):
            continue
        changes = dicts((c.get("conditions") or {}).get("changes") if isinstance(c.get("conditions"), dict) else None)
        out.setdefault(arm[0], []).append(
            {
                "round": arm[1],
                "case": c["id"],
                **{k: v if isinstance(v := stats.get(k), int | float) else None for k in STATS},
                "not_applied": sum(1 for r in changes if r.get("applied") is False),
                "applied": sum(1 for r in changes if r.get("applied") is True),
            }
        )
    return {arm: sorted(rounds, key=lambda r: r["round"]) for arm, rounds in out.items()}


def _summary(rounds: list[dict]) -> dict:
    """Each statistic's median over rounds and its spread (max - min over rounds)."""
    out: dict[str, Any] = {}
    for k in STATS:
        values = [r[k] for r in rounds if r.get(k) is not None]
        out[k] = round(statistics.median(values)) if values else None
        out[k.removesuffix("_ns") + "_spread_ns"] = (max(values) - min(values)) if values else None
    return out


def effect(before: list[dict], after: list[dict]) -> tuple[str, dict]:
    """The verdict of one fix and each statistic's change: 'better' when a statistic moved down by more than
    the two arms' spreads together and none moved up that way, 'worse' the other way round, 'mixed' for both,
    else 'no measurable effect'. Fewer than two rounds a side: 'not enough rounds'."""
    if len(before) < 2 or len(after) < 2:
        return "not enough rounds", {}
    b, a = _summary(before), _summary(after)
    change, down, up = {}, False, False
    for k in STATS:
        if b[k] is None or a[k] is None:
            continue
        name = k.removesuffix("_ns")
        delta = a[k] - b[k]
        noise = b[f"{name}_spread_ns"] + a[f"{name}_spread_ns"]
        change[name] = {"delta_ns": delta, "noise_ns": noise, "measurable": abs(delta) > noise}
        down |= delta < 0 and abs(delta) > noise
        up |= delta > 0 and abs(delta) > noise
    verdict = "mixed" if down and up else "better" if down else "worse" if up else "no measurable effect"
    return verdict, {k: v for k, v in change.items() if v["measurable"]} if verdict != "no measurable effect" else {}


def effects(plan: dict | None, model_cases: list[dict], findings: list[dict]) -> list[dict]:
    """The "measured" list of --json: per measured fix its before and after (median and spread of each
    statistic over rounds), the effect, the changes, the rounds, and how many of its writes applied; the
    rounds are the result cases the plan's cases name (arms_of)."""
    arms = rounds_by_arm(model_cases, arms_of(plan))
    base = arms.get(BASELINE, [])
    out = []
    for f in measurable(findings):
        after = arms.get(f["id"], [])
        verdict, change = effect(base, after)
        applied = {r["applied"] for r in after}
        out.append(
            {
                "id": f["id"],
                "before": _summary(base) if base else None,
                "after": _summary(after) if after else None,
                "effect": verdict if not after or max(applied) else "not applied",
                "change": change,
                "rounds": min(len(base), len(after)),
                "writes_not_applied": max((r["not_applied"] for r in after), default=0),
            }
        )
    return out


def kept_findings(plan: dict | None) -> list[dict] | None:
    """The findings `advise --measure` kept in its plan ("advise": {"findings"}), None when there are none:
    only those of a known check, with text fields of one plain line (a plan is a bundle's text, not ours)."""
    kept = plan.get("advise") if isinstance(plan, dict) else None
    if not isinstance(kept, dict) or not isinstance(kept.get("findings"), list):
        return None

    def plain(f: dict) -> bool:
        texts = [f.get("id"), f.get("why"), f.get("check"), *(f.get("evidence") or [None])]
        return (
            f.get("id") in (*CHECKS, "ioc-threads")
            and f.get("severity") in SEVERITIES
            and all(isinstance(t, str) and t.isprintable() for t in texts)
            and isinstance(f.get("fix"), str)
            and all(line.isprintable() for line in f["fix"].splitlines())
            and isinstance(f.get("runtime"), bool)
            and isinstance(f.get("knobs"), list)
            and isinstance(f.get("persistent"), dict)
        )

    return [f for f in dicts(kept["findings"]) if plain(f)]


def bundle_advice(
    plan: dict | None, facts: dict | None, tun: dict | None, cases: list[dict]
) -> tuple[list[dict], list[dict]]:
    """What to change for a bundle's host, and the measured effects: the findings `advise --measure` kept in
    its plan with the effects of its rounds, else the checks over the host facts the run recorded."""
    kept = kept_findings(plan)
    if kept is not None:
        return kept, effects(plan, cases, kept)
    if not isinstance(facts, dict):
        return [], []
    return advise(facts, tun if isinstance(tun, dict) else {})["findings"], []

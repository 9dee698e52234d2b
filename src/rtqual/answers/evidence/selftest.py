"""The selftest's judgement, pure: whether each injected stall of known size was caught (its largest sample in
[D-eps, D+delta]), how many natural spikes a case may have, whether the probe's histogram and percentiles agree
exactly with a recomputation from its raw samples, and the verdict; the text `rtqual selftest` and `rtqual show`
print. The cases are run by rtqual.selftest (docs/selftest.md gives the tolerances and why)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rtqual import probes as native_table
from rtqual.answers.verdict import run_verdict
from rtqual.probes.catalog import ALL_PROBES
from rtqual.results import bundle as bundle_mod
from rtqual.results import rawfile
from rtqual.results.bundle import Model
from rtqual.results.hist import Histogram

US, MS, S = 1_000, 1_000_000, 1_000_000_000
NATURAL_NS = 5 * S  # the natural-spike baseline: the timer alone on the CPU

SCHEMA_VERSION = 1

# Tolerances (docs/selftest.md says why these values)
EPS_MARGIN_NS = 200 * US  # eps = the probe's sampling period + this (wake-up cost, timer slack)
DELTA_FIXED_NS = 2 * MS  # delta = this + DELTA_SHARE of D (the wake after the stall, VM steal in it)
DELTA_SHARE = 0.05
NATURAL_SPIKES_ALLOWED = 1  # samples above D-eps outside every stall window, per case (+ K // 5)
PCT_KEYS = ("count", "min_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns")


def setup(probe: str) -> dict:
    """How a probe is measured here, from its own module (rtqual.probes.<name>.SELFTEST): "order" (its place),
    "period_ns" (a stimulus or deadline every period, 0: back to back), "params" ((cpu, other, duration text) ->
    its params, on CPU cpu, its other side on other), "quick_every_size", "blind" (the window in which it cannot
    time a stall on the CPU, printed with its table), "all_samples_wait_on_cpu" (its samples are in another
    CPU's slot, yet each times a wait on the CPU); {}: the selftest does not run it."""
    return (native_table.hook(probe, "SELFTEST") if probe in ALL_PROBES else None) or {}


def eps_ns(period_ns: int) -> int:
    """eps: a sample of a stall of D is at least D minus the sampling period (the stall may start just
    before a deadline), minus nothing else; the margin covers timer slack."""
    return period_ns + EPS_MARGIN_NS


def delta_ns(stall_ns: int) -> int:
    """delta: how far above D the stall's sample may be (the wake-up after the stall, VM steal)."""
    return DELTA_FIXED_NS + int(DELTA_SHARE * stall_ns)


def spikes_allowed(count: int, expected: float = 0.0) -> int:
    """Natural spikes above D-eps tolerated outside the stall windows of a case of `count` stalls, when
    the natural baseline lets `expected` of them fall in the stalls' span: a fixed allowance plus the
    expected number and two of its (Poisson) standard deviations, so a host's measured noise never fails
    the selftest, while a probe that reports spikes that were not injected does."""
    return NATURAL_SPIKES_ALLOWED + count // 5 + math.ceil(expected + 2 * math.sqrt(expected))


# -- pure checks ---------------------------------------------------------------------------------------


def judge_stalls(
    samples: list[tuple[int, int, int]],
    stalls: list[dict],
    stall_ns: int,
    count: int,
    period_ns: int,
    natural_rate: Any = None,
    spun_ns: int | None = None,
    cpu: int | None = None,
) -> dict:
    """One case: samples (cpu, time_ns, latency_ns) against the injector's stall records. A stall's window
    runs from its start to its end + delta + the period (its delayed sample wakes by then); its largest
    sample there is what the probe saw of it (stall_seen says how: whole, in part, merged or unseen). Every
    stall must be seen whole or, for at most the natural-spike tolerance, in part, merged with a host delay
    or wholly in the probe's blind window. The samples above D - eps outside every window in the stalls'
    span count against that tolerance too: spikes_allowed(K, expected), expected = the natural rate above
    D - eps (spikes per second: natural_rate's from the baseline, or this case's own outside the span if
    higher) times that span. spun_ns: the injector's real --stall (its header), so that a stall the host
    made longer (its spin ended late) is expected at its measured length; cpu: the slot whose samples are
    waits on the stalled CPU (None: every sample's)."""
    eps, problems = eps_ns(period_ns), []
    claimed = [int(s.get("claimed_ns") or stall_ns) for s in stalls]
    d = max(claimed) if claimed else stall_ns
    delta = delta_ns(d)
    windows = [(int(s["start_ns"]), int(s["end_ns"]) + delta + period_ns) for s in stalls]
    first = min((t for _, t, _ in samples), default=0)
    last = max((t for _, t, _ in samples), default=0)
    covered = sum(1 for lo, hi in windows if samples and first <= lo and hi <= last)
    on_cpu = [(t - lat, t) for c, t, lat in samples if cpu is None or c == cpu]
    seen = [stall_seen(samples, on_cpu, rec, c, spun_ns, eps, delta, period_ns) for rec, c in zip(stalls, claimed)]
    whole = sum(1 for v in seen if v["how"] == "whole")
    caught = sum(1 for v in seen if v["how"] in ("whole", "in part", "merged"))
    missed = sum(1 for v in seen if v["how"] == "missed")
    span = (windows[0][0], windows[-1][1]) if windows else (0, 0)
    above = [(t, lat) for _, t, lat in samples if lat > d - eps and span[0] <= t <= span[1]]
    extra = [lat for t, lat in above if not any(lo <= t <= hi for lo, hi in windows)]
    # the natural rate: the baseline's, or this case's own outside the stalls' span if higher (noise comes
    # in bursts: the baseline may have missed one)
    outside = sum(1 for _, t, lat in samples if lat > d - eps and not span[0] <= t <= span[1])
    outside_s = max((last - first) - (span[1] - span[0]), 0) / S
    rate = max(natural_rate(d - eps) if natural_rate else 0.0, outside / outside_s if outside_s > 0.5 else 0.0)
    expected = rate * (span[1] - span[0]) / S
    allowed = spikes_allowed(count, expected)
    host = [dict(v, index=k) for k, v in enumerate(seen) if v["how"] not in ("whole", "missed")]
    if len(stalls) != count:
        problems.append(f"the injector made {len(stalls)} of {count} stalls")
    if covered < len(stalls):
        problems.append(f"{len(stalls) - covered} stall(s) outside the probe's measurement")
    if missed:
        problems.append(f"{missed} stall(s) not seen in [D-eps, D+delta]")
    if len(extra) + len(host) > allowed:
        problems.append(
            f"{len(extra)} samples above D-eps outside the stalls and {len(host)} stall(s) seen in part, merged "
            f"or unseen (tolerance {allowed} together)"
        )
    got = [v["seen_ns"] for v in seen if v["seen_ns"] is not None]
    return {
        "stall_ns": stall_ns,
        "claimed_ns": d,
        "count": count,
        "stalls": len(stalls),
        "covered": covered,
        "caught": caught,
        "caught_whole": whole,
        "unseen": sum(1 for v in seen if v["how"] == "unseen"),
        "host": host,
        "above": len(above),
        "natural_spikes": len(extra),
        "natural_expected": round(expected, 3),
        "natural_allowed": allowed,
        "seen_min_ns": min(got) if got else None,
        "seen_max_ns": max(got) if got else None,
        "seen_ns": [v["seen_ns"] for v in seen],
        "eps_ns": eps,
        "delta_ns": delta,
        "window_ns": [d - eps, d + delta],
        "ok": not problems,
        "problems": problems,
    }


def stall_seen(
    samples: list[tuple[int, int, int]],
    on_cpu: list[tuple[int, int]],
    rec: dict,
    claimed_ns: int,
    spun_ns: int | None,
    eps: int,
    delta: int,
    period_ns: int,
) -> dict:
    """What the probe saw of one stall [a, b], D = its claimed length plus what the host added at its end
    (the spin ended after its planned length: the CPU was held from the injector then). Its largest sample
    in the window, waking at t after waiting from s = t - latency, is:
    - "whole": its latency in [D-eps, D+delta];
    - "in part": it woke at the stall's end (t - a in [D-eps, D+delta]) but began waiting only after
      s - a > eps into the stall: the probe was not timing on the CPU at its start (its blind window:
      the other side late with its stimulus, or the probe's own work between two samples);
    - "merged": it woke at the stall's end but had waited since a - s > eps before it: a host delay on
      the CPU ran into the stall (late_ns: how late the injector itself got the CPU);
    - "unseen": no wait on the stalled CPU overlaps the stall (the probe's blind window held all of it);
    - "missed": anything else (a lie, a probe that does not see the stall)."""
    a, b = int(rec["start_ns"]), int(rec["end_ns"])
    over = max(0, b - a - spun_ns) if spun_ns else 0
    late = max(0, a - int(rec["planned_ns"])) if rec.get("planned_ns") is not None else None
    d = claimed_ns + over
    inside = [(t, lat) for _, t, lat in samples if a <= t <= b + delta + period_ns]
    best = max(inside, key=lambda x: x[1], default=None)
    out = {"seen_ns": best[1] if best else None, "expected_ns": d, "host_end_ns": over, "late_ns": late}
    out |= {"blind_ns": 0, "merged_ns": 0}
    if best is not None:
        t, lat = best
        at_end = d - eps <= t - a <= d + delta
        if d - eps <= lat <= d + delta:
            return out | {"how": "whole"}
        if at_end and a + eps < t - lat < b:
            return out | {"how": "in part", "blind_ns": t - lat - a}
        if at_end and t - lat < a - eps:
            return out | {"how": "merged", "merged_ns": a - (t - lat)}
    if not any(s < b - eps and e > a + eps for s, e in on_cpu):
        return out | {"how": "unseen", "blind_ns": b - a}
    return out | {"how": "missed"}


def raw_hists(samples: Iterable[tuple[int, int, int]]) -> dict[int, Histogram]:
    """An exact histogram per CPU recomputed from raw samples (cpu, time_ns, latency_ns)."""
    out: dict[int, Histogram] = {}
    for cpu, _, lat in samples:
        out.setdefault(cpu, Histogram()).record(lat)
    return out


def hist_identity(recomputed: dict[int, Histogram], stored: dict[str, dict]) -> list[str]:
    """The probe's histograms (hist.json per CPU) against those recomputed from its raw samples: bucket
    for bucket, count, min, max and the exact sums must be equal. The differences, or []."""
    problems = []
    for cpu in sorted(set(recomputed) | {int(c) for c in stored}):
        mine = recomputed.get(cpu, Histogram())
        theirs = Histogram.from_record(stored[str(cpu)]) if str(cpu) in stored else Histogram()
        for key in ("count", "min_ns", "max_ns", "sum_ns", "sumsq_ns2"):
            if getattr(mine, key) != getattr(theirs, key):
                problems.append(f"CPU {cpu} {key}: raw {getattr(mine, key)}, histogram {getattr(theirs, key)}")
        if mine.counts != theirs.counts:
            diff = sorted(
                i for i in set(mine.counts) | set(theirs.counts) if mine.counts.get(i) != theirs.counts.get(i)
            )
            problems.append(f"CPU {cpu}: {len(diff)} bucket(s) differ from the raw samples (first index {diff[0]})")
    return problems


def percentile_identity(summary_cpus: list[dict], stored: dict[str, dict]) -> list[str]:
    """The C summary's statistics (the probe's summary record) against Python's from the same histogram
    (hist.py, as stats.py reports them): equal, the mean and deviation within 1 ns of rounding."""
    problems = []
    for row in summary_cpus:
        rec = stored.get(str(row.get("cpu")))
        if rec is None:
            problems.append(f"CPU {row.get('cpu')}: a summary but no histogram")
            continue
        py = Histogram.from_record(rec).stats()
        for key in PCT_KEYS:
            if int(row[key]) != int(py[key]):
                problems.append(f"CPU {row['cpu']} {key}: C {row[key]}, Python {py[key]}")
        for key in ("mean_ns", "stddev_ns"):
            if abs(int(row[key]) - int(py[key])) > 1:
                problems.append(f"CPU {row['cpu']} {key}: C {row[key]}, Python {py[key]}")
    return problems


def time_order(samples: list[tuple[int, int, int]]) -> int:
    """Backward steps of the raw samples' times per CPU (each slot's samples are recorded in order)."""
    back, last = 0, dict[int, int]()
    for cpu, t, _ in samples:
        if t < last.get(cpu, t):
            back += 1
        last[cpu] = t
    return back


def natural_spikes(samples: list[tuple[int, int, int]], thresholds_ns: Iterable[int], seconds: float) -> dict:
    """The baseline's samples above each threshold, and their rate per second: what a case may meet."""
    out = {}
    for thr in sorted(set(thresholds_ns)):
        n = sum(1 for _, _, lat in samples if lat > thr)
        out[str(thr)] = {"above": n, "per_s": n / seconds if seconds else 0.0}
    return out


def verdict(clock: dict, cases: list[dict], interrupted: bool = False, missing: bool = False) -> str:
    """The selftest's verdict, a run's (rtqual.answers.verdict): each case's probe verdict when its probe
    did not measure (skip, inconclusive, error), else pass or fail by its checks; the clock's check; a
    missing case is an error; an interrupted selftest is inconclusive."""
    probe = [c.get("probe_verdict", "pass") for c in cases]
    rows = [v if v not in ("pass", "completed", "fail") else _ok(c["ok"]) for v, c in zip(probe, cases)]
    return run_verdict([*rows, _ok(clock["ok"]), *(["error"] if missing else [])], interrupted)


def _ok(ok: bool) -> str:
    return "pass" if ok else "fail"


# -- reading a finished run ----------------------------------------------------------------------------


def _raw(model: Model, case_id: str) -> list[tuple[int, int, int]]:
    """The case's raw samples (cpu, time_ns, latency_ns); none when its raw.bin is missing or damaged."""
    try:
        f = model.raw_file(case_id)
    except bundle_mod.Unreadable:
        return []
    return [(cpu, t, lat) for cpu, t, lat, _ in rawfile.samples(f)] if f is not None else []


def _stream_records(model: Model, case_id: str) -> dict[str, Any]:
    """The header's clock, the summary's rows and the raw capture's state from the case's stream."""
    out: dict[str, Any] = {"clock": None, "summary": [], "raw": None}
    try:
        for rec in model.records(case_id, marks=('"header"', '"summary"')):
            if rec.get("type") == "header":
                out["clock"] = rec.get("clock")
            elif rec.get("type") == "summary":
                out["summary"], out["raw"] = rec.get("cpus") or [], rec.get("raw")
    except bundle_mod.Unreadable:
        pass
    return out


def analyse_case(model: Model, result: dict, plan_case: dict, natural_rate: Any = None) -> dict:
    """One case of a finished selftest run, checked: stalls, histogram, percentiles, clocks, time order."""
    st = plan_case["selftest"]
    samples = _raw(model, result["id"])
    stream = _stream_records(model, result["id"])
    try:
        stored = model.hists(result["id"])
    except bundle_mod.Unreadable:
        stored = {}
    load = next((ld for ld in result.get("loads") or [] if ld.get("type") == "inject"), None)
    row: dict[str, Any] = {
        "id": result["id"],
        "probe": st["probe"],
        "cpu": st["cpu"],
        "probe_verdict": result["verdict"],
    }
    raw_whole = bool(stream["raw"]) and not stream["raw"].get("truncated") and not stream["raw"].get("dropped")
    checks = {
        "hist": hist_identity(raw_hists(samples), stored) if raw_whole else ["raw capture incomplete"],
        "percentiles": percentile_identity(stream["summary"], stored),
        "time_order": [f"{n} backward step(s)" for n in [time_order(samples)] if n],
    }
    if load is not None:
        inj_clock = (load.get("injector_header") or {}).get("clock")
        if inj_clock != stream["clock"]:
            checks["clocks"] = [f"injector {inj_clock}, probe {stream['clock']}"]
        row.update(
            judge_stalls(
                samples,
                load.get("stalls") or [],
                st["stall_ns"],
                st["count"],
                setup(st["probe"])["period_ns"],
                natural_rate,
                spun_ns=((load.get("injector_header") or {}).get("params") or {}).get("stall_ns"),
                cpu=None if setup(st["probe"]).get("all_samples_wait_on_cpu") else st["cpu"],
            )
        )
        row["blind_window"] = setup(st["probe"]).get("blind", "")
    else:
        row.update(
            stall_ns=0,
            count=0,
            ok=True,
            problems=[],
            samples=len(samples),
            max_ns=max((s[2] for s in samples), default=0),
        )
    row["checks"] = {k: v for k, v in checks.items()}
    problems = [f"{k}: {p}" for k, v in checks.items() for p in v]
    if result["verdict"] not in ("pass", "completed", "fail"):  # a "fail" is a requirement's; none here
        problems.append(f"probe {result['verdict']}: {result.get('reason') or ''}".strip())
    row["problems"] = row["problems"] + problems
    row["ok"] = row["ok"] and not problems
    return row


def natural_rate_of(samples: list[tuple[int, int, int]], seconds: float) -> Any:
    """The baseline's spikes per second above a threshold, as a function of the threshold (ns)."""
    lats = sorted(lat for _, _, lat in samples)

    def rate(threshold_ns: int) -> float:
        above = len(lats) - next((i for i, lat in enumerate(lats) if lat > threshold_ns), len(lats))
        return above / seconds if seconds else 0.0

    return rate


def analyse(model: Model, clock: dict, plan_cases: list[dict], count: int) -> dict:
    """The selftest's answer from its finished bundle (selftest.json): the natural baseline first (its
    spike rate sets each case's tolerance), then every injected case."""
    data = model
    by_id = {c["id"]: c for c in plan_cases}
    results = [r for r in data["cases"] if r["id"] in by_id]
    base = next((r for r in results if not by_id[r["id"]]["selftest"]["stall_ns"]), None)
    seconds = NATURAL_NS / S
    base_samples = _raw(model, base["id"]) if base else []
    rate = natural_rate_of(base_samples, seconds) if base else None
    rows = [analyse_case(model, r, by_id[r["id"]], rate) for r in results]
    missing = [c["id"] for c in plan_cases if c["id"] not in {r["id"] for r in rows}]
    natural = next((r for r in rows if not r["stall_ns"]), None)
    injected = [r for r in rows if r["stall_ns"]]
    out = {
        "schema_version": SCHEMA_VERSION,
        "bundle": str(model.path),
        "cpu": plan_cases[0]["selftest"]["cpu"] if plan_cases else None,
        "count": count,
        "tolerances": {
            "eps_ns": f"sampling period + {EPS_MARGIN_NS}",
            "delta_ns": f"{DELTA_FIXED_NS} + {DELTA_SHARE} x D",
            "natural_spikes_allowed": f"{NATURAL_SPIKES_ALLOWED} + K // 5 + ceil(e + 2 sqrt(e)), e = the "
            "natural spikes per second above D-eps (the baseline's or the case's own outside the stalls, the "
            "higher) x the stalls' span; the stalls seen in part, merged with a host delay or unseen count "
            "against it too",
            "host_end": "a stall whose spin ended late (the host held the CPU) is expected at its measured length",
        },
        "clock": clock,
        "natural": None,
        "cases": injected,
        "missing": missing,
    }
    if natural is not None:
        thresholds = [r["window_ns"][0] for r in injected]
        out["natural"] = {**natural, "seconds": seconds, "above": natural_spikes(base_samples, thresholds, seconds)}
    out["verdict"] = verdict(clock, rows, data["manifest"].get("status") == "interrupted", bool(missing))
    return out


# -- printing ------------------------------------------------------------------------------------------


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / MS:.2f}"


def text(result: dict) -> str:
    """The selftest as tables: the clock, the natural spikes, one table per probe, the verdict."""
    c = result["clock"]
    lines = [
        f"rtqual selftest on CPU {result['cpu']}: {result['count']} stalls per case (bundle {result['bundle']})",
        f"clock: {c['clock']} resolution {c['resolution_ns']} ns, {c['reads']} reads, {c['backward_steps']} "
        f"backward, step {c['min_step_ns']}..{c['max_step_ns']} ns: {'ok' if c['ok'] else 'FAIL'}",
    ]
    nat = result.get("natural")
    if nat:
        above = ", ".join(f">{_ms(int(k))} ms: {v['above']}" for k, v in nat["above"].items())
        checks = "ok" if nat["ok"] else "FAIL: " + "; ".join(nat["problems"])
        lines.append(f"natural spikes (timer alone, {nat['seconds']:.0f} s, max {_ms(nat['max_ns'])} ms): {above}")
        lines.append(f"  its histogram and percentiles against its raw samples: {checks}")
    for probe in dict.fromkeys(r["probe"] for r in result["cases"]):
        lines += [
            "",
            f"{probe}",
            "  stall ms  caught  above  natural  seen min..max ms  window ms       hist  pct  verdict",
        ]
        for r in (r for r in result["cases"] if r["probe"] == probe):
            chk = r["checks"]
            lo, hi = r["window_ns"]
            ok = {k: "ok" if not v else "FAIL" for k, v in chk.items()}
            seen = f"{_ms(r['seen_min_ns'])}..{_ms(r['seen_max_ns'])}"
            lines.append(
                f"  {_ms(r['claimed_ns']):>8}  {r['caught']}/{r['count']:<4}  {r['above']:>5}  "
                f"{r['natural_spikes']:>3}/{r['natural_allowed']:<3}  {seen:<16}  [{_ms(lo)}, {_ms(hi)}]  "
                f"{ok['hist']:<4}  {ok['percentiles']:<3}  {'pass' if r['ok'] else 'FAIL'}"
            )
            lines += [f"    {_host_line(h)}" for h in r.get("host") or []]
            lines += [f"    {p}" for p in r["problems"]]
        blind = next((r.get("blind_window") for r in result["cases"] if r["probe"] == probe), None)
        if blind:
            lines.append(f"  blind window: {blind}")
    if result.get("missing"):
        lines.append(f"cases that did not run: {', '.join(result['missing'])}")
    lines += [f"note: {n}" for n in result.get("notes") or []]
    lines += ["", f"verdict: {result['verdict']}"]
    return "\n".join(lines)


def _host_line(h: dict) -> str:
    """One stall the probe saw only in part, merged with a host delay, or not at all: what and by how much."""
    n, seen = h["index"] + 1, _ms(h["seen_ns"])
    if h["how"] == "in part":
        return f"stall {n}: seen {seen} ms, timed from {_ms(h['blind_ns'])} ms into it (its start in the blind window)"
    if h["how"] == "merged":
        late = "" if h["late_ns"] is None else f"; the injector got the CPU {_ms(h['late_ns'])} ms late"
        return f"stall {n}: seen {seen} ms, merged with a host delay of {_ms(h['merged_ns'])} ms before it{late}"
    return f"stall {n}: unseen, no wait on the stalled CPU during it (all {_ms(h['blind_ns'])} ms in the blind window)"


def stored(model: Model) -> dict | None:
    """A bundle's selftest.json, if it is a selftest's."""
    return model.selftest

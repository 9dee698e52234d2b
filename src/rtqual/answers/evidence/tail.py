"""The worst case beyond the run: extreme-value analysis of block maxima (rtqual tail, docs/tail.md).

Peaks over a threshold on the per-block (1 s) maxima, declustered by runs, fitted with a generalized Pareto
distribution (scipy.stats.genpareto); return levels with profile-likelihood 95 % intervals; checks with their
p-values (Ljung-Box, KPSS, Anderson-Darling, a 70/30 backtest); one verdict: bounded, light, heavy,
insufficient or unfit. EVT extrapolates the conditions the run exercised: it cannot predict a disturbance the
run never met. scipy and statsmodels are imported on first use (`pip install 'rtqual[tail]'`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from rtqual.errors import RtqError

PERIODS_S = (3600.0, 86400.0, 365 * 86400.0)  # return periods always reported: 1 h, 1 d, 1 y
CURVE_S = (60.0, 600.0, 3600.0, 21600.0, 86400.0, 7 * 86400.0, 30 * 86400.0, 365 * 86400.0)  # the figure's
MIN_CLUSTERS = 50  # a threshold needs this many declustered exceedances
RUN_BLOCKS = 1  # runs declustering: a cluster ends after this many blocks at or below the threshold
MAX_EXCEEDED = 0.1  # a threshold exceeded in more than this share of blocks: independent bursts would merge
ALPHA = 0.01  # a check fails below this p-value (four checks: a sound tail fails one about 4 % of the time)
CHI2_95 = 3.841458820694124  # chi-square(1) 95 % quantile: the profile-likelihood interval's drop is half of it
BAD = 1e30  # a log-likelihood this low: outside the distribution's support
MIN_LEVELS = 10  # distinct block maxima (and cluster peaks) a fit needs: fewer are steps a GPD cannot describe
LIMITS = "EVT extrapolates what the run exercised; it cannot predict conditions the run never met"


def _libs() -> tuple[Any, Any, Any]:
    """numpy, scipy.stats and scipy.optimize, or one line saying what to install."""
    try:
        import numpy as np
        import statsmodels  # noqa: F401  (the checks import it where they need it)
        from scipy import optimize, stats
    except ImportError:
        raise RtqError("rtqual tail needs scipy and statsmodels: .venv/bin/pip install 'rtqual[tail]'") from None
    return np, stats, optimize


def decluster(values: Any, u: float, run: int = RUN_BLOCKS) -> tuple[list[float], list[int], int]:
    """Runs declustering: (cluster peaks, the block index of each peak, blocks above u). A cluster is a run of
    blocks above u that ends after `run` blocks at or below it, so one disturbance counts once."""
    peaks: list[float] = []
    where: list[int] = []
    above = 0
    gap = run
    for i, x in enumerate(values):
        if x > u:
            above += 1
            if gap >= run:
                peaks.append(float(x))
                where.append(i)
            elif x > peaks[-1]:
                peaks[-1], where[-1] = float(x), i
            gap = 0
        else:
            gap += 1
    return peaks, where, above


def loglik(xi: float, sigma: float, y: Any) -> float:
    """The generalized Pareto log-likelihood of excesses y (the formula; -BAD outside the support, a finite
    floor the optimizers can compare)."""
    np = _libs()[0]
    if sigma <= 0:
        return -BAD
    z = y / sigma
    if abs(xi) < 1e-9:
        return float(-len(y) * math.log(sigma) - z.sum())
    t = 1 + xi * z
    if (t <= 0).any():
        return -BAD
    return float(-len(y) * math.log(sigma) - (1 + 1 / xi) * np.log(t).sum())


def level(u: float, xi: float, sigma: float, m: float) -> float:
    """The level exceeded once in `m` clusters' time on average: u + sigma/xi (m^xi - 1)."""
    return u + (sigma * math.log(m) if abs(xi) < 1e-9 else sigma / xi * (m**xi - 1))


def _sigma_for(x: float, u: float, xi: float, m: float) -> float:
    """The scale that puts the level of m clusters at x for this shape (the return-level parametrisation)."""
    return (x - u) / math.log(m) if abs(xi) < 1e-9 else (x - u) * xi / (m**xi - 1)


def _interval(f: Any, best: float, lo: float, hi_step: float) -> tuple[float | None, float | None]:
    """Where f (the profile log-likelihood less the 95 % cut, positive at `best`) crosses zero on each side;
    None when it does not within the search (an interval open on that side)."""
    optimize = _libs()[2]
    lower = None
    if f(lo) < 0:
        lower = optimize.brentq(f, lo, best, xtol=1e-9 * max(1.0, abs(best)))
    upper, x = None, best
    for _ in range(40):
        nxt = x + hi_step
        if f(nxt) < 0:
            upper = optimize.brentq(f, x, nxt, xtol=1e-9 * max(1.0, abs(best)))
            break
        x, hi_step = nxt, hi_step * 2
    return lower, upper


def fit(peaks: list[float], u: float, rate_per_s: float, periods_s: list[float]) -> dict:
    """GPD fit of the cluster peaks above u: shape xi and its profile 95 % interval, the scale, and each
    period's return level (cluster rate_per_s) with its profile-likelihood 95 % interval. Values in ns."""
    np, stats, optimize = _libs()
    unit = float(np.mean(np.asarray(peaks, dtype=float) - u)) or 1.0  # excesses in units of their mean: a tame optimum
    y = (np.asarray(peaks, dtype=float) - u) / unit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xi, _, sigma = (float(v) for v in stats.genpareto.fit(y, 0.0, floc=0, scale=1.0))
    best = loglik(xi, sigma, y)
    cut = CHI2_95 / 2

    def prof_xi(x: float) -> float:
        floor = math.log(max(-x * float(y.max()), 1e-12)) + 1e-9 if x < 0 else math.log(sigma) - 12
        r = optimize.minimize_scalar(
            lambda ls: -loglik(x, math.exp(ls), y), bounds=(floor, math.log(sigma) + 12), method="bounded"
        )
        return -float(r.fun)

    best = max(best, prof_xi(xi))
    lo, hi = _interval(lambda x: prof_xi(x) - best + cut, xi, max(-1.5, xi - 3), 0.25)
    out: dict = {"xi": float(xi), "sigma_ns": float(sigma * unit), "xi_ci": [lo, hi], "levels": []}
    for period in periods_s:
        m = rate_per_s * period
        if m <= 1:
            out["levels"].append({"period_s": period, "value_ns": None, "ci_ns": [None, None]})
            continue
        x_hat = level(0.0, xi, sigma, m)

        def prof_x(x: float, m: float = m) -> float:
            r = optimize.minimize_scalar(
                lambda s: -loglik(s, _sigma_for(x, 0.0, s, m), y), bounds=(-1.5, 2.0), method="bounded"
            )
            return max(-float(r.fun), loglik(0.0, _sigma_for(x, 0.0, 0.0, m), y))

        top = max(best, prof_x(x_hat))
        xlo, xhi = _interval(lambda x, t=top: prof_x(x) - t + cut, x_hat, x_hat * 1e-6, x_hat)
        out["levels"].append(
            {
                "period_s": period,
                "value_ns": u + x_hat * unit,
                "ci_ns": [u + (xlo or 0.0) * unit, None if xhi is None else u + xhi * unit],
            }
        )
    return out


def shape_mle(peaks: list[float], u: float) -> float:
    """The maximum-likelihood shape of the excesses over u (scipy.stats.genpareto.fit, location 0)."""
    np, stats, _ = _libs()
    y = np.asarray(peaks, dtype=float) - u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.genpareto.fit(y / y.mean(), 0.0, floc=0, scale=1.0)[0])  # from the exponential


def candidates(values: Any) -> list[float]:
    """Candidate thresholds: 9 quantiles of the block maxima, log-spaced in the share of blocks above them from
    10 % down to the share leaving MIN_CLUSTERS blocks (for a 1 kHz probe in 1 s blocks: the sample quantiles
    p99.99 and above, since the maximum of m samples stays below the sample quantile q with probability q^m)."""
    np = _libs()[0]
    low = min(MAX_EXCEEDED, MIN_CLUSTERS / len(values))
    shares = np.geomspace(MAX_EXCEEDED, low, 9)
    return sorted({float(np.quantile(values, 1 - s)) for s in shares})


def choose(values: Any, duration_s: float) -> tuple[dict | None, list[dict]]:
    """The threshold by the documented rule (docs/tail.md): among the candidates exceeded in at most half the
    blocks and leaving MIN_CLUSTERS clusters, the lowest whose mean residual life is straight above it and whose
    shape every higher candidate's estimate agrees with (inside its asymptotic 95 % interval, +-1.96 (1 + xi) /
    sqrt(clusters)); else the highest one.
    Returns (the chosen fit or None, every candidate examined)."""
    np = _libs()[0]
    tried: list[dict] = []
    for u in candidates(values):
        peaks, _, above = decluster(values, u)
        row: dict = {"threshold_ns": u, "clusters": len(peaks), "exceedances": above, "usable": False}
        tried.append(row)
        if above > MAX_EXCEEDED * len(values) or len(peaks) < MIN_CLUSTERS:
            continue
        row["mean_excess_ns"] = float(np.mean(np.asarray(peaks) - u))
        xi = shape_mle(peaks, u)
        half = 1.96 * (1 + xi) / math.sqrt(len(peaks))  # asymptotic sd of the MLE: (1 + xi) / sqrt(n)
        row.update(usable=True, xi=xi, xi_ci=[xi - half, xi + half])
    usable = [r for r in tried if r["usable"]]
    for k, r in enumerate(usable):
        higher = usable[k:]
        lo, hi = (
            (-math.inf if r["xi_ci"][0] is None else r["xi_ci"][0]),
            (math.inf if r["xi_ci"][1] is None else r["xi_ci"][1]),
        )
        stable = all(lo <= h["xi"] <= hi for h in higher)
        if stable and _straight([h["threshold_ns"] for h in higher], [h["mean_excess_ns"] for h in higher]):
            return r, tried
    return (usable[-1] if usable else None), tried


def _straight(us: list[float], means: list[float]) -> bool:
    """Mean residual life straight (R^2 >= 0.8 of a line through it), or too few points to say otherwise."""
    np = _libs()[0]
    if len(us) < 3 or np.ptp(means) == 0:
        return True
    r = np.corrcoef(us, means)[0, 1]
    return bool(r * r >= 0.8)


def dither(values: list[int]) -> Any:
    """Values as floats; coarse ones (all multiples of a resolution, e.g. 1 us) spread uniformly inside their
    step (a fixed seed: reproducible), so ties from a coarse clock do not distort the fit. The step is the
    values' common divisor, never more than the smallest gap between two of them (a run whose blocks all
    peak at 5 ms has no 5 ms clock: its values are not spread)."""
    np = _libs()[0]
    a = np.asarray(values, dtype=float)
    head = sorted({int(v) for v in values[:2000]})
    gaps = [b - x for x, b in zip(head, head[1:])]
    step = 0
    for v in head:
        step = math.gcd(step, v)
    step = min(step, *gaps) if gaps else 0
    if step > 1:
        a = a + np.random.default_rng(0).uniform(-step / 2, step / 2, len(a)) * (a > 0)
    return a


def block_checks(values: Any, block_s: float) -> dict:
    """Independence (Ljung-Box) and stationarity (KPSS, level) of the block maxima, in blocks giving at least
    30 points (per minute when the run allows), each with its p-value and whether it passed. KPSS reports
    0.01 for "0.01 or less": stationarity passes only above ALPHA."""
    np = _libs()[0]
    from statsmodels.stats.diagnostic import acorr_ljungbox
    from statsmodels.tsa.stattools import kpss

    k = max(1, min(int(60 / block_s) or 1, len(values) // 30))
    coarse = np.log1p([float(np.max(values[i : i + k])) for i in range(0, len(values) - k + 1, k)])
    flat = bool(np.ptp(coarse) == 0)
    lags = max(1, min(10, len(coarse) // 5))
    p = 1.0 if flat else float(acorr_ljungbox(coarse, lags=[lags])["lb_pvalue"].iloc[0])
    out: dict = {"independence": {"test": "Ljung-Box", "blocks_s": k * block_s, "lags": lags, "p_value": p}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = 1.0 if flat else float(kpss(coarse, regression="c", nlags="auto")[1])
    out["stationarity"] = {"test": "KPSS (level)", "blocks_s": k * block_s, "p_value": p}
    out["independence"]["passed"] = bool(out["independence"]["p_value"] >= ALPHA)
    out["stationarity"]["passed"] = bool(p > ALPHA)
    return out


def fit_check(u: float, peaks: list[float]) -> dict:
    """Goodness of fit of the excesses to the generalized Pareto: Anderson-Darling with its p-value by
    parametric bootstrap (scipy.stats.goodness_of_fit, 99 samples, each refitted)."""
    np, stats, _ = _libs()
    y = np.asarray(peaks, dtype=float) - u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = stats.goodness_of_fit(
            stats.genpareto,
            y / y.mean(),
            known_params={"loc": 0},
            statistic="ad",
            n_mc_samples=99,
            rng=np.random.default_rng(0),
        )
    p = float(r.pvalue)  # (1 + samples at least as far) / 100: 0.01 is its smallest, "0.01 or less": a failure
    return {"test": "Anderson-Darling (parametric bootstrap, 99)", "p_value": p, "passed": bool(p > ALPHA)}


def backtest(values: Any, block_s: float, u: float) -> dict:
    """Fit on the first 70 % of the blocks at the same threshold; the levels expected to be exceeded 1 and 5
    times in the other 30 %; how often they were (clusters), with a two-sided Poisson p-value each."""
    np, stats, _ = _libs()
    cut = int(len(values) * 0.7)
    first, rest = values[:cut], values[cut:]
    peaks, _, _ = decluster(first, u)
    out: dict = {"fit_s": cut * block_s, "test_s": len(rest) * block_s, "levels": [], "passed": None}
    if len(peaks) < MIN_CLUSTERS // 2 or not len(rest):
        out["note"] = f"{len(peaks)} clusters in the first 70 %: too few to fit"
        return out
    rate = len(peaks) / (cut * block_s)
    periods = [len(rest) * block_s / e for e in (5.0, 1.0)]
    f = fit(peaks, u, rate, periods)
    for expected, lv in zip((5.0, 1.0), f["levels"]):
        if lv["value_ns"] is None:
            continue
        seen = len(decluster(rest, lv["value_ns"])[0])
        p = 2 * min(stats.poisson.cdf(seen, expected), stats.poisson.sf(seen - 1, expected))
        lv_out = {"value_ns": lv["value_ns"], "expected": expected, "observed": seen, "p_value": min(1.0, float(p))}
        out["levels"].append(lv_out)
    out["p_value"] = min((lv["p_value"] for lv in out["levels"]), default=None)
    out["passed"] = None if out["p_value"] is None else bool(out["p_value"] >= ALPHA)
    return out


def analyse(
    series: list[int],
    block_s: float,
    samples: int,
    label: str,
    cpu: str,
    periods_s: tuple[float, ...] = (),
    with_checks: bool = True,
) -> dict:
    """One case and CPU's tail: the issue's JSON object (label, cpu, threshold_ns, exceedances, clusters,
    shape, verdict, end_point_ns, return_levels, checks, backtest) plus note, needed_s and observed peaks."""
    periods = sorted({*PERIODS_S, *periods_s})
    values = dither(series)
    duration_s = len(values) * block_s
    out: dict = {
        "label": label,
        "cpu": cpu,
        "blocks": len(values),
        "block_s": block_s,
        "duration_s": duration_s,
        "threshold_ns": None,
        "exceedances": 0,
        "clusters": 0,
        "shape": {"xi": None, "ci": [None, None]},
        "verdict": "insufficient",
        "end_point_ns": None,
        "return_levels": [{"period_s": p, "value_ns": None, "ci_ns": [None, None]} for p in periods],
        "checks": {},
        "backtest": {},
        "failed": [],
        "needed_s": None,
        "observed": [],
        "limits": LIMITS,
    }
    if len(values) < 10:
        out["needed_s"] = needed_s(0, duration_s, block_s)
        out["note"] = (
            f"{len(values)} block(s) of {block_s:g} s: too few to analyse (a tail needs minutes at least): "
            f"run at least {out['needed_s']:.0f} s"
        )
        return out
    flat = degenerate(series)
    if flat:
        out["note"] = flat
        return out
    try:
        return _fitted(out, series, values, block_s, periods, with_checks)
    except (ValueError, ArithmeticError, RuntimeError) as e:  # scipy's optimizers on data they cannot fit
        out.update(verdict="unfit", end_point_ns=None, failed=["fit"], note=f"analysis failed: the tail fit ({e})")
        out["return_levels"] = [{"period_s": p, "value_ns": None, "ci_ns": [None, None]} for p in periods]
        return out


def needed_s(clusters: int, duration_s: float, block_s: float) -> float:
    """How long a run gives MIN_CLUSTERS clusters: at the rate of the clusters seen (none seen: fewer than one
    in this run), and never less than the threshold rule itself needs (MIN_CLUSTERS clusters above a level at
    most MAX_EXCEEDED of the blocks exceed: MIN_CLUSTERS / MAX_EXCEEDED blocks)."""
    floor_s = MIN_CLUSTERS / MAX_EXCEEDED * block_s
    return max(floor_s, MIN_CLUSTERS * duration_s / max(clusters, 1))


def degenerate(series: list[int], what: str = "block maxima") -> str | None:
    """Why values cannot be fitted (all equal, a few levels), or None."""
    levels = sorted(set(series))
    if len(levels) == 1:
        return f"every one of the {len(series)} {what} is {levels[0]:,} ns: no tail to fit"
    if len(levels) < MIN_LEVELS:
        shown = ", ".join(f"{v:,}" for v in levels)
        return f"only {len(levels)} distinct {what} ({shown} ns): too few for a tail fit (needs {MIN_LEVELS})"
    return None


def _fitted(out: dict, series: list[int], values: Any, block_s: float, periods: list[float], checks: bool) -> dict:
    """analyse()'s fit once the data can be fitted: the threshold, the fit, its checks, the verdict."""
    with_checks, duration_s = checks, out["duration_s"]
    if with_checks:
        out["checks"] = block_checks(values, block_s)
    chosen, tried = choose(values, duration_s)
    if chosen is None:
        seen = max((r["clusters"] for r in tried if r["exceedances"] <= MAX_EXCEEDED * len(values)), default=0)
        out["needed_s"] = needed_s(seen or max((r["clusters"] for r in tried), default=0), duration_s, block_s)
        more = f"run at least {out['needed_s']:.0f} s ({out['needed_s'] - duration_s:.0f} s longer)"
        out["note"] = f"{seen} clusters at best, {MIN_CLUSTERS} needed: {more}"
        out["candidates"] = tried
        return out
    u = chosen["threshold_ns"]
    peaks, where, above = decluster(values, u)
    flat = degenerate([series[i] for i in where], f"cluster peaks above {u:,.0f} ns")
    if flat:
        out.update(threshold_ns=u, exceedances=above, clusters=len(peaks), candidates=tried, note=flat)
        return out
    rate = len(peaks) / duration_s
    f = fit(peaks, u, rate, sorted({*periods, *(CURVE_S if with_checks else ())}))
    out["curve"] = f["levels"]
    f["levels"] = [r for r in f["levels"] if r["period_s"] in periods]
    out.update(threshold_ns=u, exceedances=above, clusters=len(peaks), candidates=tried)
    out["shape"] = {"xi": f["xi"], "ci": f["xi_ci"]}
    out["return_levels"] = f["levels"]
    order = sorted(peaks, reverse=True)[:200]
    out["observed"] = [[duration_s / (i + 1), v] for i, v in enumerate(order)]  # empirical return periods
    lo, hi = f["xi_ci"]
    if hi is not None and hi < 0:
        shape = "bounded"
        out["end_point_ns"] = u - f["sigma_ns"] / f["xi"]
    elif lo is not None and lo > 0:
        shape = "heavy"
    else:
        shape = "light"
    out["verdict"] = shape
    if with_checks:
        out["checks"]["fit"] = fit_check(u, peaks)
        out["backtest"] = backtest(values, block_s, u)
        failed = [name for name, c in out["checks"].items() if not c["passed"]]
        failed += ["backtest"] if out["backtest"].get("passed") is False else []
        out["failed"] = failed
        if failed:
            out["verdict"], out["end_point_ns"] = "unfit", None
    out["note"] = note(out)
    return out


def note(case: dict) -> str:
    """The case's tail in one sentence."""
    v = case["verdict"]
    if v == "insufficient":
        return case.get("note", "too few exceedances")
    if v == "unfit" and case.get("note", "").startswith("analysis failed"):
        return case["note"]
    if v == "unfit":
        return f"the tail model does not fit: {', '.join(case['failed'])} check failed; no return level is claimed"
    if v == "heavy":
        return heavy_sentence(case)
    day = next((r for r in case["return_levels"] if r["period_s"] == 86400.0), None)
    return level_sentence(day) if day else v


def _in(ns: float | None, scale: float) -> str:
    return "?" if ns is None else f"{ns / scale:.3g}"


def level_sentence(r: dict) -> str:
    """'once a day: ≤ 1.9 ms (95 % CI 1.6–2.4 ms)' for one return level."""
    names = {3600.0: "an hour", 86400.0: "a day", 365 * 86400.0: "a year"}
    name = names.get(r["period_s"], f"every {r['period_s']:g} s")
    lo, hi = r["ci_ns"]
    biggest = max(x for x in (r["value_ns"], hi, 0.0) if x is not None)
    scale, unit = (1e6, "ms") if biggest >= 1e6 else (1e3, "us")
    top = "unbounded" if hi is None else _in(hi, scale)
    return f"once {name}: ≤ {_in(r['value_ns'], scale)} {unit} (95 % CI {_in(lo, scale)}–{top} {unit})"


def heavy_sentence(case: dict) -> str:
    """'no bound on this host: the tail is heavy (ξ = 0.3, CI 0.2–0.4)'."""
    xi, (lo, hi) = case["shape"]["xi"], case["shape"]["ci"]
    f = lambda x: "?" if x is None else f"{x:.2g}"
    return f"no bound on this host: the tail is heavy (ξ = {f(xi)}, CI {f(lo)}–{f(hi)})"


def answer_line(case: dict, period_s: float = 86400.0) -> str:
    """The sentence an answer gives for a case's tail: a return level with its interval, or why there is none."""
    if case["verdict"] in ("bounded", "light"):
        r = next((r for r in case["return_levels"] if r["period_s"] == period_s), None)
        if r and r["value_ns"] is not None:
            return level_sentence(r)
    return note(case)


def judge(period_s: float, op: str, limit_ns: float, case: dict | None) -> tuple[str, float | None, str]:
    """A requirement on a return level (`return(1d) <= 2ms`): pass when the 95 % interval's upper end is within
    the limit, fail when its lower end is beyond it, inconclusive otherwise or when the tail is heavy,
    insufficient or unfit. Returns (verdict, the level in ns or None, a note)."""
    if case is None:
        return "inconclusive", None, "no block maxima in the stream (no tail analysis)"
    if "unavailable" in case:
        return "inconclusive", None, case["unavailable"]
    r = next((r for r in case["return_levels"] if r["period_s"] == period_s), None)
    if case["verdict"] not in ("bounded", "light") or r is None or r["value_ns"] is None:
        return "inconclusive", None, note(case)
    lo, hi = r["ci_ns"]
    sentence = level_sentence(r)
    if op in ("<", "<="):
        if hi is not None and (hi < limit_ns or (op == "<=" and hi == limit_ns)):
            return "pass", r["value_ns"], sentence
        if lo is not None and (lo > limit_ns or (op == "<" and lo == limit_ns)):
            return "fail", r["value_ns"], sentence
    elif op in (">", ">="):
        if lo is not None and lo >= limit_ns:
            return "pass", r["value_ns"], sentence
        if hi is not None and hi < limit_ns:
            return "fail", r["value_ns"], sentence
    return "inconclusive", r["value_ns"], sentence + ": the interval straddles the limit"


def for_requirements(blocks: Any, reqs: Any) -> dict | None:
    """The tail of a case's CPUs together (the "all" row) at the requirements' return periods, analysed only
    when a requirement asks for a return level and the stream held block maxima; else None."""
    periods = tuple(r.period_s for r in reqs if r.stat == "return")
    if blocks is None or not blocks.per_cpu or not periods:
        return None
    try:
        return analyse(blocks.series(None), blocks.block_ns / 1e9, blocks.samples(None), "", "all", periods)
    except RtqError as e:  # no scipy here: the requirement stays undecided, the run keeps its results
        return {"unavailable": str(e)}


def requirement_verdict(req: Any, case: dict | None) -> dict:
    """A `return(PERIOD) OP LIMIT` requirement judged (the keys of requirements.evaluate's answer)."""
    verdict, value, words = judge(req.period_s, req.op, req.limit, case)
    margin = None if value is None or verdict == "inconclusive" else req.margin(value)  # its sign by the op
    return {
        "requirement": req.text,
        "stat": "return",
        "op": req.op,
        "limit": req.limit,
        "unit": "ns",
        "value": value,
        "margin": margin,
        "margin_pct": None if margin is None or not req.limit else 100.0 * margin / req.limit,
        "verdict": verdict,
        "note": words,
    }

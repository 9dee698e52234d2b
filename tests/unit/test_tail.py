"""rtqual tail's extreme-value analysis on synthetic streams with known tails (docs/tail.md "Validation")."""

from __future__ import annotations

import json
import multiprocessing
import os
import warnings
from concurrent.futures import ProcessPoolExecutor

import pytest

import tail_synth  # tests/: synthetic streams with known tails
from rtqual.answers import requirements
from rtqual.answers.evidence import tail
from rtqual.results.blockmax import BlockMaxima, from_records, from_samples

CASES = [(xi, clustered) for xi in (-0.2, 0.0, 0.2) for clustered in (False, True)]


def _fit(series: list[int], period_s: float) -> tuple[dict, dict]:
    """The analysis without its checks (the fast part the coverage test repeats): the case and its level."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = tail.analyse(series, 1.0, 0, "synthetic", "all", with_checks=False)
    return case, next(r for r in case["return_levels"] if r["period_s"] == period_s)


def _interval(series: list[int], period_s: float) -> tuple[float | None, float | None]:
    """The 95 % interval of one return level as analyse() computes it (the same threshold rule, declustering
    and profile likelihood; only the one period, to keep 600 repetitions fast)."""
    values = tail.dither(series)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen, _ = tail.choose(values, float(len(values)))
        assert chosen is not None
        peaks, _, _ = tail.decluster(values, chosen["threshold_ns"])
        f = tail.fit(peaks, chosen["threshold_ns"], len(peaks) / len(values), [period_s])
    lo, hi = f["levels"][0]["ci_ns"]
    return lo, hi


def _holds(seed: int, xi: float, clustered: bool, truth: float) -> bool:
    """Whether the 95 % interval of the 1-hour level of seeded stream `seed` holds the true level."""
    lo, hi = _interval(tail_synth.stream(seed, xi, clustered=clustered), 3600.0)
    return lo is not None and lo <= truth and (hi is None or truth <= hi)


@pytest.mark.slow
@pytest.mark.parametrize("xi,clustered", CASES)
def test_coverage_of_the_one_hour_level(xi: float, clustered: bool) -> None:
    """The true 1-hour level lies inside the reported 95 % interval in at least 90 of 100 seeded streams (the
    streams fitted on every CPU: each fit is independent of the others)."""
    truth = tail_synth.truth(xi, 3600.0)
    n = 100
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("fork")) as pool:
        inside = sum(pool.map(_holds, range(n), [xi] * n, [clustered] * n, [truth] * n, chunksize=10))
    assert inside >= 90, f"xi={xi} clustered={clustered}: {inside}/100 intervals hold the true level {truth:.0f} ns"


@pytest.mark.parametrize("xi", [-0.2, 0.2])
def test_the_shape_sign_comes_out_right_on_a_long_stream(xi: float) -> None:
    case, _ = _fit(tail_synth.stream(7, xi, seconds=6 * 3600), 3600.0)
    assert (case["shape"]["xi"] > 0) == (xi > 0), case["shape"]


def test_a_heavy_tail_is_never_reported_bounded() -> None:
    for seed in range(10):
        case, _ = _fit(tail_synth.stream(seed, 0.4, seconds=3600), 3600.0)
        assert case["verdict"] != "bounded", (seed, case["shape"])
        assert case["end_point_ns"] is None


def test_a_step_change_is_flagged_by_the_stationarity_check() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = tail.analyse(tail_synth.stream(3, 0.0, step=True), 1.0, 0, "step", "all")
    assert not case["checks"]["stationarity"]["passed"], case["checks"]
    assert case["verdict"] == "unfit" and "stationarity" in case["failed"]


def test_a_stationary_stream_gives_the_issue_json_with_checks() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = tail.analyse(tail_synth.stream(5, -0.2), 1.0, 3_600_000, "x", "0", periods_s=(600.0,))
    json.dumps(case)  # plain JSON types
    for key in ("label", "cpu", "threshold_ns", "exceedances", "clusters", "shape", "verdict", "end_point_ns"):
        assert key in case
    assert case["clusters"] >= tail.MIN_CLUSTERS and case["exceedances"] >= case["clusters"]
    assert [r["period_s"] for r in case["return_levels"]] == [600.0, *tail.PERIODS_S]
    for r in case["return_levels"]:
        lo, hi = r["ci_ns"]
        assert lo <= r["value_ns"] and (hi is None or r["value_ns"] <= hi)
    levels = [r["value_ns"] for r in case["return_levels"]]
    assert levels == sorted(levels)
    assert {"independence", "stationarity", "fit"} <= set(case["checks"])
    assert all(0 <= c["p_value"] <= 1 for c in case["checks"].values())
    assert case["backtest"]["levels"] and case["backtest"]["test_s"] > 0


def test_a_short_run_is_insufficient_and_says_how_long_to_run() -> None:
    case = tail.analyse(tail_synth.stream(1, 0.0, seconds=30), 1.0, 30_000, "short", "all")
    assert case["verdict"] == "insufficient" and case["return_levels"][0]["value_ns"] is None
    assert case["needed_s"] is None or case["needed_s"] > 30


def test_runs_declustering_counts_one_burst_once() -> None:
    peaks, where, above = tail.decluster([1, 5, 6, 1, 1, 7, 1, 9, 9, 1], 4, run=1)
    assert peaks == [6, 7, 9] and where == [2, 5, 7] and above == 5


def test_requirement_judgement_uses_the_interval() -> None:
    case = {"verdict": "light", "return_levels": [{"period_s": 86400.0, "value_ns": 1.9e6, "ci_ns": [1.6e6, 2.4e6]}]}
    assert tail.judge(86400.0, "<=", 3e6, case)[0] == "pass"
    assert tail.judge(86400.0, "<=", 1e6, case)[0] == "fail"
    assert tail.judge(86400.0, "<=", 2e6, case)[0] == "inconclusive"
    assert tail.answer_line(case) == "once a day: ≤ 1.9 ms (95 % CI 1.6–2.4 ms)"
    assert tail.level_sentence({"period_s": 3600.0, "value_ns": 85e3, "ci_ns": [78e3, None]}) == (
        "once an hour: ≤ 85 us (95 % CI 78–unbounded us)"
    )
    heavy = dict(case, verdict="heavy", shape={"xi": 0.3, "ci": [0.2, 0.4]})
    assert tail.judge(86400.0, "<=", 3e6, heavy)[0] == "inconclusive"
    assert tail.answer_line(heavy) == "no bound on this host: the tail is heavy (ξ = 0.3, CI 0.2–0.4)"


def test_block_maxima_from_progress_records_and_from_samples() -> None:
    recs = [{"type": "header", "params": {"progress_ms": 500}}]
    recs += [{"type": "progress", "cpus": [{"cpu": 0, "count": i, "window_max_ns": 10 * i}]} for i in range(1, 5)]
    bm = from_records(recs)
    assert bm.block_ns == 500_000_000 and bm.series(0) == [10, 20, 30, 40] and bm.samples(0) == 4
    assert bm.coarsen(1_000_000_000).series(0) == [20, 40]
    raw = from_samples([(0, 0, 5), (1, 10, 7), (0, 2_500_000_000, 9), (0, 1, 6)])
    assert raw.series(0) == [6, 0, 9] and raw.series(1) == [7, 0, 0] and raw.series() == [7, 0, 9]


def test_block_maxima_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from rtqual.results import blockmax

    monkeypatch.setattr(blockmax, "MAX_BLOCKS", 8)
    bm = BlockMaxima()
    for i in range(20):
        bm.add(0, i)
    assert len(bm.series(0)) < 8 and bm.block_ns > 1_000_000_000 and max(bm.series(0)) == 19


def test_return_requirements_parse_and_judge_on_the_tail() -> None:
    from rtqual.answers import requirements
    from rtqual.errors import RtqError

    r = requirements.parse("return(1d) <= 2ms")
    assert (r.stat, r.op, r.limit, r.period_s, r.unit) == ("return", "<=", 2_000_000, 86400.0, "ns")
    assert requirements.parse(" return ( 90m ) < 1ms").period_s == 5400.0
    for bad in ("return(soon) <= 2ms", "return(1d) <= 2", "return() <= 1ms"):
        with pytest.raises(RtqError, match="^--require 'return"):
            requirements.parse(bad)
    light = {"verdict": "light", "threshold_ns": 1.0}
    light["return_levels"] = [{"period_s": 86400.0, "value_ns": 1.9e6, "ci_ns": [1.6e6, 2.4e6]}]
    assert requirements.evaluate(r, {"count": 10}, tail_case=light)["verdict"] == "inconclusive"
    passed = requirements.evaluate(requirements.parse("return(1d) <= 3ms"), {}, tail_case=light)
    assert passed["verdict"] == "pass" and passed["value"] == 1.9e6 and "once a day" in passed["note"]
    assert requirements.describe(passed).startswith("return(1d) <= 3ms: pass (1.9ms")
    assert requirements.evaluate(r, {"count": 10}, tail_case=None)["verdict"] == "inconclusive"


def test_a_jitterdebugger_samples_raw_feeds_the_same_analysis(tmp_path, capsys) -> None:
    """samples.raw (u32 thread, i64 s, i64 ns, u64 latency in us): timestamped samples cut into 1 s blocks."""
    import struct

    from rtqual import cli

    series = tail_synth.stream(21, -0.2, seconds=1200)
    with open(tmp_path / "samples.raw", "wb") as f:
        for second, top in enumerate(series):
            for thread in (0, 1):
                f.write(struct.pack("<IqqQ", thread, 100 + second, 1000, 3))
                f.write(struct.pack("<IqqQ", thread, 100 + second, 500_000_000, top // 1000 - thread))
    (tmp_path / "results.json").write_text(json.dumps({"sysinfo": {"resolution_in_ns": 1000}}))
    assert cli.main(["tail", str(tmp_path), "--json"]) == 0
    cases = json.loads(capsys.readouterr().out)["cases"]
    assert [c["cpu"] for c in cases] == ["0", "1", "all"]
    assert all(c["blocks"] == 1200 and c["verdict"] != "insufficient" for c in cases)
    assert cases[0]["threshold_ns"] % 1000 != 0  # microsecond ties spread inside their step


def test_the_fit_check_fails_excesses_that_are_not_generalized_pareto():
    """The bootstrap's smallest p-value is 1/100 = ALPHA: it must read as a failure, or the check could never
    fail. Two narrow clumps far apart are no generalized Pareto; a generalized Pareto sample passes."""
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    good = stats.genpareto.rvs(0.1, size=200, random_state=rng) + 5
    bad = np.concatenate([rng.uniform(0, 0.1, 100), rng.uniform(10, 10.1, 100)]) + 5
    assert tail.fit_check(5, list(good))["passed"] is True
    failed = tail.fit_check(5, list(bad))
    assert failed["passed"] is False and failed["p_value"] <= tail.ALPHA


# ---- degenerate tails, damaged block maxima, a short run (issues 34 class 4 and 35 item 8)

MAX_LEVEL_CASES = {
    "every block exactly 5 ms": [5_000_000] * 1800,
    "two levels": [20_000 + 80_000 * (i % 10 == 0) for i in range(1800)],
    "three distinct values": [10_000 + 1000 * (i % 3) for i in range(1800)],
}


@pytest.mark.parametrize("name", MAX_LEVEL_CASES)
def test_a_degenerate_tail_is_insufficient_with_the_reason_never_a_level_above_what_was_seen(name: str) -> None:
    series = MAX_LEVEL_CASES[name]
    case = tail.analyse(series, 1.0, 1800 * 1000, name, "all", (86400.0,))
    assert case["verdict"] == "insufficient" and case["end_point_ns"] is None
    assert all(r["value_ns"] is None for r in case["return_levels"])
    assert "distinct" in case["note"] or "no tail to fit" in case["note"]
    r = requirements.gather(["return(1d) <= 7ms"], None)[0]
    assert tail.requirement_verdict(r, case)["verdict"] == "inconclusive"  # never failed on a max of 5 ms


def test_dither_spreads_a_clock_step_not_the_values_common_divisor() -> None:
    assert list(tail.dither([5_000_000] * 50)) == [5_000_000.0] * 50
    spread = tail.dither([1000 * (i % 40 + 10) for i in range(400)])
    assert max(abs(a - b) for a, b in zip(spread, [1000 * (i % 40 + 10) for i in range(400)])) <= 500


def test_one_huge_block_among_small_ones_ends_in_a_verdict_not_an_exception() -> None:
    import random

    rng = random.Random(1)
    series = [rng.randint(20_000, 100_000) for _ in range(1799)] + [1_000_000_000]
    case = tail.analyse(series, 1.0, 1800 * 1000, "spike", "all", (86400.0,))
    assert case["verdict"] in ("insufficient", "unfit", "bounded", "light", "heavy")
    if case["verdict"] == "unfit":
        assert case["note"].startswith("analysis failed") and tail.note(case) == case["note"]


def test_raw_samples_far_apart_make_the_blocks_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from rtqual.results import blockmax

    t0 = time.monotonic()
    bm = from_samples([(0, 0, 5_000), (0, 2**62, 7_000)])
    assert time.monotonic() - t0 < 5  # was once per second of span: 4.6e9 iterations
    assert len(bm.series(0)) <= blockmax.MAX_BLOCKS // 2 and bm.series(0)[0] == 5_000 and bm.series(0)[-1] == 7_000
    case = tail.analyse(bm.series(0), bm.block_ns / 1e9, 2, "far", "0")
    assert case["verdict"] == "insufficient"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "12", -1, True, 2**64])
def test_a_block_maximum_that_is_not_a_whole_number_is_damage(bad) -> None:
    from rtqual.results.blockmax import Damaged
    from rtqual.results.stream import read_stream

    good = {"type": "progress", "cpus": [{"cpu": 0, "count": 1, "min_ns": 1, "window_max_ns": 10}]}
    bad_rec = {
        "type": "progress",
        "cpus": [{"cpu": 1, "count": 1, "min_ns": 1, "window_max_ns": 5}, {"cpu": 0, "window_max_ns": bad}],
    }
    with pytest.raises(Damaged) as e:
        from_records([good, bad_rec])
    assert "window_max_ns" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(Damaged):
        from_records([{"type": "progress", "cpus": [{"cpu": 0, "count": bad, "window_max_ns": 1}]}])
    s = read_stream(json.dumps(r) + "\n" for r in (good, bad_rec, good))  # NaN/Infinity as JSON writes them
    assert s.blocks.series(0) == [10, 10] and s.blocks.series(1) == [] and any("window_max_ns" in p for p in s.problems)


def test_a_short_run_says_how_long_to_run_even_with_no_usable_threshold() -> None:
    """15 one-second blocks, 12 of them over 2 ms: no candidate is exceeded by at most 10 % of the blocks (was
    "0 clusters at best, 50 needed: no threshold exceeded in the run", needed_s null)."""
    series = [2_000_000 + 10_000 * i for i in range(12)] + [50_000, 60_000, 70_000]
    case = tail.analyse(series, 1.0, 15_000, "short", "all")
    assert case["verdict"] == "insufficient"
    assert isinstance(case["needed_s"], float) and case["needed_s"] >= tail.MIN_CLUSTERS / tail.MAX_EXCEEDED
    assert "run at least" in case["note"] and "no threshold exceeded" not in case["note"]
    few = tail.analyse(series[:5], 1.0, 5_000, "shorter", "all")
    assert few["needed_s"] and "run at least" in few["note"]


def test_an_imported_jitterdebugger_run_keeps_its_per_second_maxima(tmp_path, capsys) -> None:
    """The import of a run with samples.raw keeps each thread's per-second maxima (the case's stream, through the
    door), so that `rtqual tail` of the imported bundle has the blocks of the folder itself (not "0 blocks")."""
    import struct

    from rtqual import cli
    from rtqual.publish.imports import jitterdebugger
    from rtqual.publish.tail import case_blocks
    from rtqual.results import blockmax
    from rtqual.results import bundle as bundle_mod

    run = tmp_path / "run"
    run.mkdir()
    hist: dict[int, dict[str, int]] = {0: {}, 1: {}}
    with open(run / "samples.raw", "wb") as f:
        for second in range(600):
            for thread in (0, 1):
                for nsec, value in ((1000, 3), (500_000_000, 10 + (second * 7 + thread) % 50)):
                    f.write(struct.pack("<IqqQ", thread, 100 + second, nsec, value))
                    hist[thread][str(value)] = hist[thread].get(str(value), 0) + 1
    threads = {
        str(t): {"histogram": h, "count": 1200, "min": 3, "max": max(map(int, h)), "avg": 5.0} for t, h in hist.items()
    }
    (run / "results.json").write_text(json.dumps({"version": 3, "sysinfo": {"resolution_in_ns": 1000}, "cpu": threads}))
    assert cli.main(["import", "jitterdebugger", str(run), "-o", str(tmp_path / "b")]) == 0
    assert "warning" not in capsys.readouterr().err
    model = bundle_mod.load(tmp_path / "b")
    got = case_blocks(model, model.cases[0])
    want = blockmax.from_samples(jitterdebugger.timed_samples(run))
    assert got.cpus == [0, 1] and got.block_ns == 1_000_000_000 and got.samples(0) == 1200
    for cpu in (0, 1):  # the import's values are its histograms' (the bucket's upper edge: +999 ns)
        assert got.series(cpu) == [v + 999 for v in want.series(cpu)] and len(got.series(cpu)) == 600
    assert model.bad_files == {} and not model.damage

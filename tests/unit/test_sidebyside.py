"""The paired rounds of the side-by-side benchmarks (benchmarks/sidebyside.py): pair ratios, their median and
its bootstrap interval, the alternating order, and the errors (no rounds, a side that is not > 0)."""

import importlib.util
import statistics
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "sidebyside", Path(__file__).resolve().parents[2] / "benchmarks" / "sidebyside.py"
)
assert _SPEC and _SPEC.loader
sbs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sbs)

PAIRS = [(2.0, 1.0), (3.0, 3.0), (1.0, 2.0), (6.0, 4.0), (5.0, 5.0)]  # ratios 2, 1, 0.5, 1.5, 1


def test_pair_ratios_and_their_median():
    r = sbs.pair_ratios(PAIRS)
    assert r == [2.0, 1.0, 0.5, 1.5, 1.0]
    assert statistics.median(r) == 1.0


@pytest.mark.parametrize("pairs", [[], [(1.0, 0.0)], [(0.0, 1.0)], [(2.0, 1.0), (-1.0, 1.0)]])
def test_no_round_or_a_side_not_above_zero_is_an_error(pairs):
    with pytest.raises(ValueError):
        sbs.pair_ratios(pairs)


def test_interval_holds_the_median_within_the_rounds_and_is_reproducible():
    r = sbs.pair_ratios(PAIRS)
    lo, hi = sbs.bootstrap_interval(r)
    assert min(r) <= lo <= statistics.median(r) <= hi <= max(r)
    assert sbs.bootstrap_interval(r) == (lo, hi)
    assert sbs.bootstrap_interval([1.03] * 7) == (1.03, 1.03)  # no spread, no width


def test_interval_narrows_with_more_rounds_and_rejects_bad_input():
    few = [1.0, 1.1, 0.9, 1.05, 0.95]
    lo5, hi5 = sbs.bootstrap_interval(few)
    lo40, hi40 = sbs.bootstrap_interval(few * 8)
    assert hi40 - lo40 < hi5 - lo5
    with pytest.raises(ValueError):
        sbs.bootstrap_interval([])
    with pytest.raises(ValueError):
        sbs.bootstrap_interval(few, level=1.0)


def test_compare_alternates_the_order_and_cancels_a_common_swing(capsys):
    levels = [43e3, 126e3, 126e3, 43e3, 80e3, 43e3]  # the host's level, the same for both sides of a round
    calls: list[str] = []

    def side(name: str, scale: float):
        def run() -> dict:
            calls.append(name)
            x = levels[(len(calls) - 1) // 2] * scale
            return {"median_ns": x, "p99_ns": 2 * x, "max_ns": 3 * x}

        return run

    ratios = sbs.compare(len(levels), side("ours", 1.05), side("ref", 1.0), "ref")
    assert calls == ["ours", "ref", "ref", "ours"] * 3
    for v in ratios.values():
        assert v == pytest.approx([1.05] * len(levels))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("round 0 (rtqual first)") and out[1].startswith("round 1 (ref first)")
    assert out[-3].split()[:4] == ["median", "1.050", "[1.050,", "1.050]"]
    assert "(rounds: 1.050, 1.050, 1.050, 1.050, 1.050, 1.050)" in out[-3]


def test_compare_with_a_zero_round_exits_with_one_line():
    zero = {"median_ns": 0, "p99_ns": 1, "max_ns": 1}
    one = {"median_ns": 1, "p99_ns": 1, "max_ns": 1}
    with pytest.raises(SystemExit) as e:
        sbs.compare(2, lambda: zero, lambda: one, "ref")
    assert "round 0" in str(e.value) and "\n" not in str(e.value)

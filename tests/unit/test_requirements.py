"""Requirements: the grammar, verdict arithmetic on known histograms, honest sample counts."""

import pytest

from rtqual.answers import requirements as rq
from rtqual.answers.verdict import judge, worst
from rtqual.errors import RtqError
from rtqual.results.hist import Histogram


def case(values_ns, overruns=0):
    h = Histogram()
    for v in values_ns:
        h.record(v)
    s = h.stats()
    s["overruns"] = overruns
    return s, h


def verdict(text, values_ns, overruns=0, run_ns=None):
    s, h = case(values_ns, overruns)
    return rq.evaluate(rq.parse(text), s, h, run_ns)


@pytest.mark.parametrize(
    "text,stat,op,limit",
    [
        ("p99 <= 100us", "p99", "<=", 100_000),
        ("max<20ms", "max", "<", 20_000_000),
        ("p99.999 < 1s", "p99.999", "<", 1e9),
        ("over(100us) <= 0.1%", "over", "<=", 0.1),
        ("over( 1ms ) < 5", "over", "<", 5.0),
        ("overruns == 0", "overruns", "==", 0),
        ("count >= 1000", "count", ">=", 1000),
        ("stddev > 1ns", "stddev", ">", 1),
    ],
)
def test_grammar(text, stat, op, limit):
    r = rq.parse(text)
    assert (r.stat, r.op, r.limit) == (stat, op, limit)


@pytest.mark.parametrize(
    "text,words",
    [
        ("p98 < 1ms", "unknown statistic 'p98'"),
        ("max < 10", "not a duration"),
        ("over(1ms) <= 200%", "not between 0 and 100"),
        ("count >= 1.5", "not a whole number"),
        ("max ~ 1ms", "expected STAT OP LIMIT"),
        ("", "expected STAT OP LIMIT"),
        ("over(x) < 1%", "not a duration"),
        ("over(1ms) < lots", "not a percentage"),
        ("max\n~ 1ms", "expected STAT OP LIMIT"),
    ],
)
def test_malformed_requirements_are_one_line_naming_the_expression(text, words):
    with pytest.raises(RtqError) as e:
        rq.parse(text)
    msg = str(e.value)
    assert words in msg and f"'{text}'".replace("\n", "\\n") in msg and "\n" not in msg and e.value.exit_code == 1


def test_verdicts_value_limit_margin():
    values = [i * 1000 for i in range(1, 2001)]  # 1..2000 us, exactly
    r = verdict("max <= 2.5ms", values)
    assert (r["verdict"], r["value"], r["margin"]) == ("pass", 2_000_000, 500_000)
    assert r["margin_pct"] == pytest.approx(20.0) and "not a worst case" in r["note"]
    r = verdict("mean < 1ms", values)
    assert r["verdict"] == "fail" and r["value"] == pytest.approx(1_000_500) and r["margin"] < 0
    assert verdict("min >= 1us", values)["verdict"] == "pass"
    assert verdict("min > 1us", values)["verdict"] == "fail"
    assert verdict("count == 2000", values)["verdict"] == "pass"
    assert verdict("overruns == 0", values, overruns=1)["verdict"] == "fail"
    r = verdict("over(1ms) <= 60%", values)  # 1000 of 2000 above 1 ms
    assert (r["verdict"], r["value"]) == ("pass", 50.0)
    assert verdict("over(1ms) < 50%", values)["verdict"] == "fail"


def test_a_percentile_the_sample_count_cannot_carry_is_inconclusive_and_says_how_long():
    values = [10_000] * 2000
    r = verdict("p99.99 <= 1ms", values, run_ns=2_000_000_000)
    assert r["verdict"] == "inconclusive"
    assert "100,000 samples" in r["note"] and "2,000" in r["note"] and "run about 100s" in r["note"]
    assert verdict("p99 <= 1ms", values)["verdict"] == "pass"  # 2000 >= 1000 needed
    assert verdict("p99.9 <= 1ms", values)["verdict"] == "inconclusive"  # needs 10 000


def test_too_few_samples_to_pass_but_enough_to_fail():
    # 2000 samples, 100 of them at 5 ms: p99.99 <= 1 ms fails whatever a longer run adds
    values = [10_000] * 1900 + [5_000_000] * 100
    assert verdict("p99.99 <= 1ms", values)["verdict"] == "fail"
    assert verdict("over(1ms) <= 0.1%", values)["verdict"] == "fail"
    # a single sample above: a longer run could still pass
    assert verdict("p99.99 <= 1ms", [10_000] * 1999 + [5_000_000])["verdict"] == "inconclusive"


def test_no_samples_is_inconclusive():
    r = rq.evaluate(rq.parse("max < 1ms"), {"count": 0}, Histogram())
    assert r["verdict"] == "inconclusive" and r["note"] == "no samples"


def test_profiles_parse_and_legacy_shorthands():
    for name in rq.PROFILES:
        assert rq.profile(name)
    with pytest.raises(RtqError, match="unknown profile 'nope'"):
        rq.profile("nope")
    reqs = rq.legacy({"max_ns": 200_000, "p99_ns": 50_000})
    assert [(r.stat, r.op, r.limit) for r in reqs] == [("max", "<=", 200_000), ("p99", "<=", 50_000)]


def test_worst_and_describe():
    assert worst([]) == "pass" and worst(["pass", "inconclusive"]) == "inconclusive"
    assert worst(["inconclusive", "fail", "pass"]) == "fail"
    line = rq.describe(verdict("max <= 2.5ms", [1000, 2_000_000]))
    assert line.startswith("max <= 2.5ms: pass (2ms, 500us to spare")


def test_judge_makes_the_case_verdict_the_worse_one():
    s, h = case([10_000] * 2000)
    ok = {"verdict": "pass", "reason": "completed", "stats": s, "params": {"duration_ns": 2 * 10**9}}
    r = judge(ok, rq.gather(["max <= 1ms", "overruns == 0"], None), h)
    assert r["verdict"] == "pass" and r["reason"] == "completed (2 requirement(s) met)"
    r = judge(ok, rq.gather(["max <= 1ms", "p99.99 <= 1ms"], None), h)
    assert r["verdict"] == "inconclusive" and "p99.99 needs at least 100,000 samples" in r["reason"]
    r = judge(ok, rq.gather(["p99.99 <= 1ms", "max < 5us"], None), h)
    assert r["verdict"] == "fail" and r["reason"].startswith("requirement not met: max < 5us: fail")
    assert judge(dict(ok, verdict="error"), rq.gather(["max < 5us"], None), h)["verdict"] == "error"
    assert judge(ok, [], h) is ok


def test_gather_checks_every_text_and_puts_the_profile_first():
    assert rq.texts(rq.gather(["p50 < 1ms"], "1khz-loop"))[-1] == "p50 < 1ms"
    assert rq.texts(rq.gather(None, "kek-50hz"))[0] == "max < 20ms"
    with pytest.raises(RtqError, match="--require 'p50 < 1'"):
        rq.gather(["p50 < 1"], None)


# ---- hardening (issue 34 class 5): ASCII digits, bounded magnitudes, every parsed requirement evaluable


@pytest.mark.parametrize(
    "text,words",
    [
        ("count >= ²", "not a whole number"),
        ("overruns == ³", "not a whole number"),
        ("count >= ١٠", "not a whole number"),  # Arabic-Indic digits: int() would take them
        ("max <= ١ms", "not a duration"),
        ("over(100us) <= ١%", "not a percentage"),
        ("over(100us) <= nan%", "not a percentage"),
        ("over(100us) <= inf", "not a percentage"),
        ("over(100us) <= 1e-3%", "not a percentage"),
        ("return(" + "9" * 320 + "d) <= 2ms", "longer than"),
        ("max <= " + "9" * 30 + "s", "longer than"),
        ("count >= " + "9" * 40, "not a whole number"),
        ("over(100us) <= 0.00001%", "finer than one sample in a million"),
    ],
)
def test_non_ascii_huge_or_unevaluable_requirements_are_one_line(text, words):
    with pytest.raises(RtqError) as e:
        rq.gather([text], None)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_scenario_list_with_a_superscript_count_is_one_line():
    from rtqual import scenario

    toml = '[[case]]\nlabel = "t"\nprobe = "timer"\nrequirements = ["count >= 1", "overruns == ³"]\n'
    with pytest.raises(RtqError) as e:
        scenario.loads(toml, "s.toml")
    assert "requirements[2]" in str(e.value) and "not a whole number" in str(e.value)


GRID = [
    f"{lhs} {op} {rhs}"
    for lhs, rhs in [
        *((s, lim) for s in rq.STATS for lim in ("0ns", "1ns", "100us", "9223372036854775807ns")),
        *(("over(100us)", p) for p in ("0%", "0.0001%", "0.00005%", "0.5", "100%")),
        *(("over(0ns)", p) for p in ("1%",)),
        *((c, n) for c in rq.COUNTS for n in ("0", "1", "9223372036854775807")),
        *(("return(1d)", lim) for lim in ("0ns", "2ms")),
        ("return(1ns)", "1ms"),
    ]
    for op in rq.OPS
]


@pytest.mark.parametrize("text", GRID)
def test_every_requirement_the_parser_takes_is_evaluable(text):
    """What parses is judged, planned and described without an exception: on no samples, on a few, on a
    histogram, on --duration auto's arithmetic (the ZeroDivisionError of over(100us) <= 0.00001%)."""
    from rtqual.answers import planning

    try:
        (r,) = rq.gather([text], None)
    except RtqError:
        return  # refused at the door, in one line: fine
    for values in ([], [1000], [1000, 2_000_000, 3]):
        s, h = case(values)
        v = rq.evaluate(r, s, h, 10**9, None, None, None)
        assert v["verdict"] in ("pass", "fail", "inconclusive")
        assert "\n" not in rq.describe(v)
    planning.samples_needed(r)
    planning.auto_duration("timer", {"interval_ns": 1_000_000, "cpus": [0]}, [r], planning.AUTO_CAP_NS)


def test_a_lower_bound_margin_has_the_right_sign():
    v = verdict("min >= 1us", [5000, 6000])
    assert v["verdict"] == "pass" and v["margin"] > 0 and "to spare" in rq.describe(v)
    v = verdict("min >= 10us", [5000, 6000])
    assert v["verdict"] == "fail" and v["margin"] < 0 and "under the limit" in rq.describe(v)
    assert "over the limit" not in rq.describe(v)


def test_a_return_level_lower_bound_that_passes_is_not_over_the_limit():
    from rtqual.answers.evidence import tail

    fitted = {
        "verdict": "bounded",
        "return_levels": [{"period_s": 86400.0, "value_ns": 5_000_000.0, "ci_ns": [4_000_000.0, 6_000_000.0]}],
    }
    (r,) = rq.gather(["return(1d) >= 1ms"], None)
    v = tail.requirement_verdict(r, fitted)
    assert v["verdict"] == "pass" and v["margin"] == 4_000_000.0
    assert "to spare" in rq.describe(v) and "over the limit" not in rq.describe(v)
    (r,) = rq.gather(["return(1d) <= 10ms"], None)
    assert tail.requirement_verdict(r, fitted)["margin"] == 5_000_000.0

"""Run-length planning: expected samples per probe kind, the statistics and requirements they decide, the
duration --duration auto chooses (and its cap), and the timer baseline long enough for p99.9."""

import pytest

from rtqual import cli, scenario
from rtqual.answers import planning
from rtqual.answers.requirements import gather, needed_samples, parse, texts
from rtqual.errors import RtqError
from rtqual.probes.catalog import check_params, probe_case
from rtqual.scenario import single

MS, S = 1_000_000, 1_000_000_000


def case(probe: str, cpus=(0, 1), **params) -> dict:
    """A plan case of PROBE with PARAMS (as the scenario file gives them)."""
    return probe_case(probe, check_params(probe, params, ""), list(cpus), "001")


@pytest.mark.parametrize(
    "probe,cpus,params,samples",
    [
        ("timer", (0, 1), {"interval": "1ms", "duration": "5s"}, 10_000),  # one sample per CPU per period
        ("timer", (0,), {"interval": "1ms", "duration": "5s"}, 5_000),
        ("timer", (0, 1, 2, 3), {"interval": "500us", "loops": 300}, 1_200),  # loops are per CPU
        ("timer", (0,), {"interval": "3ms", "duration": "10ms"}, 3),  # whole periods only
        ("event", (0,), {"rate": 1000, "duration": "10s"}, 10_000),
        ("event", (0,), {"rate": 3, "duration": "1s"}, 3),  # period 1 s // 3, as the probe computes it
        ("event", (0,), {"loops": 777}, 777),
        ("ioc", (0,), {"duration": "10s"}, 500),  # 50 Hz default
        ("ca-rtt", (0,), {"put": "X", "rate": 20, "duration": "1m"}, 1_200),
        ("rhealstone", (0,), {}, 10_000),  # its loops default
        ("rhealstone", (0,), {"interval": "500us", "duration": "1m"}, 120_000),
        ("msg", (0,), {"rate": 100, "duration": "10s"}, 1_000),
        ("msg", (0,), {"loops": 50}, 50),
        ("msg", (0,), {}, None),  # back to back: known once run
        ("switch", (0,), {"duration": "2s"}, None),
        ("pio", (0,), {"passes": 40}, 40),
        ("pio", (0,), {}, None),
        ("rtsafety", (0,), {}, None),
    ],
)
def test_expected_samples_per_probe_kind(probe, cpus, params, samples):
    c = case(probe, cpus, **params)
    assert planning.expected_samples(c["probe"], c["params"]) == samples


def test_decidable_keeps_the_margin_on_the_rule():
    """10/(1-p) with 10 % to spare: 10,000 planned samples are on the edge of p99.9 (one overrun short)."""
    assert needed_samples(999_000) == 10_000 and planning.planned(10_000) == 11_000
    assert planning.decidable(10_999) == ["p50", "p99"]
    assert planning.decidable(11_000) == ["p50", "p99", "p99.9"]
    assert planning.decidable(110_000) == ["p50", "p99", "p99.9", "p99.99"]
    assert planning.decidable(0) == [] and planning.decidable(None) is None
    c = case("timer", (0, 1), interval="1ms", duration="5s")  # the IOC run's baseline of issue 22
    assert "p99.9" not in planning.case_plan(c)["decidable"]


@pytest.mark.parametrize(
    "text,need",
    [
        ("p99.99 <= 2ms", 100_000),
        ("p99 < 1ms", 1_000),
        ("p50 <= 1ms", 0),  # the verdict decides p50 at any count
        ("over(100us) <= 1%", 1_000),
        ("over(100us) <= 0.1%", 10_000),
        ("over(100us) <= 0%", 0),
        ("max < 20ms", 0),
        ("overruns == 0", 0),
        ("count >= 5", 0),
    ],
)
def test_samples_needed_as_the_verdict_asks(text, need):
    assert planning.samples_needed(parse(text)) == need


def test_requirement_plan_says_what_a_case_decides_and_what_it_needs():
    c = case("timer", (0, 1), interval="1ms", duration="15s")  # 30,000 samples
    p = planning.requirement_plan(parse("p99.9 <= 1ms"), c["probe"], c["params"])
    assert p == {"requirement": "p99.9 <= 1ms", "samples_needed": 10_000, "decidable": True,
                 "duration_needed_ns": 6 * S}  # fmt: skip
    p = planning.requirement_plan(parse("p99.99 <= 1ms"), c["probe"], c["params"])
    assert p["decidable"] is False and p["duration_needed_ns"] == 55 * S  # 110,000 at 2,000/s
    back_to_back = case("switch", (0,), duration="2s")
    assert planning.requirement_plan(parse("p99 <= 1ms"), "switch", back_to_back["params"])["decidable"] is None
    assert planning.requirement_plan(parse("max <= 1ms"), "switch", back_to_back["params"])["decidable"] is True


def test_auto_duration_for_the_requirements_or_the_default_percentiles():
    c = case("timer", (0,), interval="1ms")
    auto = planning.auto_duration(c["probe"], c["params"], [], planning.AUTO_CAP_NS)
    assert auto["for"] == "p99.99" and auto["duration_ns"] == 110 * S and not auto["capped"]
    auto = planning.auto_duration(
        c["probe"], c["params"], gather(["p99 <= 1ms", "max <= 5ms"], None), planning.AUTO_CAP_NS
    )
    assert auto["duration_ns"] == 2 * S  # 1,100 samples at 1 kHz, whole seconds
    auto = planning.auto_duration(c["probe"], c["params"], gather(["max <= 5ms"], None), planning.AUTO_CAP_NS)
    assert auto["for"] == "p99.99"  # no requirement needs samples: the default percentiles
    auto = planning.auto_duration(c["probe"], c["params"], gather(["p99.999 <= 1ms"], None), 60 * S)
    assert auto["capped"] and auto["duration_ns"] == 60 * S and "capped at 1m00s" in auto["note"]
    with pytest.raises(RtqError, match="back to back"):
        planning.auto_duration("switch", case("switch", (0,))["params"], [], planning.AUTO_CAP_NS)


@pytest.mark.parametrize(
    "text,cap",
    [("auto", planning.AUTO_CAP_NS), ("auto:30s", 30 * S), (" auto:2h ", 7200 * S), ("10s", None), (None, None)],
)
def test_parse_auto(text, cap):
    assert planning.parse_auto(text) == cap


@pytest.mark.parametrize("text", ["autox", "auto:", "auto:10", "auto:100ms", "auto:-1s"])
def test_parse_auto_refuses_in_one_line(text):
    with pytest.raises(RtqError) as e:
        planning.parse_auto(text)
    assert "\n" not in str(e.value) and str(e.value).startswith("--duration")


def single_run(*argv):
    return single.single_run(cli.build_parser().parse_args(["run", *argv]), ["rtqual", "run", *argv])


def test_run_duration_auto_sets_the_measured_duration_and_says_it():
    cases, text = single_run("timer", "--cpus", "0", "--duration", "auto", "--require", "p99.9 <= 1ms")
    (c,) = cases
    assert c["params"]["duration_ns"] == 11 * S and "--duration" in c["args"]
    assert c["args"][c["args"].index("--duration") + 1] == f"{11 * S}ns"
    assert c["duration_auto"]["note"].startswith("--duration auto: 11s") and texts(c["require"]) == ["p99.9 <= 1ms"]
    assert f'duration = "{11 * S}ns"' in text  # the bundle's scenario.toml says the chosen duration
    cases, _ = single_run("timer", "--cpus", "0", "--duration", "auto:20s", "--profile", "kek-50hz")
    assert cases[0]["params"]["duration_ns"] == 20 * S and cases[0]["duration_auto"]["capped"]


def test_run_duration_auto_plans_the_measured_case_of_a_service_probe():
    cases, _ = single_run("ioc", "--duration", "auto", "--require", "p99 <= 5ms", "--baseline", "2s")
    assert [c["params"]["duration_ns"] for c in cases] == [2 * S, 22 * S]  # 1,100 stimuli at 50 Hz
    assert "duration_auto" not in cases[0] and texts(cases[1]["require"]) == ["p99 <= 5ms"]


@pytest.mark.parametrize("cpus,seconds", [([0], 11), ([0, 1], 6), ([0, 1, 2, 3], 5), (list(range(8)), 5)])
def test_the_default_baseline_is_long_enough_for_p999(monkeypatch, cpus, seconds):
    """Issue 22: a 10 s IOC run's 5 s baseline on 2 CPUs planned 10,000 periods: one overrun, 9,999 samples."""
    monkeypatch.setattr(single, "online_cpus", lambda: cpus)
    cases, _ = single_run("ioc", "--duration", "10s")
    assert cases[0]["params"]["duration_ns"] == seconds * S
    assert "p99.9" in planning.case_plan(cases[0])["decidable"]
    cases, _ = single_run("ioc", "--duration", "10s", "--baseline", "3s")  # given: kept
    assert cases[0]["params"]["duration_ns"] == 3 * S


def test_plan_json_and_text_carry_the_planning():
    sc = scenario.loads(
        '[[case]]\nlabel = "t"\nprofile = "kek-50hz"\nparams = { cpus = "0-1", duration = "15s" }\n'
        '[[case]]\nlabel = "s"\nprobe = "switch"\nrequire = ["p99 <= 1ms"]\n',
        "x.toml",
    )
    cases = scenario.expand(sc, cpus=[0, 1], require=gather(["over(100us) <= 1%"], None))
    doc = scenario.plan_json(cases, sc)
    t, s = doc["cases"]
    assert t["expected_samples"] == 30_000 and t["decidable"] == ["p50", "p99", "p99.9"]
    assert [r["requirement"] for r in t["decidable_requirements"]] == [
        "max < 20ms", "p99.99 <= 2ms", "overruns == 0", "over(100us) <= 1%"]  # fmt: skip
    assert [r["decidable"] for r in t["decidable_requirements"]] == [True, False, True, True]
    assert s["expected_samples"] is None and s["decidable"] is None
    assert [r["decidable"] for r in s["decidable_requirements"]] == [None, None]
    assert "expected_samples" not in cases[0]  # the runner's cases stay as they were
    text = scenario.plan_text(cases)
    assert "001-t: cannot decide p99.99 <= 2ms: needs 110,000 samples" in text
    assert "002-s: p99 <= 1ms: needs 1,000 samples, known once run" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("00") and ":" not in line]
    assert rows[2:] == [["001-t", "30,000", "p50", "p99", "p99.9", "3", "of", "4"],
                        ["002-s", "?", "known", "once", "run", "0", "of", "2"]]  # fmt: skip
    assert text.splitlines()[-1].startswith("2 cases, about")  # the total stays the last line

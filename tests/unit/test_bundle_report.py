"""Bundle round trip and the pure printers."""

import json

import pytest

from rtqual import textfmt
from rtqual.answers.requirements import gather
from rtqual.answers.verdict import summarize, worst
from rtqual.errors import RtqError
from rtqual.measure.run.runner import cpu_stats
from rtqual.publish import report, views
from rtqual.results import bundle
from rtqual.results.hist import Histogram
from rtqual.results.stream import read_stream

CASE = {
    "id": "001-timer",
    "label": "timer fifo:80 1ms cpus 0",
    "probe": "timer",
    "args": [],
    "params": {"threshold_ns": 100_000, "cpus": [0]},  # pinned: its row is cpu0
    "requirements": {},
}


def stream_of(values, status=0, reason="completed", skipped=0):
    h = Histogram()
    for v in values:
        h.record(v)
    over = sum(v > 100_000 for v in values)
    recs = [
        {
            "type": "header",
            "probe": "timer",
            "params": {"threshold_ns": 100_000, "cpus": [0]},
            "rt": {"degraded": False},
        },
        {"type": "hist", "cpu": 0, **h.to_record()},
        {"type": "summary", "cpus": [{"cpu": 0, "overruns": skipped, "over_threshold": over}]},
        {"type": "end", "status": status, "reason": reason},
    ]
    return read_stream(json.dumps(r) + "\n" for r in recs)


def test_summarize_pass_and_stats():
    r = summarize(CASE, stream_of([10_000, 20_000, 300_000], skipped=2), 0, "")
    assert r["verdict"] == "completed"  # measured to its end, no requirement: nothing passed
    s = r["stats"]
    assert s["count"] == 3 and s["overruns"] == 2 and s["over_threshold"] == 1
    assert s["over_threshold_pct"] == pytest.approx(100 / 3)
    assert r["per_cpu"]["0"]["count"] == 3


def test_summarize_requirement_fail():
    case = dict(CASE, requirements={"max_ns": 200_000})  # --max-latency 200us, planned: one route, `require`
    case["require"] = gather(None, None, limits=case["requirements"])
    r = summarize(case, stream_of([10_000, 300_000]), 0, "")
    assert r["verdict"] == "fail" and "max" in r["reason"]


@pytest.mark.parametrize(
    "code,status,reason,verdict",
    [(4, 4, "interrupted", "inconclusive"), (3, 0, "completed", "skip"), (1, 0, "completed", "error")],
)
def test_summarize_verdicts(code, status, reason, verdict):
    assert summarize(CASE, stream_of([1], status, reason), code, "msg")["verdict"] == verdict


def test_summarize_crashed_stream_is_error_and_partial():
    s = read_stream(
        [
            json.dumps(
                {
                    "type": "progress",
                    "cpus": [{"cpu": 0, "count": 9, "min_ns": 3, "max_ns": 7, "overruns": 1, "over_threshold": 0}],
                }
            )
            + "\n"
        ]
    )
    r = summarize(CASE, s, -6, "")
    assert r["verdict"] == "error" and "SIGABRT" in r["reason"]
    assert r["stats"]["count"] == 9 and r["stats"]["partial"]
    assert summarize(CASE, s, 0, "")["verdict"] == "inconclusive"  # exited but stream cut short


def test_worst():
    # one order (docs/requirements.md): a failed case decides a run, an inconclusive one does not outrank it
    # (this asserted "inconclusive" under the order stats.worst had; the run's interrupted -> inconclusive is
    # run_verdict's, tests/unit/test_verdict.py)
    assert worst(["pass", "fail", "skip"]) == "fail" and worst(["pass", "inconclusive", "fail"]) == "fail"


def test_bundle_roundtrip(tmp_path):
    b = bundle.Bundle(tmp_path / "b", ["rtqual", "run"], "0.1.0")
    r = summarize(CASE, stream_of([5_000, 6_000]), 0, "")
    b.case_dir(r["id"])
    bundle.write_json(tmp_path / "b" / "cases" / r["id"] / "result.json", r)
    b.add_case(r)
    b.finish("complete", r["verdict"])
    data = bundle.load(tmp_path / "b")
    assert data["manifest"]["verdict"] == "completed" and data["cases"][0]["stats"] == r["stats"]
    js = report.show_json(data)
    assert set(js["cases"][0]["stats"]) == set(report.JSON_STAT_KEYS)
    assert {"label", "probe", "params", "stats", "per_cpu", "verdict", "warnings"} <= set(js["cases"][0])
    text = report.show_text(data)
    assert "cpu0" in text and "all" in text and "COMPLETED — not judged (add --profile or --require)" in text
    assert not list((tmp_path / "b").rglob(".*.tmp"))


def test_bundle_refuses_nonempty_and_reads_only_known_schema(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    with pytest.raises(RtqError, match="not an empty directory"):
        bundle.Bundle(tmp_path / "x", [], "0")
    with pytest.raises(RtqError, match="not an rtqual bundle"):
        bundle.load(tmp_path / "x")
    (tmp_path / "x" / "manifest.json").write_text('{"schema_version": 99}')
    with pytest.raises(RtqError, match="schema 99"):
        bundle.load(tmp_path / "x")


def test_format_table_alignment():
    t = textfmt.format_table(["a", "bb"], [["x", "1"], ["yyy", "22"]]).splitlines()
    assert t[0] == "a    bb" and t[2] == "x     1" and t[3] == "yyy  22"


def test_cpu_stats_pct_zero_count():
    assert cpu_stats(Histogram(), None)["over_threshold_pct"] == 0.0


def test_cli_scenario_text_is_a_valid_equivalent_scenario():
    """The bundle's scenario.toml for `rtqual run timer ...` plans back to the same case."""
    from rtqual import scenario
    from rtqual.cli import build_parser
    from rtqual.scenario.single import probe_options_case, scenario_text

    a = build_parser().parse_args(
        ["run", "timer", "--cpus", "0", "--interval", "2ms", "--loops", "50", "--max-latency", "1ms"]
    )
    case = probe_options_case("timer", a)
    again = scenario.expand(scenario.loads(scenario_text(case, ["rtqual", "run"]), "scenario.toml"))[0]
    assert {k: again[k] for k in ("probe", "args", "params", "requirements")} == {
        k: case[k] for k in ("probe", "args", "params", "requirements")
    }


def test_paper_tables():
    r = summarize(CASE, stream_of([10_000, 20_000, 300_000]), 0, "")
    aps = views.paper_table([r], "aps").splitlines()
    assert aps[1].split() == ["case", "Minimum", "Median", "Maximum", "%", ">", "100us", "N", "duration"]
    assert aps[3].split()[-6:] == ["10us", "20us", "300us", "33.3%", "3", "-"]  # N and duration (issue 35)
    kek = views.paper_table([r], "kek").splitlines()
    assert kek[1].split() == ["case", "Average", "Standard", "deviation", "Maximum", "N", "duration"]
    assert kek[3].split()[-5:-2] == ["110us", "134us", "300us"]
    madoca = views.paper_table([r], "madoca").splitlines()
    assert "Standard deviation" in madoca[1] and madoca[3].split()[-7:-4] == ["10us", "300us", "110us"]
    vme = views.paper_table([r], "vme").splitlines()
    assert vme[3].split()[-5:-2] == ["110us", "(134us)", "-"]
    r["probe_summary"] = {"cpus": [{"cpu": 0, "throughput_mb_s": 2809.5}]}
    assert views.paper_table([r], "vme").splitlines()[3].split()[-3] == "2809.5"


def test_aps_table_lists_each_ioc_stage_then_the_total_and_the_baseline_line():
    timer = summarize(dict(CASE, id="001-t", label="baseline"), stream_of([10_000, 20_000]), 0, "")
    r = summarize(dict(CASE, id="002-ioc", label="ioc"), stream_of([10_000, 20_000, 300_000]), 0, "")
    stage = {"count": 3, "min_ns": 1_000, "p50_ns": 2_000, "max_ns": 150_000, "over_threshold": 1}
    r["probe_summary"] = {"stages": {name: stage for name in views.STAGES}}
    r["ioc"] = {
        "preset": "kek",
        "threads": [],
        "ca_load": {
            "records": 10,
            "put": {"rate_hz": 99.5, "requested_rate_hz": 100, "errors": 0},
            "monitor": {"rate_hz": 1000.0, "connected": 10},
        },
    }
    rows = views.paper_table([timer, r], "aps").splitlines()[3:]
    assert [row.split(":")[0].split()[0] for row in rows] == ["baseline"] + ["ioc"] * 6
    assert [row.split()[1] for row in rows[1:]] == ["drive", "wake", "dispatch", "chain", "return", "total"]
    assert rows[1].split()[-6:-2] == ["1us", "2us", "150us", "33.3%"]
    assert rows[-1].split()[-6:-2] == ["10us", "20us", "300us", "33.3%"]
    assert views.paper_table([timer, r], "madoca").count("\n") == 4  # one row a case
    # a FIFO run has no drive stage (t_stim is the stimulus itself): the others, in order
    del r["probe_summary"]["stages"]["drive"]
    assert [row.split()[0] for row in views.stage_table(r).splitlines()[2:] if not row.startswith("'-'")] == [
        "wake",
        "dispatch",
        "chain",
        "return",
        "total",
    ]
    line = report.baseline_line(r, [timer, r])
    assert line.startswith("vs timer baseline (case 001-t") and "max 300us vs 20us" in line
    assert report.baseline_line(timer, [timer, r]) is None
    assert "put 100/s (asked 100, 0 errors), monitor 1000 events/s on 10 channels" in views.ioc_lines(r)[1]


def test_baseline_is_the_timer_case_under_the_same_loads():
    idle = summarize(dict(CASE, id="001-idle", label="t idle"), stream_of([10_000]), 0, "")
    busy = summarize(dict(CASE, id="002-busy", label="t busy"), stream_of([20_000]), 0, "")
    ioc = summarize(dict(CASE, id="003-ioc", label="ioc busy"), stream_of([30_000]), 0, "")
    busy["loads"] = ioc["loads"] = [{"name": "hackbench", "type": "hackbench"}]
    ioc["ioc"], ioc["probe"] = {"preset": "kek"}, "iocresp"
    assert "(case 002-busy" in report.baseline_line(ioc, [idle, busy, ioc])
    ioc["loads"] = [{"name": "cpu-hog"}]
    assert "(case 001-idle" in report.baseline_line(ioc, [idle, busy, ioc])  # none alike: the first

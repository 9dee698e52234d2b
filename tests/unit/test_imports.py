"""Importers against their fixtures (tests/data/imports, README there): exact counts, min, max and
per-CPU rows; the rules of writer.py (bucket upper edges, overflow, what stays null); and one-line
errors for malformed input, fuzzed with hypothesis (never a traceback)."""

import json
import shutil
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtqual.errors import RtqError
from rtqual.publish.imports import TOOLS, cyclictest, jitterdebugger, rteval, rtla, run
from rtqual.publish.imports.writer import Series, case_result, series_stats

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
CT = DATA / "cyclictest"


def stats_of(case):
    return case_result(case, "001-x")


# -- cyclictest ---------------------------------------------------------------------------------


def test_cyclictest_json_with_full_histogram():
    (case,) = cyclictest.parse(CT / "cyclictest-h3000.json")
    r = stats_of(case)
    assert case.version == "2.40" and case.hostname == "vm" and case.start == "2026-11-25T01:58:09+0000"
    assert case.label == "timer fifo:80 1ms cpus 0-1"
    assert case.params == {"policy": "fifo", "priority": 80, "interval_ns": 1_000_000, "loops": 1000, "cpus": [0, 1]}
    cpu0, cpu1 = r["per_cpu"]["0"], r["per_cpu"]["1"]
    assert (cpu0["count"], cpu0["min_ns"], cpu0["max_ns"]) == (1000, 7_999, 1_924_999)
    assert (cpu1["count"], cpu1["min_ns"], cpu1["max_ns"]) == (1000, 6_999, 2_903_999)
    assert r["stats"]["count"] == 2000 and r["stats"]["min_ns"] == 6_999 and r["stats"]["max_ns"] == 2_903_999
    assert r["stats"]["out_of_range"] == 0 and r["verdict"] == "completed"
    assert all(r["stats"][k] is not None for k in ("p50_ns", "p99_ns", "p999_ns", "p9999_ns", "stddev_ns"))
    # percentiles are exactly the upper edge of cyclictest's 1 us bucket (not rounded again by the HDR layout)
    assert all(s[k] % 1000 == 999 for s in (cpu0, cpu1, r["stats"]) for k in ("p50_ns", "p99_ns", "p999_ns"))
    assert cpu0["mean_ns"] == round(21.58 * 1000 + 999)
    assert r["stats"]["overruns"] is None and r["stats"]["over_threshold"] is None
    assert r["source"]["tool"] == "cyclictest" and r["source"]["cmdline"].startswith("cyclictest -m -p 80")


def test_cyclictest_json_overflow_is_out_of_range_and_inconclusive():
    (case,) = cyclictest.parse(CT / "cyclictest-h400.json")
    r = stats_of(case)
    cpu0, cpu1 = r["per_cpu"]["0"], r["per_cpu"]["1"]
    assert (cpu0["count"], cpu0["out_of_range"], cpu0["max_ns"]) == (1000, 44, 1_162_999)
    assert (cpu1["count"], cpu1["out_of_range"], cpu1["max_ns"]) == (1000, 2, 640_999)
    # cpu0: 956 samples in the histogram; p99 (rank 990) lies among the overflowed ones: unknown
    assert cpu0["p50_ns"] is not None and cpu0["p99_ns"] is None and cpu0["stddev_ns"] is None
    assert cpu1["p99_ns"] is not None and cpu1["p999_ns"] is None
    assert r["verdict"] == "inconclusive" and r["stats"]["out_of_range"] == 46
    assert any("46 samples" in w for w in r["warnings"])


def test_cyclictest_json_without_histogram():
    (case,) = cyclictest.parse(CT / "cyclictest-noh.json")
    r = stats_of(case)
    assert r["per_cpu"]["1"]["count"] == 359 and r["stats"]["count"] == 859
    assert r["stats"]["min_ns"] == 6_999 and r["stats"]["max_ns"] == 1_242_999
    assert all(r["stats"][k] is None for k in ("p50_ns", "p99_ns", "stddev_ns"))
    assert r["stats"]["mean_ns"] == round((112.6 * 500 + 16.25 * 359) / 859 * 1000 + 999)
    assert "distance_ns" in case.params and "1ms+500us/thread" in case.label
    assert any("no histogram" in w for w in r["warnings"]) and any("not pinned" in w for w in r["warnings"])


def test_cyclictest_nsecs_histogram_all_overflowed(tmp_path):
    """-N -h 100: the histogram counts ns, every cycle was over 100 ns, so it is empty but present."""
    f = tmp_path / "ns.json"
    thread = {"histogram": {}, "cycles": 300, "min": 5804, "max": 122403, "avg": 12337.75, "cpu": 1, "node": 0}
    f.write_text(
        json.dumps({"cmdline:": "cyclictest -N -m -p 80 -h 100", "resolution_in_ns": 1, "thread": {"0": thread}})
    )
    r = stats_of(cyclictest.parse(f)[0])
    assert r["per_cpu"].keys() == {"1"} and r["stats"]["out_of_range"] == 300 and r["verdict"] == "inconclusive"
    assert (r["stats"]["min_ns"], r["stats"]["max_ns"], r["stats"]["p50_ns"]) == (5804, 122403, None)


def test_cyclictest_text_matches_its_json():
    for name in ("cyclictest-h3000", "cyclictest-h400"):
        (j,) = cyclictest.parse(CT / f"{name}.json")
        (t,) = cyclictest.parse(CT / f"{name}.txt")
        rj, rt = stats_of(j), stats_of(t)
        for key in ("count", "min_ns", "max_ns", "p50_ns", "p99_ns", "p999_ns", "out_of_range", "stddev_ns"):
            assert rj["stats"][key] == rt["stats"][key], (name, key)
        assert rt["per_cpu"].keys() == {"0", "1"}
        assert any("names no CPU" in w for w in rt["warnings"])


def test_cyclictest_histofall_text():
    """-H: an all-threads column in the rows and an extra value in Total, Max and Overflows, ignored."""
    (case,) = cyclictest.parse(CT / "cyclictest-H50.txt")
    r = stats_of(case)
    assert [r["per_cpu"][c]["count"] for c in ("0", "1")] == [200, 200]
    assert [r["per_cpu"][c]["out_of_range"] for c in ("0", "1")] == [2, 1]
    assert r["per_cpu"]["0"]["max_ns"] == 7_794_999 and r["per_cpu"]["1"]["max_ns"] == 78_999
    assert any("-H summary column" in w for w in r["warnings"])


def test_cyclictest_status_lines():
    (case,) = cyclictest.parse(CT / "cyclictest-noh.txt")
    r = stats_of(case)
    assert [r["per_cpu"][c]["count"] for c in ("0", "1")] == [500, 359]
    assert r["per_cpu"]["0"]["max_ns"] == 1_242_999 and r["stats"]["p50_ns"] is None
    assert case.params["interval_ns"] == 1_000_000 and case.params["distance_ns"] == 500_000


def test_cyclictest_label_is_rtquals_timer_label():
    (case,) = cyclictest.parse(CT / "cyclictest-cpu0.json")
    frozen = json.loads((DATA.parent / "bundles" / "timer-raw" / "manifest.json").read_text())
    assert case.label == frozen["cases"][0]["label"] == "timer fifo:80 1ms cpus 0"
    assert case.slug == "timer"


@pytest.mark.parametrize(
    "cmdline,expect",
    [
        ("cyclictest -p80 -i500 -t2 -a -d0", {"priority": 80, "interval_ns": 500_000}),
        ("cyclictest --priority=90 --interval=2000 --policy=rr", {"policy": "rr", "priority": 90}),
        ("cyclictest -i 250", {"policy": "other", "priority": 0, "interval_ns": 250_000}),
    ],
)
def test_cyclictest_options(cmdline, expect):
    params, _ = cyclictest.settings(cyclictest.options(cmdline), 2)
    assert expect.items() <= params.items()
    assert "distance_ns" not in params or "-d0" not in cmdline


def test_cyclictest_distance_applies_without_histogram_only():
    assert "distance_ns" in cyclictest.settings(cyclictest.options("cyclictest -t 2 -p 80"), 2)[0]
    assert "distance_ns" not in cyclictest.settings(cyclictest.options("cyclictest -t 2 -p 80 -h 100"), 2)[0]


# -- rtla ---------------------------------------------------------------------------------------


def test_rtla_61_layout_irq_and_thread_cases():
    irq, thr = rtla.parse(DATA / "rtla" / "timerlat-hist.txt")
    assert (irq.slug, thr.slug) == ("timerlat-irq", "timerlat-thread")
    ri, rt = stats_of(irq), stats_of(thr)
    assert ri["per_cpu"].keys() == rt["per_cpu"].keys() == {"0", "1", "2", "3"}
    assert [ri["per_cpu"][c]["count"] for c in "0123"] == [6000] * 4
    assert ri["stats"]["count"] == 24000 and ri["stats"]["min_ns"] == 999 and ri["stats"]["max_ns"] == 3_999
    assert ri["verdict"] == "completed" and ri["stats"]["stddev_ns"] is not None
    assert rt["per_cpu"]["2"]["out_of_range"] == 1 and rt["per_cpu"]["2"]["max_ns"] == 315_999
    assert rt["per_cpu"]["0"]["max_ns"] == 7_999 and rt["stats"]["out_of_range"] == 2
    assert rt["verdict"] == "inconclusive" and rt["source"]["duration"] == "0 00:00:06"


def test_rtla_user_columns_and_all_block():
    cases = rtla.parse(DATA / "rtla" / "timerlat-hist-user.txt")
    assert [c.slug for c in cases] == ["timerlat-irq", "timerlat-thread", "timerlat-user"]
    user = stats_of(cases[2])
    assert user["per_cpu"]["0"]["out_of_range"] == 1 and user["per_cpu"]["1"]["out_of_range"] == 2
    assert user["stats"]["count"] == 20000 and user["stats"]["max_ns"] == 2_210_999
    assert user["per_cpu"]["0"]["min_ns"] == 2_999


def test_rtla_bucket_size_is_taken_from_the_indexes(tmp_path):
    text = (DATA / "rtla" / "timerlat-hist.txt").read_text().splitlines()
    rows = {"0": "0", "1": "10", "2": "20", "3": "30", "4": "40", "7": "70"}
    out = []
    for line in text:
        w = line.split(" ", 1)
        out.append(f"{rows[w[0]]:<6}{line[6:]}" if w[0] in rows else line)
    f = tmp_path / "b10.txt"
    f.write_text("\n".join(out) + "\n")
    irq = stats_of(rtla.parse(f)[0])
    assert irq["source"]["bucket_size"] == 10 and irq["per_cpu"]["0"]["max_ns"] == 9_999


# -- jitterdebugger -----------------------------------------------------------------------------


def test_jitterdebugger_folder_fills_overflow_from_samples():
    (case,) = jitterdebugger.parse(DATA / "jitterdebugger" / "run")
    r = stats_of(case)
    cpu0, cpu1 = r["per_cpu"]["0"], r["per_cpu"]["1"]
    assert (cpu0["count"], cpu0["min_ns"], cpu0["max_ns"]) == (500, 7_999, 12_704_999)
    assert (cpu1["count"], cpu1["min_ns"], cpu1["max_ns"]) == (500, 6_999, 15_492_999)
    assert (
        r["stats"]["out_of_range"] == 0 and r["verdict"] == "completed"
    )  # all 28 overflowed samples are in samples.raw
    assert r["stats"]["p9999_ns"] == 15_492_999 and r["stats"]["stddev_ns"] is not None
    assert r["source"]["samples"]["records"] == 999
    assert any("499 of thread 1's 500" in w for w in r["warnings"])


def test_jitterdebugger_results_alone_keeps_overflow(tmp_path):
    (tmp_path / "results.json").write_bytes((DATA / "jitterdebugger" / "run" / "results.json").read_bytes())
    r = stats_of(jitterdebugger.parse(tmp_path / "results.json")[0])
    assert r["per_cpu"]["0"]["out_of_range"] == 13 and r["per_cpu"]["1"]["out_of_range"] == 15
    assert r["verdict"] == "inconclusive"


def test_jitterdebugger_samples_of_another_run(tmp_path):
    (tmp_path / "results.json").write_bytes((DATA / "jitterdebugger" / "run" / "results.json").read_bytes())
    (tmp_path / "samples.raw").write_bytes(struct.pack("<IqqQ", 7, 1, 2, 3))
    with pytest.raises(RtqError, match="not the same run"):
        jitterdebugger.parse(tmp_path)


def test_jitterdebugger_samples_unread_when_nothing_overflowed(tmp_path):
    results = {"cpu": {"0": {"histogram": {"3": 2, "5": 1}, "count": 3, "min": 3, "max": 5, "avg": 3.67}}}
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "samples.raw").write_bytes(struct.pack("<IqqQ", 9, 1, 2, 3) * 2)  # would not match: never read
    r = stats_of(jitterdebugger.parse(tmp_path)[0])
    assert r["source"]["samples"] == {
        "file": str(tmp_path / "samples.raw"),
        "records": 2,
        "record_bytes": 28,
        "read": False,
    }
    assert r["stats"]["count"] == 3 and r["stats"]["p9999_ns"] == 5_999 and r["verdict"] == "completed"


# -- rteval -------------------------------------------------------------------------------------


def test_rteval_summary_matches_the_cyclictest_text_it_was_made_from():
    (case,) = rteval.parse(DATA / "rteval" / "summary.xml")
    (text,) = cyclictest.parse(CT / "cyclictest-h3000.txt")
    r, t = stats_of(case), stats_of(text)
    assert case.label == "timer fifo:80 1ms cpus 0-1" and case.version == "3.8" and case.hostname == "vm"
    for key in ("count", "min_ns", "p50_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns", "stddev_ns"):
        assert r["stats"][key] == t["stats"][key], key
        assert r["per_cpu"]["1"][key] == t["per_cpu"]["1"][key], key
    assert r["verdict"] == "completed" and r["source"]["statistics"]["0"]["samples"] == "1000"


def test_rteval_samples_lost_beyond_the_histogram(tmp_path):
    xml = (DATA / "rteval" / "summary.xml").read_text()
    f = tmp_path / "lost.xml"
    f.write_text(xml.replace('<maximum unit="us">1924</maximum>', '<maximum unit="us">5000</maximum>'))
    r = stats_of(rteval.parse(f)[0])
    assert r["per_cpu"]["0"]["max_ns"] == 5_000_999 and r["verdict"] == "inconclusive"
    assert any("dropped those samples without counting" in w for w in r["warnings"])


@pytest.mark.parametrize(
    "content,match",
    [
        ("<rteval><Measurements>", "not XML"),
        ("<report/>", "not an rteval report"),
        ("<rteval><Measurements/></rteval>", "no cyclictest measurement"),
        ("<rteval><Measurements><cyclictest/></Measurements></rteval>", "no per-core statistics"),
        (
            '<rteval><Measurements><cyclictest><core id="0"><statistics><samples>3</samples></statistics>'
            '<histogram><bucket index="1" value="2"/></histogram></core></cyclictest></Measurements></rteval>',
            "not the histogram's sum",
        ),
    ],
)
def test_rteval_malformed(tmp_path, content, match):
    f = tmp_path / "summary.xml"
    f.write_text(content)
    with pytest.raises(RtqError, match=match):
        rteval.parse(f)


# -- writer rules -------------------------------------------------------------------------------


def test_series_stats_rules():
    s = Series(10, 1000, 1, 9, 4.5, {1: 2, 3: 5, 5: 2})  # one sample overflowed (max 9 us)
    st_ = series_stats([s])
    assert st_["count"] == 10 and st_["out_of_range"] == 1 and st_["min_ns"] == 1_999 and st_["max_ns"] == 9_999
    assert st_["p50_ns"] == 3_999 and st_["p99_ns"] is None and st_["stddev_ns"] is None
    assert st_["mean_ns"] == 5_499
    full = series_stats([Series(4, 1000, 2, 2, 2.0, {2: 4})])
    assert full["stddev_ns"] == 0 and full["p9999_ns"] == 2_999


# -- malformed input: one line, never a traceback -----------------------------------------------


@pytest.mark.parametrize(
    "tool,content,match",
    [
        ("cyclictest", '{"thread": {"0": {"cycles": 5', "not JSON"),
        ("cyclictest", "[1, 2]", "expected a JSON object"),
        ("cyclictest", '{"thread": []}', "expected an object"),
        ("cyclictest", '{"thread": {"0": {"cycles": -1, "min": 1, "max": 2, "avg": 1}}}', "non-negative"),
        ("cyclictest", '{"thread": {"0": {"cycles": 1, "min": 1, "max": 2, "avg": 1, "histogram": {"1": 5}}}}', "more"),
        ("cyclictest", '{"thread": {"0": {"cycles": 1, "min": 1}}}', "no 'max'"),
        ("cyclictest", "hello\nworld\n", "not cyclictest output"),
        ("cyclictest", "# Histogram\n000001 000005\n", "cut short"),
        ("rtla", "# RTLA timerlat histogram\nIndex IRQ-000\n0 5\n", "cut short"),
        ("rtla", "garbage", "not rtla"),
        ("rtla", "# RTLA timerlat histogram\nIndex CPU-000\n", "header columns"),
        ("jitterdebugger", '{"cpu": {"0": {"count": "x", "min": 1, "max": 1, "avg": 1}}}', "non-negative integer"),
        ("jitterdebugger", '{"cpus": {}}', "no 'cpu'"),
    ],
)
def test_malformed_inputs_are_one_line_errors(tmp_path, tool, content, match):
    f = tmp_path / "in.json"
    f.write_text(content)
    with pytest.raises(RtqError, match=match) as e:
        run(tool, [str(f)], str(tmp_path / "out"))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()  # nothing written when an input is bad


@pytest.mark.parametrize("tool", TOOLS)
def test_missing_file_and_directory(tmp_path, tool):
    with pytest.raises(RtqError, match="no such file"):
        run(tool, [str(tmp_path / "nope")], None)
    if tool != "jitterdebugger":
        with pytest.raises(RtqError, match="not a regular file"):
            run(tool, [str(tmp_path)], None)
    else:
        with pytest.raises(RtqError, match="no results.json"):
            run(tool, [str(tmp_path)], None)


def test_unknown_tool_and_invalid_utf8(tmp_path):
    with pytest.raises(RtqError, match="unknown tool"):
        run("oslat", ["x"], None)
    f = tmp_path / "bin.txt"
    f.write_bytes(b"\xff\xfe# Histogram\n")
    with pytest.raises(RtqError, match="invalid UTF-8"):
        run("cyclictest", [str(f)], None)


FIXTURES = {
    "cyclictest": [CT / "cyclictest-h400.json", CT / "cyclictest-h400.txt", CT / "cyclictest-noh.txt"],
    "rtla": [DATA / "rtla" / "timerlat-hist-user.txt"],
    "jitterdebugger": [DATA / "jitterdebugger" / "run" / "results.json"],
    "rteval": [DATA / "rteval" / "summary.xml"],
}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _parse_or_rtqerror(tool: str, path: Path) -> None:
    """Import into a fresh bundle: success or RtqError (one line), nothing else; nothing written on error."""
    out = path.parent / f"out-{uuid.uuid4().hex}"
    try:
        run(tool, [str(path)], str(out))
    except RtqError as e:
        assert "\n" not in str(e)
        assert not out.exists()
    else:
        shutil.rmtree(out)


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(data=st.data())
def test_fuzz_truncated_and_mutated_fixtures(tmp_path, tool, data):
    src = data.draw(st.sampled_from(FIXTURES[tool])).read_bytes()
    cut = data.draw(st.integers(0, len(src)))
    body = bytearray(src[:cut])
    for _ in range(data.draw(st.integers(0, 4))):
        if body:
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    f = tmp_path / "in"
    f.write_bytes(bytes(body))
    _parse_or_rtqerror(tool, f)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(
    thread=st.dictionaries(
        st.sampled_from(["cycles", "min", "max", "avg", "cpu", "histogram", "count"]), JSONISH, max_size=7
    ),
    key=st.sampled_from(["thread", "cpu"]),
)
def test_fuzz_json_shapes(tmp_path, thread, key):
    f = tmp_path / "in.json"
    f.write_text(json.dumps({key: {"0": thread}}))
    for tool in ("cyclictest", "jitterdebugger"):
        _parse_or_rtqerror(tool, f)


@FUZZ
@given(
    text=st.lists(st.sampled_from([*"0123456789 -:#\nIRQThrUsr-ovecuntmiaxgdAL²٣", "9" * 30]), max_size=150).map(
        "".join
    )
)
def test_fuzz_text_formats(tmp_path, text):
    f = tmp_path / "in.txt"
    f.write_text("# RTLA timerlat histogram\n# Histogram\n" + text)
    for tool in ("cyclictest", "rtla"):
        _parse_or_rtqerror(tool, f)


@FUZZ
@given(raw=st.binary(max_size=400), keep=st.integers(0, 999))
def test_fuzz_jitterdebugger_samples(tmp_path, raw, keep):
    """Any samples.raw beside the real results.json: a prefix of the real one with garbage after it."""
    d = tmp_path / f"jd-{uuid.uuid4().hex}"
    d.mkdir()
    src = DATA / "jitterdebugger" / "run"
    (d / "results.json").write_bytes((src / "results.json").read_bytes())
    (d / "samples.raw").write_bytes((src / "samples.raw").read_bytes()[: keep * 28] + raw)
    _parse_or_rtqerror("jitterdebugger", d)

"""`rtqual compare A B`: two bundles of the fake probe with known samples, side by side."""

import json
from pathlib import Path

import pytest

from conftest import needs_probe
from rtqual.answers.compare import pairs
from rtqual.errors import RtqError
from rtqual.publish import compare

pytestmark = needs_probe


def bundle(tmp_path, rtqual_cmd, name, latencies_ns):
    script = tmp_path / f"{name}.script"
    script.write_text("".join(f"sample 0 {v} 0\n" for v in latencies_ns))
    assert rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / name, "-q").returncode == 0
    return tmp_path / name


def test_compare_pairs_cases_and_gives_exact_ratios(tmp_path, rtqual_cmd):
    a = bundle(tmp_path, rtqual_cmd, "a", [10_000, 20_000, 30_000])
    b = bundle(tmp_path, rtqual_cmd, "b", [20_000, 40_000, 60_000])
    out = rtqual_cmd("compare", a, b, "--json")
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads(out.stdout)["pairs"]
    assert pair["id"] == pair["id_b"] == "001-fake" and pair["a"]["count"] == pair["b"]["count"] == 3
    assert pair["ratio_b_a"]["mean_ns"] == pair["ratio_b_a"]["max_ns"] == pair["ratio_b_a"]["min_ns"] == 2.0
    assert pair["ratio_b_a"]["p50_ns"] == pytest.approx(2.0, rel=2e-3)  # bucket tops, 0.1 % each
    text = rtqual_cmd("compare", a, b).stdout
    (ratios,) = [line.split() for line in text.splitlines() if line.startswith("B/A")]
    assert "case 001-fake:" in text and ratios[:4] == ["B/A", "2.00", "2.00", "2.00"]  # min, p50, mean


def test_compare_of_a_missing_bundle_is_one_line(tmp_path, rtqual_cmd):
    a = bundle(tmp_path, rtqual_cmd, "a", [10_000])
    out = rtqual_cmd("compare", a, tmp_path / "nosuch")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "not an rtqual bundle" in out.stderr


def case(case_id, label, p50):
    return {"id": case_id, "label": label, "verdict": "pass", "stats": {"count": 10, "p50_ns": p50, "max_ns": 0}}


def data(path, *cases):
    return {"path": path, "manifest": {}, "cases": list(cases)}


def test_pairs_by_id_then_by_label_and_lists_the_rest():
    a = data("A", case("001-timer-baseline", "timer", 10), case("002-ioc", "ioc kek", 100), case("003-x", "x", 1))
    b = data("B", case("001-ioc", "ioc kek", 50), case("003-x", "y", 2), case("004-z", "z", 3))
    both, only_a, only_b = pairs(a, b)
    assert [(ra["id"], rb["id"]) for ra, rb in both] == [("002-ioc", "001-ioc"), ("003-x", "003-x")]
    assert only_a == ["001-timer-baseline"] and only_b == ["004-z"]
    j = compare.compare_json(a, b)
    assert j["pairs"][0]["ratio_b_a"]["p50_ns"] == 0.5 and j["pairs"][0]["ratio_b_a"]["max_ns"] is None  # 0: no ratio
    with pytest.raises(RtqError, match="no case in common"):
        pairs(data("A", case("001-a", "a", 1)), data("B", case("001-b", "b", 1)))


def test_match_pairs_differently_labelled_cases_in_text_json_and_many(tmp_path, rtqual_cmd):
    """A fake-probe run and a frozen timer run share neither id nor label: no case in common until --match
    pairs them; the table then has p99.99 and overruns, and states the threshold."""
    a = bundle(tmp_path, rtqual_cmd, "a", [10_000, 20_000, 30_000])
    b = Path(__file__).resolve().parents[1] / "data" / "bundles" / "timer-raw"
    plain = rtqual_cmd("compare", a, b)
    assert plain.returncode == 1 and "no case in common" in plain.stderr and "--match" in plain.stderr
    timer = "timer fifo:80 1ms cpus 0"
    out = rtqual_cmd("compare", a, b, "--match", f"fake a.script={timer}", "--json")
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads(out.stdout)["pairs"]
    assert (pair["id"], pair["id_b"], pair["label_a"], pair["label_b"]) == (
        "001-fake",
        "001-timer",
        "fake a.script",
        timer,
    )
    assert pair["a"]["max_ns"] == 30_000 and "p9999_ns" in pair["a"] and "overruns" in pair["b"]
    text = rtqual_cmd("compare", a, b, "--match", "001-fake=001-timer").stdout
    head = next(line for line in text.splitlines() if line.lstrip().startswith("count"))
    assert head.split()[6:] == ["p99.99", "max", "stddev", "overruns", "%", "over", "100us"]
    many = rtqual_cmd("compare", a, b, b, "--match", f"fake a.script={timer}", "--json")
    (row,) = json.loads(many.stdout)["cases"]
    assert row["labels"] == ["fake a.script", timer, timer]
    report = rtqual_cmd("compare", a, b, "--match", f"fake a.script={timer}", "--report", tmp_path / "c.html")
    assert report.returncode == 0 and 'id="case-001-fake"' in (tmp_path / "c.html").read_text()
    for bad, why in ((f"nosuch={timer}", "no case 'nosuch'"), ("fake a.script", "A_LABEL=B_LABEL")):
        r = rtqual_cmd("compare", a, b, "--match", bad)
        assert r.returncode == 1 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_match_pairs_before_id_and_label():
    a = data("A", case("001-x", "x", 10), case("002-y", "y", 20))
    b = data("B", case("001-x", "x", 1), case("002-y", "y", 2))
    both, _, _ = pairs(a, b, {"x": "y"})
    assert [(ra["label"], rb["label"]) for ra, rb in both] == [("x", "y")]
    with pytest.raises(RtqError, match="no case 'z'"):
        pairs(a, b, {"x": "z"})


def test_what_differs_and_whether_it_is_within_the_spread(tmp_path):
    """Host aspects that differ are listed and equal ones are not; a difference smaller than the range over
    repeated cases (or CPUs) is within the spread, a larger one is not, and with one CPU and no repeat the
    spread is said to be unknown."""
    from kekstudy import kek_bundle
    from rtqual.answers import compare as answers
    from rtqual.publish.htmlreport import load_bundle

    std, rt = (load_bundle(kek_bundle(tmp_path / k, k, samples=200)) for k in ("std", "rt"))
    diff = dict(answers.differences([answers.host_aspects(b) for b in (std, rt)]))
    assert set(diff) == {"kernel", "preemption"} and diff["preemption"] == ["PREEMPT_VOLUNTARY", "PREEMPT_RT"]

    def timer(cid, mean, load="hackbench", per_cpu=None):
        stats = {"count": 100, "mean_ns": mean}
        params = {"policy": "fifo", "priority": 80, "interval_ns": 10**7, "cpus": [0]}
        return {"id": cid, "label": cid, "probe": "timer", "params": params, "stats": stats,
                "loads": [{"name": load}], "per_cpu": per_cpu or {"0": stats}}  # fmt: skip

    a = {"path": "a", "cases": [timer("x", 100), timer("x2", 130), timer("idle", 50, load="")]}
    b = {"path": "b", "cases": [timer("x", 120)]}
    assert len(answers.repeats(a, a["cases"][0])) == 2  # x and x2 ran alike; idle did not
    note = answers.spread_note([a, b], [a["cases"][0], b["cases"][0]], ["a", "b"], "mean_ns", "mean")
    assert "within the run-to-run spread (30ns over 2 repeated cases)" in note
    b["cases"][0]["stats"]["mean_ns"] = 200
    note = answers.spread_note([a, b], [a["cases"][0], b["cases"][0]], ["a", "b"], "mean_ns", "mean")
    assert "larger than the run-to-run spread" in note
    lone = {"path": "c", "cases": [timer("idle", 50, load="")]}
    note = answers.spread_note([lone, b], [lone["cases"][0], b["cases"][0]], ["c", "b"], "mean_ns", "mean")
    assert "spread unknown" in note
    two_cpus = {"0": {"mean_ns": 40}, "1": {"mean_ns": 200}}
    lone["cases"][0]["per_cpu"] = two_cpus
    note = answers.spread_note([lone, b], [lone["cases"][0], b["cases"][0]], ["c", "b"], "mean_ns", "mean")
    assert "within the run-to-run spread (160ns over 2 CPUs)" in note

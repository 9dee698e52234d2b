"""`rtqual compare A B`: two bundles of the fake probe with known samples, side by side."""

import json

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

"""The report's figure data and its tolerance of damaged bundles (pure functions; the browser tests
open the HTML itself)."""

import json
import random
import shutil
from pathlib import Path

from rtqual.publish import htmlreport
from rtqual.results.hist import Histogram

BUNDLES = Path(__file__).resolve().parents[1] / "data" / "bundles"


def hist(values):
    h = Histogram()
    for v in values:
        h.record(v)
    return h


def test_histogram_bins_keep_every_sample_and_the_worst_case():
    rng = random.Random(3)
    values = [rng.randrange(1_000, 900_000) for _ in range(5000)] + [2_345_678]
    series, worst = htmlreport.hist_series({"0": hist(values), "1": hist(values[:10])})
    assert worst == 2_345_678
    for s, n in zip(series, (len(values), 10)):
        assert sum(round(y) for y in s.ys if y >= 1) == n  # zero bins are drawn at 0.5
        assert len(s.xs) <= htmlreport.HIST_BINS + 2 and s.xs[-1] * 1000 >= worst


def test_tail_is_a_falling_fraction_ending_at_one_sample():
    h = hist(range(1_000, 101_000, 1_000))
    (s,) = htmlreport.tail_series({"0": h})
    assert all(a >= b for a, b in zip(s.ys, s.ys[1:])) and s.ys[0] < 1
    assert s.ys[-1] == 1 / 100 and s.xs[-1] == 100.0


def test_envelope_keeps_every_spike():
    pts = [(t, 10.0) for t in range(100_000)]
    pts[54_321] = (54_321, 9_999.0)
    xs, hi, lo = htmlreport.envelope(pts, limit=2000)
    assert len(xs) <= 2000 and max(hi) == 9_999.0 and min(lo) == 10.0


def test_over_time_is_bounded_and_keeps_every_spike():
    over = htmlreport.OverTime(limit=100)
    for t in range(100_000):  # a day and more of progress records, one CPU idle (count 0)
        spike = 9_999_000 if t == 54_321 else 10_000
        cpus = [{"cpu": 0, "count": t + 1, "window_max_ns": spike}, {"cpu": 1, "count": 0, "window_max_ns": 0}]
        over.add({"type": "progress", "elapsed_ns": t * 10**9, "cpus": cpus})
    (s,) = over.series()
    assert s.name == "cpu0" and 50 <= len(s.xs) <= 100 and over.unit()[0] == "h"
    assert max(s.ys) == 9_999.0 and s.band is not None and min(s.band) == 10.0
    assert s.xs == sorted(s.xs) and s.xs[0] == 0


def test_over_time_short_run_has_every_point_and_no_band():
    recs = [{"elapsed_ns": t * 10**9, "cpus": [{"cpu": 0, "count": 1, "window_max_ns": 1000 * t}]} for t in range(5)]
    (s,) = htmlreport.max_over_time_series(recs)
    assert s.ys == [0.0, 1.0, 2.0, 3.0, 4.0] and s.band is None


def test_report_of_the_frozen_bundles_names_every_case_and_number(tmp_path):
    data = [htmlreport.load_bundle(BUNDLES / b) for b in ("scenario", "ioc", "timer-raw")]
    html = htmlreport.render(data)
    assert "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched
    for d in data:
        for r in d["cases"]:
            assert f'id="case-{r["id"]}"' in html
            assert f'data-key="p99_ns" data-value="{r["stats"]["p99_ns"]}"' in html
    assert html.count("<svg") == len([f for d in data for f in htmlreport.figures(d)])


def test_a_damaged_bundle_still_reports_and_says_what_is_missing(tmp_path):
    b = tmp_path / "b"
    shutil.copytree(BUNDLES / "scenario", b)
    (b / "cases" / "001-timer-idle" / "result.json").write_text("{not json")
    (b / "cases" / "002-timer-hackbench" / "hist.json").unlink()
    (b / "cases" / "002-timer-hackbench" / "stream.jsonl").unlink()
    m = json.loads((b / "manifest.json").read_text())
    m["status"] = "running"
    (b / "manifest.json").write_text(json.dumps(m))
    data = htmlreport.load_bundle(b)
    html = htmlreport.render([data])
    assert "cases/001-timer-idle/result.json" in html
    assert "hist.json (no histogram figures)" in html and "stream.jsonl (no figure over time)" in html
    assert "the run did not finish" in html


def test_png_without_matplotlib_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    """`report --png` where matplotlib is not installed (a plain `pip install .`): exit 1 and one line naming
    what to install, and neither the report nor the folder written (tests/integration/test_plain_install.py
    runs the same from a real plain venv)."""
    import importlib.util

    from rtqual import cli

    find_spec = importlib.util.find_spec
    hidden = lambda name, *a: None if name == "matplotlib" else find_spec(name, *a)
    monkeypatch.setattr(importlib.util, "find_spec", hidden)
    bundle = Path(shutil.copytree(BUNDLES / "timer-raw", tmp_path / "b"))
    assert cli.main(["report", str(bundle), "--png", str(tmp_path / "figs")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "matplotlib" in err[0] and "pip install" in err[0], err
    assert not (tmp_path / "figs").exists() and not (bundle / "report.html").exists()

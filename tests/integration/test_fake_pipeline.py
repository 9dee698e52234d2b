"""The whole pipeline (probe -> stream -> runner -> bundle -> show/export) with the fake probe: no root."""

import json
import signal
import subprocess
import sys
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import needs_probe, show_json
from rtqual.measure.run import native
from rtqual.results.hist import HIGHEST_NS, PERCENTILES_PPM, Histogram

pytestmark = needs_probe


def write_script(path, samples, extra=""):
    lines = [f"sample {cpu} {lat} {skip}" for cpu, lat, skip in samples]
    path.write_text("# test script\n" + "\n".join(lines) + "\n" + extra)
    return path


def run_probe(script, *args):
    out = subprocess.run(
        [native.probe_path(), "fake", "--script", script, *args], capture_output=True, text=True, timeout=60
    )
    return out, [json.loads(line) for line in out.stdout.splitlines()]


SAMPLES = [(0, 5_000, 0), (0, 150_000, 2), (0, 7_500, 0), (1, 90_000, 0), (1, 2_000_000, 1), (1, 12, 0)]


def test_run_show_json(tmp_path, rtqual_cmd):
    script = write_script(tmp_path / "s.txt", SAMPLES, 'warn hello "there"\n')
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / "b", "-q")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(tmp_path / "b")
    assert "cpu0" in out.stdout and "COMPLETED — not judged" in out.stdout
    shown = rtqual_cmd("show", tmp_path / "b", "--json")
    case = json.loads(shown.stdout)["cases"][0]
    s = case["stats"]
    assert s["count"] == 6 and s["min_ns"] == 12 and s["max_ns"] == 2_000_000
    assert s["overruns"] == 3 and s["over_threshold"] == 2
    assert case["per_cpu"]["0"]["count"] == 3 and case["per_cpu"]["1"]["max_ns"] == 2_000_000
    assert 'hello "there"' in case["warnings"]
    files = {p.name for p in (tmp_path / "b" / "cases" / "001-fake").iterdir()}
    assert {"params.json", "result.json", "hist.json", "hist-all.hdr", "hist-cpu0.hdr", "stream.jsonl"} <= files
    assert {p.name for p in (tmp_path / "b" / "host").iterdir()} >= {"facts-before.json", "facts-after.json"}
    assert rtqual_cmd("show", tmp_path / "b").stdout.count("cpu1") == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=0, max_value=HIGHEST_NS), min_size=1, max_size=300))
def test_c_and_python_percentiles_identical(tmp_path, values):
    """One percentile definition: the C summary equals the Python histogram on the same samples."""
    script = write_script(tmp_path / "p.txt", [(0, v, 0) for v in values])
    out, recs = run_probe(script)
    assert out.returncode == 0, out.stderr
    summary = next(r for r in recs if r["type"] == "summary")["cpus"][0]
    hist = Histogram.from_record(next(r for r in recs if r["type"] == "hist"))
    mine = Histogram()
    for v in values:
        mine.record(v)
    assert hist == mine
    for key, ppm in PERCENTILES_PPM.items():
        assert summary[key] == mine.percentile_ns(ppm), key
    assert summary["min_ns"] == min(values) and summary["max_ns"] == max(values)
    assert summary["mean_ns"] == round(sum(values) / len(values))


def test_out_of_range_is_inconclusive(tmp_path, rtqual_cmd):
    script = write_script(tmp_path / "s.txt", [(0, 5, 0), (0, HIGHEST_NS + 1, 0)])
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / "b", "-q")
    assert out.returncode == 4
    case = show_json(tmp_path / "b")["cases"][0]
    assert case["verdict"] == "inconclusive" and any("histogram range" in w for w in case["warnings"])


def test_crash_keeps_partial_result(tmp_path, rtqual_cmd):
    script = write_script(tmp_path / "s.txt", SAMPLES, "progress\ncrash\n")
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / "b", "-q")
    assert out.returncode == 1, out.stderr
    case = show_json(tmp_path / "b")["cases"][0]
    assert case["verdict"] == "error" and "SIGABRT" in case["reason"] and case["stats"]["count"] == 6


def test_raw_export(tmp_path, rtqual_cmd):
    script = write_script(tmp_path / "s.txt", SAMPLES)
    assert rtqual_cmd("run", "fake", "--script", script, "--raw", "-o", tmp_path / "b", "-q").returncode == 0
    csv = rtqual_cmd("export", "raw", tmp_path / "b").stdout.splitlines()
    assert csv[0] == "case,cpu,time_ns,latency_ns"
    rows = sorted((int(c), int(lat)) for _, c, _, lat in (r.split(",") for r in csv[1:]))
    assert rows == sorted((cpu, lat) for cpu, lat, _ in SAMPLES)
    assert (tmp_path / "b" / "cases" / "001-fake" / "raw.bin").stat().st_size == 64 + 16 * len(SAMPLES)


def test_sigint_keeps_measured_part(tmp_path):
    script = write_script(tmp_path / "s.txt", SAMPLES, "progress\nsleep 20000\nsample 0 1 0\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", "fake", "--script", str(script), "-o", str(tmp_path / "b"), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    stream = tmp_path / "b" / "cases" / "001-fake" / "stream.jsonl"
    while time.monotonic() < deadline and '"progress"' not in (stream.read_text() if stream.exists() else ""):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, err
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["verdict"] == "inconclusive"
    result = json.loads((tmp_path / "b" / "cases" / "001-fake" / "result.json").read_text())
    assert result["stats"]["count"] == 6 and result["verdict"] == "inconclusive"

"""Long runs in compressed time: the fake probe replays a day of progress records and threshold
events at full speed through `rtqual run`; rtqual's memory stays flat, nothing is lost, and the
bundle size of a day is recorded. The hour at 10 kHz on real CPUs is benchmarks/long_run.py."""

import json
import subprocess
import sys
import time
from collections import Counter

import pytest

from conftest import needs_probe
from rtqual.publish import htmlreport
from rtqual.util import rss_kb

pytestmark = [needs_probe, pytest.mark.slow]

DAY_S = 86_400  # one progress record per simulated second, as the real probes emit by default
EVENTS_PER_S = 2  # threshold events per simulated second (two samples above 100 us)
RSS_FLAT_KB = 8 * 1024  # last quarter's peak may exceed the first quarter's by at most this


def day_script(path, seconds=DAY_S):
    """A compressed day: per simulated second three samples on two CPUs (two above the threshold)
    and one progress record."""
    path.write_text(f"repeat {seconds}\nsample 0 5000\nsample 1 200000\nsample 0 300000 1\nprogress\nend\nexit 0\n")
    return path


def run_sampled(args, out_path, period_s=0.05, timeout_s=150):
    """Run rtqual (stdout to a file: the plain progress lines), sampling its RSS; (exit code, [kB]).
    About 20 s here; the timeout only guards against a hang on a busy machine."""
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rtqual", *map(str, args)], stdout=out, stderr=out)
        samples, deadline = [], time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            kb = rss_kb(proc.pid)
            if kb:
                samples.append(kb)
            time.sleep(period_s)
        if proc.poll() is None:
            proc.kill()
            pytest.fail(f"rtqual run did not finish within {timeout_s} s")
    return proc.wait(), samples


def test_compressed_day_rss_flat_nothing_lost(tmp_path, record_property):
    script = day_script(tmp_path / "day.txt")
    bundle = tmp_path / "b"
    args = ["run", "fake", "--script", script, "--max-events", "1000000", "-o", bundle]
    code, rss = run_sampled(args, tmp_path / "out.txt")
    assert code == 0, (tmp_path / "out.txt").read_text()[-2000:]
    assert len(rss) >= 20, "too few RSS samples to judge"
    q = len(rss) // 4
    first, last = max(rss[:q]), max(rss[-q:])
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    record_property("bundle_bytes_per_day", size)
    record_property("rss_kb_first_quarter_max", first)
    record_property("rss_kb_last_quarter_max", last)
    print(
        f"compressed day: {len(rss)} RSS samples, max {first} kB (first quarter) -> {last} kB (last); bundle {size} B"
    )
    assert last - first <= RSS_FLAT_KB, f"rtqual's RSS grew {first} -> {last} kB over a day"

    # nothing measured is lost: every record is in the stream, the counts in the result
    case = bundle / "cases" / "001-fake"
    with open(case / "stream.jsonl") as f:
        kinds = Counter(rec.get("kind", rec["type"]) for rec in map(json.loads, f))
    assert kinds["progress"] == DAY_S and kinds["threshold"] == EVENTS_PER_S * DAY_S
    result = json.loads((case / "result.json").read_text())
    assert result["stats"]["count"] == 3 * DAY_S
    assert result["stats"]["over_threshold"] == EVENTS_PER_S * DAY_S
    assert result["stats"]["overruns"] == DAY_S
    assert result["threshold_events_total"] == EVENTS_PER_S * DAY_S
    assert len(result["threshold_events"]) <= 1000

    # the report's figure over time reads the whole day in bounded memory, every spike kept
    data = htmlreport.load_bundle(bundle)
    over = data["cases"][0]["over_time"]
    series = {s.name: s for s in over.series()}
    assert set(series) == {"cpu0", "cpu1"}
    assert all(len(s.xs) <= htmlreport.ENVELOPE_POINTS for s in series.values())
    assert max(series["cpu0"].ys) == 300.0 and max(series["cpu1"].ys) == 200.0

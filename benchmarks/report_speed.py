"""How fast `rtqual report` builds and draws a long run: a synthetic 24 h bundle (2 CPUs, one progress
record a second, full histograms), the report built with rtqual's own code, then opened in Debian's
chromium through playwright, timing the load until every figure is drawn.

    .venv/bin/python benchmarks/report_speed.py [--hours 24] [--cpus 2] [--keep DIR]

Goals (issue 12): build < 2 s, HTML < 1 MB, every figure drawn within 1 s of loading.
"""

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtqual.results import bundle as bundle_mod
from rtqual.results.hist import Histogram
from rtqual.results.stats import cpu_stats


def synthetic_bundle(path: Path, hours: float, cpus: int, seed: int = 1) -> Path:
    """A bundle as rtqual writes it: manifest, one timer case with per-CPU histograms of a 1 kHz run and
    one progress record per second per CPU, with rare spikes."""
    rng = random.Random(seed)
    seconds = int(hours * 3600)
    case = path / "cases" / "001-timer"
    case.mkdir(parents=True)
    hists = {cpu: Histogram() for cpu in range(cpus)}
    with open(case / "stream.jsonl", "w") as f:
        f.write(json.dumps({"type": "header", "probe": "timer", "params": {"interval_ns": 1_000_000}}) + "\n")
        for s in range(1, seconds + 1):
            recs = []
            for cpu, h in hists.items():
                window_max = int(rng.lognormvariate(10.3, 0.4)) + (rng.random() < 0.001) * rng.randrange(10**6)
                h.record(int(rng.lognormvariate(9.9, 0.3)), 999)
                h.record(window_max)
                recs.append(
                    {
                        "cpu": cpu,
                        "count": h.count,
                        "min_ns": h.min_ns,
                        "max_ns": h.max_ns,
                        "window_max_ns": window_max,
                        "overruns": 0,
                        "over_threshold": 0,
                    }
                )
            f.write(json.dumps({"type": "progress", "elapsed_ns": s * 10**9, "cpus": recs}) + "\n")
    merged = Histogram()
    for h in hists.values():
        merged = merged.merge(h)
    bundle_mod.write_json(
        case / "hist.json",
        {"layout": "hdr", "all": merged.to_record(), "per_cpu": {str(c): h.to_record() for c, h in hists.items()}},
    )
    result = {
        "schema_version": 1,
        "id": "001-timer",
        "label": f"timer synthetic {hours:g} h",
        "probe": "timer",
        "params": {"interval_ns": 1_000_000, "threshold_ns": 100_000},
        "requirements": {},
        "verdict": "pass",
        "reason": "completed",
        "stats": cpu_stats(merged, None),
        "per_cpu": {str(c): cpu_stats(h, None) for c, h in hists.items()},
        "warnings": [],
    }
    bundle_mod.write_json(case / "result.json", result)
    bundle_mod.write_json(
        path / "manifest.json",
        {
            "schema_version": 1,
            "rtqual_version": "synthetic",
            "argv": ["benchmarks/report_speed.py"],
            "hostname": "synthetic",
            "start": "-",
            "end": "-",
            "status": "complete",
            "verdict": "pass",
            "cases": [{k: result[k] for k in ("id", "label", "probe", "verdict")}],
        },
    )
    return path


def draw_time_s(html: Path) -> tuple[float, int]:
    """Seconds from navigation start until every figure has its paths laid out, and the figure count."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium")
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(html.as_uri())
        n = page.evaluate("""() => { const s = [...document.querySelectorAll('svg.chart')];
            s.forEach(e => e.getBBox()); return s.length; }""")
        elapsed = time.perf_counter() - t0
        browser.close()
    return elapsed, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the synthetic bundle and report in this folder")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="rtqual-report-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    b = synthetic_bundle(work / "bundle", a.hours, a.cpus)
    print(f"synthetic bundle: {a.hours:g} h, {a.cpus} CPUs, made in {time.perf_counter() - t:.1f} s")
    out = work / "report.html"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtqual", "report", str(b), "-o", str(out)], check=True)
    build_s = time.perf_counter() - t
    size = out.stat().st_size
    draw_s, figures = draw_time_s(out)
    print(f"report build (rtqual report, whole process): {build_s:.2f} s  (goal < 2 s)")
    print(f"report size: {size / 1e6:.2f} MB  (goal < 1 MB)")
    print(f"chromium: {figures} figures drawn {draw_s:.2f} s after navigation  (goal < 1 s)")
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

"""How long `rtqual history --report` takes and how large its page is for a year of one host: 365 days of
1-minute monitor windows of one CPU (525,600 windows, synthetic: a log-normal body, a daily load hump, rare
spikes, a kernel update half-way) in a temp SQLite store, then the page rendered in-process as the command
does (store read + page), timed. Issue 39's bound: < 2 s and < 2 MB.

    .venv/bin/python benchmarks/history_report_scale.py [--days 365] [--store URL] [--keep]

Filling the store takes a while (it is not what is timed). Prints the fill time, the render time, the page's
size and the store's.
"""

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from rtqual.publish.htmlreport.longview import render
from rtqual.publish.store import open_store
from rtqual.publish.store.longview import gather
from rtqual.results.window import COARSE_PER_DECADE, coarse_text

BOUND_S, BOUND_MB = 2.0, 2.0


def window(t: float, rng: random.Random, kernel: str) -> dict:
    """One synthetic minute at 1 kHz: 60,000 samples around 10 µs (busier by day), now and then a spike."""
    day_load = 1 + 0.5 * math.sin(2 * math.pi * (t % 86400) / 86400)
    mid = math.log10(8_000 * day_load)
    bins: dict[int, int] = {}
    left = 60_000
    for k in range(int(COARSE_PER_DECADE * (mid - 0.3)), int(COARSE_PER_DECADE * (mid + 0.6))):
        n = int(60_000 * math.exp(-(((k / COARSE_PER_DECADE) - mid) ** 2) / 0.02) / 6)
        n = min(n, left)
        if n:
            bins[k] = n
            left -= n
    top = max(bins)
    if rng.random() < 0.002:
        top = int(COARSE_PER_DECADE * rng.uniform(5.0, 5.5))  # 100-300 µs
        bins[top] = bins.get(top, 0) + 1
    samples = sum(bins.values())
    max_ns = int(10 ** ((top + 0.5) / COARSE_PER_DECADE))
    return {
        "host": "bench",
        "probe": "timer",
        "run_as": "timer",
        "cpu": 1,
        "start_unix_s": t,
        "duration_s": 60.0,
        "samples": samples,
        "min_ns": 4_000,
        "mean_ns": 10**mid,
        "p50_ns": int(10**mid),
        "p99_ns": int(10 ** (mid + 0.4)),
        "p9999_ns": None,  # 60,000 samples do not carry it
        "max_ns": max_ns,
        "over_threshold": 0,
        "overruns": 0,
        "threshold_ns": 100_000,
        "kernel": kernel,
        "preempt": "PREEMPT_RT",
        "hist": coarse_text(bins),
    }


def fill(url: str, days: int) -> float:
    rng = random.Random(39)
    t0 = (time.time() // 86400 - days) * 86400
    began = time.monotonic()
    with open_store(url) as s:
        for d in range(days):
            kernel = "6.1.0-27-rt-amd64" if d < days // 2 else "6.12.9-rt-amd64"
            s.add_windows([window(t0 + d * 86400 + 60 * m, rng, kernel) for m in range(1440)])
    return time.monotonic() - began


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--store", help="a store URL (default: a temp SQLite file)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (store and page)")
    a = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rtqual-history-report-"))
    url = a.store or str(folder / "history.sqlite")
    fill_s = fill(url, a.days)
    began = time.monotonic()
    with open_store(url, write=False) as s:
        data = gather(s, None, None, [])
    html = render(data)
    page = folder / "history.html"
    page.write_text(html)
    render_s = time.monotonic() - began
    size_mb = len(html.encode()) / 1e6
    store_mb = os.path.getsize(url) / 1e6 if not a.store else float("nan")
    print(f"{a.days} days of 1-minute windows (one CPU): store filled in {fill_s:.1f} s ({store_mb:.1f} MB)")
    print(f"history --report: {render_s:.2f} s (bound {BOUND_S} s), page {size_mb:.2f} MB (bound {BOUND_MB} MB)")
    print(f"page: {page}" if a.keep else "")
    if not a.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0 if render_s < BOUND_S and size_mb < BOUND_MB else 1


if __name__ == "__main__":
    sys.exit(main())

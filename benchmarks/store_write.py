"""How fast the history store takes monitor windows and how large a host-day is: a day of windows of one
host (86 400 one-second windows of one CPU by default, the issue's compressed-time day) put through a
WindowSink as fast as possible, then `rtqual history` over them timed; SQLite by default, or --store URL.

    .venv/bin/python benchmarks/store_write.py [--windows 86400] [--cpus 1] [--store URL]

Prints seconds, windows per second, the peak unsent buffer, and for SQLite the file size per host-day.
"""

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from rtqual.publish.store import WindowSink, open_store


def day_windows(n: int, cpus: int, seed: int = 1) -> list[dict]:
    """n windows per CPU, one a second, with realistic spread and rare spikes."""
    rng = random.Random(seed)
    t0 = time.time() - n
    out = []
    for i in range(n):
        for cpu in range(cpus):
            p99 = rng.randint(40_000, 90_000)
            out.append(
                {
                    "host": "bench",
                    "probe": "timer",
                    "run_as": "timer",
                    "cpu": cpu,
                    "start_unix_s": t0 + i,
                    "duration_s": 1.0,
                    "samples": 1000,
                    "min_ns": rng.randint(9_000, 13_000),
                    "mean_ns": rng.uniform(25_000, 45_000),
                    "p50_ns": rng.randint(20_000, 40_000),
                    "p99_ns": p99,
                    "p9999_ns": p99 + rng.randint(0, 50_000),
                    "max_ns": p99 + rng.choice([0] * 99 + [5_000_000]),
                    "over_threshold": rng.choice([0] * 9 + [1]),
                    "overruns": 0,
                    "threshold_ns": 100_000,
                    "kernel": "6.1.0-rt",
                    "preempt": "PREEMPT_RT",
                }  # fmt: skip
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=86_400, help="windows per CPU (default 86400: 1 s for a day)")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--store", help="store URL (default: a new SQLite file in a temp folder)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rtqual-store-bench-")
    url = a.store or str(Path(tmp) / "history.sqlite")
    windows = day_windows(a.windows, a.cpus)
    sink = WindowSink(url, limit_windows=len(windows))
    t0, peak = time.monotonic(), 0
    for w in windows:
        sink.put(w)
        peak = max(peak, len(sink.buffer))
    left = sink.close(600)
    write_s = time.monotonic() - t0
    t1 = time.monotonic()
    with open_store(url) as s:
        stored = len(s.windows(host="bench"))
    read_s = time.monotonic() - t1
    print(f"store: {url}")
    print(f"windows: {len(windows)} put, {stored} stored, {left} unsent, {sink.dropped} dropped, peak buffer {peak}")
    print(f"write: {write_s:.2f} s, {len(windows) / write_s:.0f} windows/s; read back: {read_s:.2f} s")
    if not a.store:
        size = sum(f.stat().st_size for f in Path(tmp).iterdir())
        per_day = size * 86_400 / a.windows
        print(
            f"SQLite size: {size / 1e6:.1f} MB, {size / len(windows):.0f} B/window, {per_day / 1e6:.1f} MB per host-day"
        )
        print(f"  ({a.cpus} CPU(s), 1 s windows; a 1-minute window gives 1/60 of it)")
        for f in Path(tmp).iterdir():
            os.unlink(f)
        os.rmdir(tmp)
    return 0 if stored == len(windows) and left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

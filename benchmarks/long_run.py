#!/usr/bin/env python3
"""A long run of the timer probe at 10 kHz on both CPUs through `rtqual run`, with the resident memory
of rtqual (Python) and of rtqual-probe (C) sampled from /proc every few seconds. Run as root:

    .venv/bin/python benchmarks/long_run.py [--duration 1h] [--interval 100us] [--cpus 0-1]
                                            [--every 5] [--keep DIR]

Prints RSS of both processes at start, middle and end (and their maxima), the bundle size, a day's
bundle size (the files that grow with time scaled, the fixed-size ones as they are), and samples/s.
Memory is flat when the end is within a few MB of the start.
The issue's figure is one hour; the compressed-time day is tests/integration/test_long_run.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtqual.units import parse_duration_ns
from rtqual.util import child_named, rss_kb

GROWING = ("stream.jsonl", "host-samples.jsonl", "raw.bin")  # the rest (histograms, result, report) is fixed size


def sample_run(cmd: list[str], every_s: float, limit_s: float) -> tuple[int, list[tuple[float, int, int | None]]]:
    """Run cmd, sampling (seconds since start, rtqual kB, probe kB) every every_s; (exit code, samples)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    samples = []
    try:
        while proc.poll() is None:
            if time.monotonic() - t0 > limit_s:
                proc.terminate()  # rtqual stops the probe and keeps what it measured
                break
            kb = rss_kb(proc.pid)
            pp = child_named(proc.pid, "rtqual-probe")
            if kb:
                samples.append((time.monotonic() - t0, kb, rss_kb(pp) if pp else None))
            time.sleep(every_s)
    except KeyboardInterrupt:
        proc.terminate()
    return proc.wait(), samples


def at(samples: list, frac: float) -> tuple:
    """The sample nearest a fraction of the run, among those where the probe was running."""
    live = [s for s in samples if s[2]] or samples
    return live[min(int(frac * (len(live) - 1) + 0.5), len(live) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="1h", help="measured time (default 1h)")
    ap.add_argument("--interval", default="100us", help="timer period (default 100us = 10 kHz)")
    ap.add_argument("--cpus", default="0-1", help="CPUs measured (default 0-1)")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples (default 5)")
    ap.add_argument("--keep", type=Path, help="keep the bundle in this (new) directory")
    a = ap.parse_args()
    try:
        duration_ns = parse_duration_ns(a.duration)
    except ValueError as e:
        print(f"long_run: --duration: {e}", file=sys.stderr)
        return 1
    if a.every <= 0:
        print("long_run: --every must be > 0 seconds", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="rtqual-longrun-"))
    bundle = a.keep or work / "bundle"
    cmd = [sys.executable, "-m", "rtqual", "run", "timer", "--interval", a.interval, "--cpus", a.cpus]
    cmd += ["--duration", a.duration, "-o", str(bundle), "-q"]
    print("running:", " ".join(cmd), flush=True)
    try:
        code, samples = sample_run(cmd, a.every, duration_ns / 1e9 + 120)
        if not samples:
            print("long_run: rtqual ended before the first sample", file=sys.stderr)
            return 1
        print(f"exit {code}; {len(samples)} RSS samples every {a.every:g} s")
        print(f"{'':8}{'t (s)':>8}{'rtqual kB':>12}{'probe kB':>12}")
        for name, frac in (("start", 0.0), ("middle", 0.5), ("end", 1.0)):
            t, py_kb, probe_kb = at(samples, frac)
            print(f"{name:8}{t:8.0f}{py_kb:12}{probe_kb or '-':>12}")
        print(f"{'max':8}{'':8}{max(s[1] for s in samples):12}{max(s[2] or 0 for s in samples):12}")
        files = [p for p in bundle.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        growing = sum(p.stat().st_size for p in files if p.name in GROWING)
        per_day = size - growing + growing * 86400e9 / duration_ns
        print(f"bundle {size / 1e6:.2f} MB, of which {growing / 1e6:.2f} MB grow with time ({', '.join(GROWING)})")
        print(f"a day at this rate: about {per_day / 1e6:.0f} MB")
        for res in sorted(bundle.glob("cases/*/result.json")):
            r = json.loads(res.read_text())
            count = (r.get("stats") or {}).get("count") or 0
            print(f"{r['id']}: verdict {r['verdict']}, {count} samples, {count / (duration_ns / 1e9):.0f} samples/s")
        return 0 if code in (0, 2) else code
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

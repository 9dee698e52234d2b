#!/usr/bin/env python3
"""rtqual's timer probe and cyclictest (rt-tests), alternately, identical settings, several rounds.

Prints per round and the median ratios rtqual/cyclictest of mean, p99 and max
latency and of CPU time per wake-up. A ratio near 1 means rtqual measures what
cyclictest measures, at the same cost. Run as root:

    .venv/bin/python benchmarks/timer_vs_cyclictest.py [--rounds 5] [--duration 10s] [--cpu 0]
                                                       [--interval 1ms] [--priority 80]

Percentiles are taken the same way for both (nearest rank, rank = ceil(p*N)):
from cyclictest's 1 us histogram (-h) and from rtqual's HDR histogram.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from rtqual.measure.run import native
from rtqual.results.hist import Histogram, rank_of
from rtqual.units import format_ns, parse_duration_ns


def child_cpu_s() -> float:
    r = os.times()
    return r.children_user + r.children_system


def rtqual_round(a) -> dict:
    before = child_cpu_s()
    out = subprocess.run(
        [
            native.probe_path(),
            "timer",
            "--cpus",
            str(a.cpu),
            "--priority",
            str(a.priority),
            "--interval",
            a.interval,
            "--duration",
            a.duration,
            "--warmup",
            "0",
            "--no-tracemark",
            "--max-events",
            "0",
        ],
        capture_output=True,
        text=True,
    )
    cpu_s = child_cpu_s() - before
    if out.returncode != 0:
        sys.exit(f"rtqual-probe failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    recs = [json.loads(line) for line in out.stdout.splitlines()]
    h = Histogram.from_record(next(r for r in recs if r["type"] == "hist"))
    s = next(r for r in recs if r["type"] == "summary")["cpus"][0]
    return {
        "count": h.count,
        "mean_ns": h.mean_ns(),
        "p99_ns": h.percentile_ns(990_000),
        "max_ns": h.max_ns,
        "cpu_ns_per_wakeup": cpu_s * 1e9 / max(s["wakeups"], 1),
        "overruns": s["overruns"],
    }


def cyclictest_round(a) -> dict:
    interval_us = parse_duration_ns(a.interval) // 1000
    duration_s = max(1, parse_duration_ns(a.duration) // 1_000_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "ct.json")
        before = child_cpu_s()
        out = subprocess.run(
            [
                "cyclictest",
                "-m",
                "-t1",
                "-a",
                str(a.cpu),
                "-p",
                str(a.priority),
                "-i",
                str(interval_us),
                "-D",
                f"{duration_s}",
                "-q",
                "-h",
                str(a.hist_us),
                f"--json={js}",
            ],
            capture_output=True,
            text=True,
        )
        cpu_s = child_cpu_s() - before
        if out.returncode != 0:
            sys.exit(f"cyclictest failed ({out.returncode}): {out.stderr.strip()[-300:]}")
        with open(js) as f:
            doc = json.load(f)
    thread = next(iter(doc["thread"].values()))
    hist_us = {int(k): int(v) for k, v in thread["histogram"].items()}
    cycles = int(thread["cycles"])
    overflow = cycles - sum(hist_us.values())
    rank = rank_of(990_000, cycles)
    seen, p99_ns = 0, None
    for us in sorted(hist_us):
        seen += hist_us[us]
        if seen >= rank:
            p99_ns = (us + 1) * 1000 - 1  # highest value of the 1 us bucket, like ours
            break
    if p99_ns is None:
        sys.exit(f"cyclictest p99 beyond its histogram ({overflow} overflows): raise --hist-us")
    return {
        "count": cycles,
        "mean_ns": float(thread["avg"]) * 1000,
        "p99_ns": min(p99_ns, int(thread["max"]) * 1000 + 999),
        "max_ns": int(thread["max"]) * 1000,
        "cpu_ns_per_wakeup": cpu_s * 1e9 / max(cycles, 1),
        "overflows": overflow,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", default="10s")
    p.add_argument("--interval", default="1ms")
    p.add_argument("--cpu", type=int, default=0)
    p.add_argument("--priority", type=int, default=80)
    p.add_argument("--hist-us", type=int, default=20000, help="cyclictest histogram size in us (holds p99)")
    a = p.parse_args()
    if shutil.which("cyclictest") is None:
        sys.exit("cyclictest not found: apt-get install rt-tests")
    if os.geteuid() != 0:
        sys.exit("run as root (both tools need SCHED_FIFO and mlockall)")
    keys = ["mean_ns", "p99_ns", "max_ns", "cpu_ns_per_wakeup"]
    ratios = {k: [] for k in keys}
    print(f"# {a.rounds} rounds of {a.duration} at {a.interval}, CPU {a.cpu}, SCHED_FIFO {a.priority}")
    print(f"{'round':>5} {'tool':>10} {'count':>7} {'mean':>8} {'p99':>8} {'max':>8} {'cpu/wakeup':>11}")
    for i in range(a.rounds):
        order = [("rtqual", rtqual_round), ("cyclictest", cyclictest_round)]
        if i % 2:  # alternate the order so drift does not favour one tool
            order.reverse()
        pair = [(name, fn(a)) for name, fn in order]
        res = dict(pair)
        for name, r in pair:
            print(
                f"{i:>5} {name:>10} {r['count']:>7} {format_ns(r['mean_ns']):>8} {format_ns(r['p99_ns']):>8} "
                f"{format_ns(r['max_ns']):>8} {format_ns(r['cpu_ns_per_wakeup']):>11}"
            )
        for k in keys:
            ratios[k].append(res["rtqual"][k] / res["cyclictest"][k] if res["cyclictest"][k] else float("nan"))
    print("\nmedian ratio rtqual/cyclictest over", a.rounds, "rounds:")
    for k in keys:
        print(f"  {k:<20} {statistics.median(ratios[k]):.3f}   (rounds: {', '.join(f'{x:.2f}' for x in ratios[k])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

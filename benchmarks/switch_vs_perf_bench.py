#!/usr/bin/env python3
"""rtqual's switch probe and `perf bench sched pipe`, alternately, same placement, several rounds.

Both run a pipe ping-pong between two processes (or two threads with --threaded)
and report the mean time of one round trip (two context switches): perf as
"usecs/op", rtqual as summary.switch.round_trip_mean_ns. rtqual also timestamps
both ends of every switch and records two histogram samples per round trip; the
median ratio rtqual/perf shows what that instrumentation costs (near 1: nothing).
Run as root:

    .venv/bin/python benchmarks/switch_vs_perf_bench.py [--rounds 5] [--loops 100000] [--cpus 1]
                                                        [--policy other|fifo] [--priority 40] [--threaded]

Placement: perf is started under `taskset -c CPUS` (and `chrt -f PRIO` for fifo);
with one CPU both tools run both sides there. With two CPUs perf's sides float over
both while rtqual pins side A and side B: not the same placement (said in the output).
perf comes from Debian's linux-perf; when /usr/bin/perf is the wrapper that wants a
perf for the running kernel, the newest working /usr/bin/perf_* is used instead.
Exit 3 if no usable perf.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from rtqual.measure.run import native

EXIT_SKIP = 3


def _perf_works(path: str) -> bool:
    try:
        out = subprocess.run([path, "bench", "sched", "pipe", "-l", "10"], capture_output=True, text=True, timeout=30)
    except OSError:
        return False
    return out.returncode == 0 and "usecs/op" in out.stdout


def find_perf() -> str | None:
    """`perf` if it runs here, else the newest runnable versioned binary (/usr/bin/perf_6.1 ...)."""
    candidates = []
    if shutil.which("perf"):
        candidates.append(shutil.which("perf"))

    def version_key(p: str):
        return [int(x) for x in re.findall(r"\d+", os.path.basename(p))]

    candidates += sorted(glob.glob("/usr/bin/perf_*"), key=version_key, reverse=True)
    for c in candidates:
        if os.access(c, os.X_OK) and _perf_works(c):
            return c
    return None


def placement(a) -> list[str]:
    cmd = ["taskset", "-c", a.cpus]
    if a.policy == "fifo":
        cmd += ["chrt", "-f", str(a.priority)]
    return cmd


def perf_round(a, perf: str) -> float:
    """usecs per round trip from perf bench sched pipe."""
    cmd = placement(a) + [perf, "bench", "sched", "pipe", "-l", str(a.loops)] + (["-T"] if a.threaded else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    m = re.search(r"([0-9.]+)\s+usecs/op", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"perf bench failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-300:]}")
    return float(m.group(1))


def rtqual_round(a) -> tuple[float, dict]:
    """usecs per round trip from rtqual-probe switch, and the summary slots."""
    cmd = [
        str(native.probe_path()),
        "switch",
        "--ipc",
        "pipe",
        "--mode",
        "thread" if a.threaded else "process",
        "--cpus",
        a.cpus,
        "--policy",
        a.policy,
        "--priority",
        str(a.priority),
        "--loops",
        str(a.loops),
        "--warmup",
        "0",
        "--no-dma-latency",
        "--max-events",
        "0",
        "--progress-ms",
        "60000",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"rtqual-probe failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    summ = next(r for r in recs if r["type"] == "summary")
    return summ["switch"]["round_trip_mean_ns"] / 1000.0, summ


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--loops", type=int, default=100000, help="round trips per run")
    p.add_argument("--cpus", default="1", help="one CPU (both sides) or two (A,B)")
    p.add_argument("--policy", choices=["other", "fifo"], default="other")
    p.add_argument("--priority", type=int, default=40)
    p.add_argument("--threaded", action="store_true", help="threads instead of processes (perf -T)")
    a = p.parse_args()
    perf = find_perf()
    if perf is None:
        print(
            "perf not found or not runnable on this kernel: apt-get install linux-perf "
            "(Debian; or your distribution's perf package)",
            file=sys.stderr,
        )
        return EXIT_SKIP
    if os.geteuid() != 0:
        sys.exit("run as root (rtqual's probe needs mlockall, fifo needs SCHED_FIFO)")
    ncpus = len(a.cpus.replace("-", ",").split(","))
    print(
        f"# {a.rounds} rounds of {a.loops} round trips, pipe, {'threads' if a.threaded else 'processes'}, "
        f"CPUs {a.cpus}, {a.policy}{' ' + str(a.priority) if a.policy == 'fifo' else ''}, perf: {perf}"
    )
    if ncpus > 1:
        print("# note: perf's sides float over the CPUs, rtqual pins side A and side B")
    print(f"{'round':>5} {'tool':>7} {'us/round trip':>14}  one-way p50 per woken CPU (rtqual)")
    ratios = []
    for i in range(a.rounds):
        order = ["rtqual", "perf"] if i % 2 == 0 else ["perf", "rtqual"]
        res = {}
        for tool in order:
            if tool == "perf":
                res[tool] = perf_round(a, perf)
                print(f"{i:>5} {tool:>7} {res[tool]:>14.3f}")
            else:
                res[tool], summ = rtqual_round(a)
                p50 = ", ".join(f"cpu{c['cpu']} {c['p50_ns'] / 1000:.2f} us" for c in summ["cpus"])
                print(f"{i:>5} {tool:>7} {res[tool]:>14.3f}  {p50}")
        ratios.append(res["rtqual"] / res["perf"])
    print(
        f"\nmedian ratio rtqual/perf (us per round trip) over {a.rounds} rounds: {statistics.median(ratios):.3f}"
        f"   (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

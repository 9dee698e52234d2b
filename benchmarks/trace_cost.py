"""What --trace costs: the same timer run with and without --trace, alternately, side by side.

Per round and mode: mean, p99 and max latency (the case's statistics) and the CPU time of rtqual and its
probe (user + system, from the children's rusage: the kernel's text formatting of trace_pipe reads is in
the reader's system time). At the end the median ratios traced/untraced. Run as root, under the shared
lock when the numbers are reported:

    flock /work/latency.lock .venv/bin/python benchmarks/trace_cost.py --rounds 3 --duration 20s
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KEYS = ("mean_ns", "p99_ns", "max_ns")


def one_run(args: argparse.Namespace, traced: bool, out: Path) -> dict:
    """One `rtqual run timer` (with --trace or not): its statistics, CPU seconds, spikes and lost events."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = [sys.executable, "-m", "rtqual", "run", "timer", "--cpus", args.cpus, "--interval", args.interval]
    argv += ["--duration", args.duration, "--threshold", args.threshold, "-q", "-o", str(out)]
    p = subprocess.run(argv + ["--trace"] * traced, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 2):
        sys.exit(f"rtqual exited {p.returncode}: {p.stderr.strip()[-400:]}")
    r = json.loads(next(out.glob("cases/*/result.json")).read_text())
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    trace = r.get("trace") or {}
    return {
        **{k: r["stats"][k] for k in KEYS},
        "cpu_s": cpu_s,
        "spikes": len(r.get("spikes") or []),
        "lost": trace.get("lost_events", 0),
    }


def _row(name: str, s: dict) -> str:
    lat = " ".join(f"{k[:-3]} {s[k] / 1e3:8.1f}" for k in KEYS)
    return f"{name:10s} {lat} us  cpu {s['cpu_s']:6.2f} s  spikes {s['spikes']:4d}  lost events {s['lost']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--interval", default="1ms")
    ap.add_argument("--cpus", default="1", help="measured CPUs (the trace reader runs on the others)")
    ap.add_argument("--threshold", default="100us")
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {k: [] for k in (*KEYS, "cpu_s")}
    with tempfile.TemporaryDirectory(prefix="rtqual-trace-cost-") as tmp:
        for rnd in range(args.rounds):
            plain = one_run(args, False, Path(tmp) / f"plain-{rnd}")
            traced = one_run(args, True, Path(tmp) / f"traced-{rnd}")
            print(f"round {rnd}", flush=True)
            print("  " + _row("untraced", plain))
            print("  " + _row("--trace", traced), flush=True)
            for k in ratios:
                if plain[k]:
                    ratios[k].append(traced[k] / plain[k])
    print(f"median ratio --trace/untraced over {args.rounds} rounds:")
    for k, v in ratios.items():
        if v:
            each = ", ".join(f"{x:.3f}" for x in v)
            print(f"  {k.removesuffix('_ns'):5s} {statistics.median(v):.3f}   (rounds: {each})")


if __name__ == "__main__":
    main()

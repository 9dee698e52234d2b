"""What --capture costs the monitor: `rtqual monitor` at 1 kHz on one CPU with and without `--capture OVER`,
alternately, side by side (goal: capture on within 1.2x the CPU time of capture off).

Per round and mode: the CPU time of the monitor and its probe (user + system, from the children's rusage; the
kernel's writing of trace events is charged to whatever task runs when the event fires, mostly the probe), the
busy time of the monitored CPU from /proc/stat (every task's, the idle task's event writing included: noisier, as
other work lands there too), and the spikes captured. At the end the median ratios on/off with their range. Run as
root, under the shared lock:

    flock /work/wt/measure.lock /work/main/.venv/bin/python benchmarks/capture_cost.py --rounds 4 --duration 20s
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

USER_HZ = os.sysconf("SC_CLK_TCK")


def cpu_busy_s(cpu: int) -> float:
    """Seconds the CPU was not idle (user, nice, system, irq, softirq, steal) since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            name, *ticks = line.split()
            if name == f"cpu{cpu}":
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, ticks[:8])
                return (user + nice + system + irq + softirq + steal) / USER_HZ
    raise SystemExit(f"no cpu{cpu} in /proc/stat")


def one_run(args: argparse.Namespace, capture: bool) -> dict:
    """One `rtqual monitor` of --duration (with --capture or not): CPU seconds, the CPU's busy seconds, captures."""
    argv = [sys.executable, "-m", "rtqual", "monitor", "--cpus", str(args.cpu), "--interval", "1ms"]
    argv += ["--duration", args.duration, "--window", "5s", "--listen", "off", "--store", "off", "--json"]
    argv += ["--capture", args.over] if capture else []
    before, busy = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_busy_s(args.cpu)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    after, busy = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_busy_s(args.cpu) - busy
    if p.returncode != 0:
        sys.exit(f"rtqual monitor exited {p.returncode}: {p.stderr.strip()[-400:]}")
    if capture and "without capture" in p.stderr:
        sys.exit(f"capture did not run: {p.stderr.strip()[-400:]}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu_s, "busy_s": busy, "captures": p.stdout.count('"type": "capture"')}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="the monitored CPU")
    ap.add_argument("--over", default="5ms", help="--capture OVER")
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {"cpu_s": [], "busy_s": []}
    for rnd in range(args.rounds):
        order = (False, True) if rnd % 2 == 0 else (True, False)  # alternate which goes first
        got = {mode: one_run(args, mode) for mode in order}
        off, on = got[False], got[True]
        print(
            f"round {rnd}: off cpu {off['cpu_s']:.3f} s busy {off['busy_s']:.2f} s | on cpu {on['cpu_s']:.3f} s "
            f"busy {on['busy_s']:.2f} s, {on['captures']} captures | ratio cpu {on['cpu_s'] / off['cpu_s']:.3f} "
            f"busy {on['busy_s'] / max(off['busy_s'], 1e-9):.3f}",
            flush=True,
        )
        ratios["cpu_s"].append(on["cpu_s"] / off["cpu_s"])
        ratios["busy_s"].append(on["busy_s"] / max(off["busy_s"], 1e-9))
    print(
        "median ratio capture on/off: "
        + ", ".join(f"{k} {statistics.median(v):.3f} ({min(v):.3f}..{max(v):.3f})" for k, v in ratios.items())
        + f" over {args.rounds} rounds of {args.duration} (goal cpu_s <= 1.2)"
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Does publishing the operator statistics change the IOC's measured latency?

Runs rtqual's IOC (aps preset) alternately without the statistics records, with them, and with
them plus a pyepics client monitoring every OPERATOR_PVS; prints median / p99 / max of
t_out - t_stim (from Ioc.responses) per configuration and round. docs/epics.md has results.

    python benchmarks/ioc_operator_cost.py --rounds 2 -n 2000 --rate 100
"""

import argparse
import statistics
import subprocess
import sys
import time

from rtqual.measure.epics.ioc import OPERATOR_PVS, Ioc

MONITOR = """
import sys, time, epicscorelibs.path.pyepics, epics
pvs = [epics.PV(p, callback=lambda **kw: None, auto_monitor=True) for p in sys.argv[1:]]
time.sleep(1e6)
"""


def run(operator: bool, monitor: bool, n: int, rate: float) -> list[float]:
    """n paced stimuli, one in flight; their totals in us, sorted."""
    with Ioc(preset="aps", operator=operator) as ioc:
        mon = None
        if monitor:
            mon = subprocess.Popen(
                [sys.executable, "-c", MONITOR, *map(ioc.pv, OPERATOR_PVS)], env=ioc.env, stderr=subprocess.DEVNULL
            )
            time.sleep(2)  # connected
        try:
            for _ in range(100):  # warm-up
                ioc.trigger()
                ioc.responses(1)
            out = []
            t0 = time.monotonic()
            for i in range(n):
                time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
                ioc.trigger()
                (r,) = ioc.responses(1)
                out.append((r[3] - r[0]) / 1e3)
        finally:
            if mon:
                mon.kill()
                mon.wait()
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-n", type=int, default=2000, help="stimuli per configuration and round")
    ap.add_argument("--rate", type=float, default=100.0, help="stimuli per second")
    a = ap.parse_args()
    configs = ((False, False), (True, False), (True, True))
    medians: dict[tuple[bool, bool], list[float]] = {c: [] for c in configs}
    for rnd in range(a.rounds):
        for operator, monitor in configs:
            t = run(operator, monitor, a.n, a.rate)
            medians[(operator, monitor)].append(t[len(t) // 2])
            print(
                f"round {rnd} operator={operator!s:5} monitor={monitor!s:5}: median {t[len(t) // 2]:.1f} "
                f"p99 {t[int(0.99 * len(t))]:.1f} max {t[-1]:.1f} us",
                flush=True,
            )
    print(f"median ratio of medians to the IOC without the statistics over {a.rounds} rounds:")
    for c, name in zip(configs[1:], ("operator", "operator+monitor")):
        r = [x / y for x, y in zip(medians[c], medians[configs[0]])]
        print(f"  {name:16s} {statistics.median(r):.3f}   (rounds: {', '.join(f'{x:.3f}' for x in r)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Does publishing the operator statistics change the IOC's measured latency?

Compares two IOC databases in paired rounds (sidebyside.compare: both once per round, back to back,
the order alternating; the median of the round ratios with a bootstrap 95 % interval). Each side of a
round starts its own IOC (preset --preset, callback mode, threads on --ioc-cpus) and measures it with
rtqual's harness (`rtqual-probe iocresp`, -n stimuli at --rate on --cpu), as ioc_vs_bare_fifo.py does.
--compare chooses the pair (A/B):

- operator: the IOC with the latency statistics (and HEARTBEAT/UPTIME) / without any of them;
- clock:    the statistics with HEARTBEAT and UPTIME (the 1 Hz records) / the statistics without them;
- monitor:  the statistics and a pyepics client monitoring every OPERATOR_PVS / the statistics alone.

Run as root (docs/epics.md "Cost of the operator view" has results):

    flock /work/wt/measure.lock .venv/bin/python benchmarks/ioc_operator_cost.py --compare clock
"""

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ioc_vs_bare_fifo import rtqual_round
from sidebyside import compare, options, steady

from rtqual.measure.epics.ioc import OPERATOR_PVS, Ioc, operator_db

MONITOR = """
import sys, time, epicscorelibs.path.pyepics, epics
pvs = [epics.PV(p, callback=lambda **kw: None, auto_monitor=True) for p in sys.argv[1:]]
time.sleep(1e6)
"""
CONNECT_S = 2.0  # for the monitoring client to connect before the round
ROUNDS = 40  # each side starts its IOC (about 1 s): 40 pairs of 100 stimuli take about 3 minutes
# --compare: (name of A, A's configuration, name of B, B's); a configuration is (statistics, clock, monitor)
PAIRS = {
    "operator": ("statistics", (True, True, False), "no statistics", (False, False, False)),
    "clock": ("HEARTBEAT+UPTIME", (True, True, False), "without them", (True, False, False)),
    "monitor": ("CA monitor", (True, True, True), "no client", (True, True, False)),
}


@contextmanager
def ioc_with(a, stats: bool, clock: bool, monitor: bool) -> Iterator[Ioc]:
    """An IOC of that configuration, started (and a monitoring client) for one side of a round."""
    extra = operator_db(clock=clock) if stats else ""
    with Ioc(preset=a.preset, operator=False, extra_db=extra, cpus=a.ioc_cpus) as ioc:
        mon = None
        if monitor:
            pvs = [ioc.pv(p) for p in OPERATOR_PVS]
            mon = subprocess.Popen([sys.executable, "-c", MONITOR, *pvs], env=ioc.env, stderr=subprocess.DEVNULL)
            time.sleep(CONNECT_S)
        try:
            yield ioc
        finally:
            if mon:
                mon.kill()
                mon.wait()


def side(a, config: tuple[bool, bool, bool]) -> dict:
    with ioc_with(a, *config) as ioc:
        return rtqual_round(ioc, a)


def main() -> int:
    a = options(
        __doc__,
        "stimuli",
        {
            "--compare": {"choices": sorted(PAIRS), "default": "operator", "help": "which two IOCs (default operator)"},
            "--preset": {"choices": ("kek", "aps"), "default": "aps", "help": "the IOC's records (default aps)"},
        },
        rounds=ROUNDS,
    )
    name_a, conf_a, name_b, conf_b = PAIRS[a.compare]
    with steady(a):
        print(f"# {a.preset} IOC, {name_a} {conf_a} / {name_b} {conf_b} as (statistics, clock, monitor)", flush=True)
        compare(a.rounds, lambda: side(a, conf_a), lambda: side(a, conf_b), name_b, name=name_a)
    return 0


if __name__ == "__main__":
    sys.exit(main())

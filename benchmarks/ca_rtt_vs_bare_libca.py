#!/usr/bin/env python3
"""rtqual-ca ca-rtt side by side with a bare libca loop (ca_rtt_ref.c), against one IOC.

Starts rtqual's IOC with the ca-rtt records ($(P)rtt:put -> $(P)rtt:echo), builds
benchmarks/ca_rtt_ref.c with cc against the epicscorelibs wheel, then per round runs
`rtqual-ca ca-rtt` and the reference back to back (the order alternating) with the same PVs, CPU,
SCHED_FIFO priority, period and count, and prints median / p99 / max of both, each round's ratios and
the median of the round ratios rtqual/reference with its bootstrap 95 % interval (1.0: rtqual's harness
measures what a bare loop measures; sidebyside.py says why many short paired rounds). Run as root:

    flock /work/wt/measure.lock .venv/bin/python benchmarks/ca_rtt_vs_bare_libca.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import epicscorelibs.path
from sidebyside import compare, options, probe_stats, steady

from rtqual.measure.epics.ca import RTT_ECHO, RTT_PUT, ca_db
from rtqual.measure.epics.ioc import Ioc
from rtqual.measure.run import native

HERE = Path(__file__).resolve().parent


def build_reference(tmp: Path) -> Path:
    exe = tmp / "ca_rtt_ref"
    cc = subprocess.run(
        [
            "cc",
            "-O2",
            str(HERE / "ca_rtt_ref.c"),
            "-o",
            str(exe),
            f"-I{epicscorelibs.path.include_path}",
            f"-L{epicscorelibs.path.lib_path}",
            f"-Wl,-rpath,{epicscorelibs.path.lib_path}",
            "-lca",
            "-lCom",
            "-lpthread",
        ],
        capture_output=True,
        text=True,
    )
    if cc.returncode != 0:
        sys.exit(f"building ca_rtt_ref failed: {cc.stderr.strip()[-300:]}")
    return exe


def rtqual_round(ioc: Ioc, a) -> dict:
    p = subprocess.run(
        [
            str(native.ca_path()),
            "ca-rtt",
            "--put",
            ioc.pv(RTT_PUT),
            "--monitor",
            ioc.pv(RTT_ECHO),
            "--loops",
            str(a.n),
            "--rate",
            str(a.rate),
            "--cpu",
            str(a.cpu),
            "--priority",
            str(a.priority),
        ],
        env=ioc.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return probe_stats(p, "rtqual-ca ca-rtt")


def reference_round(exe: Path, ioc: Ioc, a) -> dict:
    p = subprocess.run(
        [str(exe), ioc.pv(RTT_PUT), ioc.pv(RTT_ECHO), str(a.n), str(round(1e6 / a.rate)), str(a.cpu), str(a.priority)],
        env=ioc.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if p.returncode != 0:
        sys.exit(f"ca_rtt_ref failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def main() -> int:
    a = options(__doc__, "round trips")
    with steady(a), tempfile.TemporaryDirectory() as tmp, Ioc(preset="kek", extra_db=ca_db(0), cpus=a.ioc_cpus) as ioc:
        exe = build_reference(Path(tmp))
        compare(a.rounds, lambda: rtqual_round(ioc, a), lambda: reference_round(exe, ioc, a), "bare libca")
    return 0


if __name__ == "__main__":
    sys.exit(main())

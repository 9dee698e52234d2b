#!/usr/bin/env python3
"""rtqual's IOC harness (iocresp, `rtqual run ioc`) side by side with a bare C loop (ioc_fifo_ref.c)
on the same IOC FIFOs.

Starts rtqual's IOC (preset kek, callback), builds benchmarks/ioc_fifo_ref.c with cc, then per round
runs `rtqual-probe iocresp` and the reference back to back (the order alternating) with the same FIFOs,
CPU, SCHED_FIFO priority, rate and count, and prints median / p99 / max of both, each round's ratios
and the median of the round ratios rtqual/reference with its bootstrap 95 % interval (1.0: the harness
measures what a bare loop measures; sidebyside.py says why many short paired rounds). Run as root:

    flock /work/wt/measure.lock .venv/bin/python benchmarks/ioc_vs_bare_fifo.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from sidebyside import compare, options, probe_stats, steady

from rtqual.measure.epics.ioc import Ioc
from rtqual.measure.run import native

HERE = Path(__file__).resolve().parent


def build_reference(tmp: Path) -> Path:
    exe = tmp / "ioc_fifo_ref"
    cc = subprocess.run(["cc", "-O2", str(HERE / "ioc_fifo_ref.c"), "-o", str(exe)], capture_output=True, text=True)
    if cc.returncode != 0:
        sys.exit(f"building ioc_fifo_ref failed: {cc.stderr.strip()[-300:]}")
    return exe


def rtqual_round(ioc: Ioc, a) -> dict:
    p = subprocess.run(
        [
            str(native.probe_path()),
            "iocresp",
            "--in",
            str(ioc.fifo_in),
            "--out",
            str(ioc.fifo_out),
            "--loops",
            str(a.n),
            "--rate",
            str(a.rate),
            "--cpu",
            str(a.cpu),
            "--priority",
            str(a.priority),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return probe_stats(p, "rtqual-probe iocresp")


def reference_round(exe: Path, ioc: Ioc, a) -> dict:
    p = subprocess.run(
        [
            str(exe),
            str(ioc.fifo_in),
            str(ioc.fifo_out),
            str(a.n),
            str(round(1e6 / a.rate)),
            str(a.cpu),
            str(a.priority),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if p.returncode != 0:
        sys.exit(f"ioc_fifo_ref failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def main() -> int:
    a = options(__doc__, "stimuli")
    with steady(a), tempfile.TemporaryDirectory() as tmp, Ioc(preset="kek", cpus=a.ioc_cpus) as ioc:
        exe = build_reference(Path(tmp))
        compare(a.rounds, lambda: rtqual_round(ioc, a), lambda: reference_round(exe, ioc, a), "bare FIFO loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())

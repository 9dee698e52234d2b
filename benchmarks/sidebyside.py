"""What the stimulus -> response benchmarks share (ca_rtt_vs_bare_libca.py, ioc_vs_bare_fifo.py):
their options, the conditions both sides see (steady), the statistics out of a probe's summary, and
the rounds run alternately with the median ratios rtqual/reference printed at the end, with each
round's ratio.

What both sides share is pinned for the whole benchmark, not per tool: /dev/cpu_dma_latency is held
at 0 (each tool also holds it while it runs; between them nobody did), and the IOC's threads run on
--ioc-cpus (default: the client's CPU, so that a response never waits for another vCPU to be woken:
on a VM a halted vCPU's wake-up is an IPI through the hypervisor, tens of µs that depend on what the
host runs). What other guests and jobs on the host do is not pinned: compare quiet runs."""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

KEYS = ("median_ns", "p99_ns", "max_ns")


def options(doc: str, what: str, extra: dict[str, dict] | None = None) -> argparse.Namespace:
    """The shared options, and a benchmark's own (extra: {option: add_argument keywords})."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=2000, help=f"{what} per tool and round")
    ap.add_argument("--rate", type=int, default=100, help=f"{what} per second")
    ap.add_argument("--cpu", type=int, default=0, help="CPU of the measuring thread (both tools)")
    ap.add_argument("--priority", type=int, default=80, help="SCHED_FIFO priority of the measuring thread")
    ap.add_argument("--ioc-cpus", default=None, help="CPU list of the IOC's threads (default: --cpu)")
    a = ap.parse_args()
    a.ioc_cpus = a.ioc_cpus or str(a.cpu)
    return a


def idle_driver() -> str:
    """The cpuidle driver ("none": the idle loop halts the CPU, on a VM the vCPU)."""
    try:
        return Path("/sys/devices/system/cpu/cpuidle/current_driver").read_text().strip()
    except OSError:
        return "unknown"


@contextmanager
def steady(a: argparse.Namespace) -> Iterator[None]:
    """/dev/cpu_dma_latency held at 0 for the whole benchmark; the conditions printed first."""
    try:
        dma = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(dma, struct.pack("i", 0))
    except OSError as e:
        sys.exit(f"/dev/cpu_dma_latency: {e.strerror} (run as root)")
    print(
        f"# client CPU {a.cpu} (SCHED_FIFO {a.priority}), IOC CPUs {a.ioc_cpus}, /dev/cpu_dma_latency 0 held, "
        f"cpuidle driver {idle_driver()}, {a.rounds} rounds of {a.n} at {a.rate}/s",
        flush=True,
    )
    try:
        yield
    finally:
        os.close(dma)


def probe_stats(p: subprocess.CompletedProcess, name: str) -> dict:
    """median / p99 / max of a native probe's summary record (its one slot)."""
    for line in p.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("type") == "summary":
            s = msg["cpus"][0]
            return {"median_ns": s["p50_ns"], "p99_ns": s["p99_ns"], "max_ns": s["max_ns"]}
    sys.exit(f"{name} gave no summary (exit {p.returncode}): {p.stderr.strip()[-300:]}")


def _us(r: dict) -> str:
    return " ".join(f"{k[:-3]} {r[k] / 1e3:7.1f}" for k in KEYS) + " us"


def compare(rounds: int, ours: Callable[[], dict], reference: Callable[[], dict], ref_name: str) -> None:
    """Run both alternately (rtqual first in even rounds, the reference first in odd ones: a drift of the
    host within a round favours neither), print each round and the median ratios rtqual/reference."""
    ratios = {k: [] for k in KEYS}
    for rnd in range(rounds):
        if rnd % 2 == 0:
            a, b = ours(), reference()
        else:
            b, a = reference(), ours()
        print(f"round {rnd}: rtqual {_us(a)} | {ref_name} {_us(b)}", flush=True)
        for k in KEYS:
            ratios[k].append(a[k] / b[k])
    print(f"median ratio rtqual/{ref_name} over {rounds} rounds:")
    for k, v in ratios.items():
        print(f"  {k[:-3]:6s} {statistics.median(v):.3f}   (rounds: {', '.join(f'{x:.3f}' for x in v)})")

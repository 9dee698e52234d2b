"""What the stimulus -> response benchmarks share (ca_rtt_vs_bare_libca.py, ioc_vs_bare_fifo.py):
their options, the statistics out of a probe's summary, and the rounds run alternately with the
median ratios rtqual/reference printed at the end."""

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable

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
    return ap.parse_args()


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
    """Run both alternately, print each round and the median ratios rtqual/reference."""
    ratios = {k: [] for k in KEYS}
    for rnd in range(rounds):
        a, b = ours(), reference()
        print(f"round {rnd}: rtqual {_us(a)} | {ref_name} {_us(b)}", flush=True)
        for k in KEYS:
            ratios[k].append(a[k] / b[k])
    print(
        f"median ratio rtqual/{ref_name}: "
        + ", ".join(
            f"{k[:-3]} {statistics.median(v):.3f} (rounds {min(v):.2f}..{max(v):.2f})" for k, v in ratios.items()
        )
    )

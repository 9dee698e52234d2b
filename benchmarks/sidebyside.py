"""What the side-by-side benchmarks share (ca_rtt_vs_bare_libca.py, ioc_vs_bare_fifo.py, trace_cost.py,
ioc_operator_cost.py): the stimulus -> response benchmarks' options, the conditions both sides see (steady),
the statistics out of a probe's summary, and the paired rounds (compare): many short rounds, each a pair (both
sides once, back to back, the order alternating), the ratio of each pair, and as the result the median of
the pair ratios with a bootstrap 95 % interval, printed beside every round's ratio.

Why pairs: on this VM both sides' medians move together by up to 3x from one stretch of seconds to the next
(the hypervisor: where the vCPU runs, whether the host wakes it fast), far more than the few per cent a
benchmark must tell. Within a pair both sides see nearly the same host, so their ratio keeps the difference
and drops the slow part of that common-mode swing; the median of many pair ratios drops the pairs a swing
cut in two. What pairing cannot cancel: a swing faster than a pair (it lands on one side only, and widens
the interval; under load most of the spread left is that), and anything that depends on the order within a
pair (alternating spreads it over both sides, not away). benchmarks/README.md "Paired rounds" has numbers.

What both stimulus -> response sides share is pinned for the whole benchmark, not per tool:
/dev/cpu_dma_latency is held at 0 (each tool also holds it while it runs; between them nobody did), and the
IOC's threads run on --ioc-cpus (default: the client's CPU, so that a response never waits for another vCPU to
be woken: on a VM a halted vCPU's wake-up is an IPI through the hypervisor, tens of µs that depend on what the
host runs). What other guests and jobs on the host do is not pinned: compare quiet runs."""

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

KEYS = ("median_ns", "p99_ns", "max_ns")
# Default rounds (pairs) and samples per tool and round of the stimulus -> response benchmarks: at 100/s,
# 1 s per side, 60 pairs in about 2.5 minutes. On the development VM under load the pair ratios spread as
# much with 250 samples a side as with 100 (the swing within a pair, not the sampling, sets the spread), so
# more, shorter pairs narrow the interval (30 x 250: +-3 %, 60 x 100: +-2 %); with fewer than 100 a round's
# p99 is its maximum.
PAIRS, PAIR_N = 60, 100
LEVEL = 0.95  # of the bootstrap interval
RESAMPLES = 2000  # bootstrap resamples: the interval's ends move by < 0.1 % between seeds at 30 pairs
SEED = 40  # the bootstrap's: the same rounds print the same interval


def options(doc: str, what: str, extra: dict[str, dict] | None = None, rounds: int = PAIRS) -> argparse.Namespace:
    """The shared options, and a benchmark's own (extra: {option: add_argument keywords}); rounds: the default."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, kw in (extra or {}).items():
        ap.add_argument(name, **kw)
    ap.add_argument("--rounds", type=int, default=rounds, help="rounds, each a pair: both tools once, back to back")
    ap.add_argument("-n", type=int, default=PAIR_N, help=f"{what} per tool and round")
    ap.add_argument("--rate", type=int, default=100, help=f"{what} per second")
    ap.add_argument("--cpu", type=int, default=0, help="CPU of the measuring thread (both tools)")
    ap.add_argument("--priority", type=int, default=80, help="SCHED_FIFO priority of the measuring thread")
    ap.add_argument("--ioc-cpus", default=None, help="CPU list of the IOC's threads (default: --cpu)")
    a = ap.parse_args()
    if a.rounds < 1 or a.n < 1 or a.rate < 1:
        ap.error("--rounds, -n and --rate must be >= 1")
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
        f"cpuidle driver {idle_driver()}, {a.rounds} rounds (pairs, order alternating) of {a.n} at {a.rate}/s",
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


def pair_ratios(pairs: list[tuple[float, float]]) -> list[float]:
    """a / b of each (a, b) pair; no pairs, or a side that is not > 0, is an error (ValueError)."""
    if not pairs:
        raise ValueError("no rounds to compare")
    for i, (a, b) in enumerate(pairs):
        if not (a > 0 and b > 0):
            raise ValueError(f"round {i}: {a} vs {b}, a ratio needs two values > 0")
    return [a / b for a, b in pairs]


def bootstrap_interval(
    ratios: list[float], level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The percentile bootstrap interval of the median of ratios: the median of `resamples` resamples drawn
    with replacement, cut at (1 - level) / 2 on each side. Reproducible (seeded)."""
    if not ratios:
        raise ValueError("no rounds to compare")
    if not 0 < level < 1:
        raise ValueError(f"interval level {level} is not in (0, 1)")
    rng = random.Random(seed)
    n = len(ratios)
    meds = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(resamples))
    cut = round(resamples * (1 - level) / 2)
    return meds[cut], meds[resamples - 1 - cut]


def ratio_line(name: str, ratios: list[float]) -> str:
    """One key's result: the median pair ratio, its bootstrap interval and every round's ratio."""
    lo, hi = bootstrap_interval(ratios)
    each = ", ".join(f"{x:.3f}" for x in ratios)
    return f"  {name:6s} {statistics.median(ratios):.3f}  [{lo:.3f}, {hi:.3f}]   (rounds: {each})"


def compare(
    rounds: int,
    ours: Callable[[], dict],
    reference: Callable[[], dict],
    ref_name: str,
    keys: tuple[str, ...] = KEYS,
    row: Callable[[dict], str] = _us,
    name: str = "rtqual",
) -> dict[str, list[float]]:
    """Paired rounds: both sides once per round, back to back, ours first in even rounds and the reference first
    in odd ones (a drift of the host within a pair favours neither); each round printed with its ratios, then per
    key the median of the round ratios ours/reference, its bootstrap 95 % interval, and every round's ratio.
    Returns the round ratios per key."""
    pairs: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    for rnd in range(rounds):
        if rnd % 2 == 0:
            a, b = ours(), reference()
        else:
            b, a = reference(), ours()
        for k in keys:
            pairs[k].append((a[k], b[k]))
        ratio = " ".join(f"{k.removesuffix('_ns')} " + (f"{a[k] / b[k]:.3f}" if b[k] else "-") for k in keys)
        first = name if rnd % 2 == 0 else ref_name
        print(f"round {rnd} ({first} first): {name} {row(a)} | {ref_name} {row(b)} | ratio {ratio}", flush=True)
    try:
        ratios = {k: pair_ratios(v) for k, v in pairs.items()}
    except ValueError as e:
        sys.exit(f"{name}/{ref_name}: {e}")
    print(
        f"median ratio {name}/{ref_name} over {rounds} rounds (pairs), [bootstrap {LEVEL:.0%} interval of the median]:"
    )
    for k, v in ratios.items():
        print(ratio_line(k.removesuffix("_ns"), v))
    return ratios

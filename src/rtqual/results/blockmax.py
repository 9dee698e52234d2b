"""Time-ordered per-CPU block maxima: the data extreme-value analysis needs (rtqual tail, docs/tail.md).

Every latency probe's `progress` record (docs/protocol.md, every --progress-ms, 1 s by default) carries per CPU
`window_max_ns`: the exact largest sample since the previous record, whatever the threshold-event rate limit
dropped. So the stream already holds each CPU's per-second maxima: this module keeps them in order, in bounded
memory (8 bytes per CPU and block; beyond MAX_BLOCKS blocks per CPU, neighbours are merged and the block
doubles, so a year-long stream stays within the cap). Samples with timestamps (rtqual's raw.bin, jitterdebugger's
samples.raw) give the same blocks through from_samples. Per-minute maxima are `coarsen(60 s)`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_BLOCKS = 1 << 22  # per CPU: 48 days of 1 s blocks (32 MiB per CPU) before blocks double
MAX_NS = 2**63 - 1  # a block maximum, a count: what the probes' signed 64-bit counters hold


class Damaged(ValueError):
    """A progress record whose per-CPU maximum or count is not a whole number the probes could have written."""


def _whole(rec_cpu: object, key: str, value: object) -> int:
    """A progress row's value as a count (missing: 0); NaN, Infinity, text, negatives: one line of damage."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NS:
        shown = repr(value)[:40]
        raise Damaged(f"progress record of cpu {rec_cpu}: {key} {shown} is not a whole number from 0 to 2^63-1")
    return value


@dataclass
class BlockMaxima:
    """Per-CPU maxima of consecutive blocks of `block_ns` (0: a block without samples), in time order, and
    the samples counted per CPU (from the progress records' cumulative counts)."""

    block_ns: int = 1_000_000_000
    per_cpu: dict[int, array] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)

    def add(self, cpu: int, max_ns: int) -> None:
        """Append one block's maximum of `cpu`; merges neighbours when the CPU holds MAX_BLOCKS."""
        a = self.per_cpu.setdefault(cpu, array("q"))
        a.append(max(0, int(max_ns)))
        if len(a) >= MAX_BLOCKS:
            self._halve()

    def _halve(self) -> None:
        """Double the block length: each pair of blocks becomes one holding the larger maximum."""
        for cpu, a in self.per_cpu.items():
            self.per_cpu[cpu] = array("q", (max(a[i : i + 2]) for i in range(0, len(a), 2)))
        self.block_ns *= 2

    def feed(self, rec: dict) -> None:
        """Take a stream record: a progress record adds one block per CPU (others are ignored); Damaged (and
        nothing added) when one of its rows is not whole numbers."""
        if rec.get("type") != "progress":
            return
        rows = [
            (
                row["cpu"],
                _whole(row["cpu"], "window_max_ns", row.get("window_max_ns")),
                _whole(row["cpu"], "count", row.get("count")),
            )
            for row in rec.get("cpus") or []
            if isinstance(row, dict) and isinstance(row.get("cpu"), int)
        ]
        for cpu, top, count in rows:
            self.add(cpu, top)
            self.counts[cpu] = count

    @property
    def cpus(self) -> list[int]:
        return sorted(self.per_cpu)

    def series(self, cpu: int | None = None) -> list[int]:
        """One CPU's block maxima, or (cpu None) the maximum over the CPUs of each block ("all")."""
        if cpu is not None:
            return list(self.per_cpu.get(cpu, ()))
        columns = list(self.per_cpu.values())
        n = max((len(a) for a in columns), default=0)
        return [max((a[i] for a in columns if i < len(a)), default=0) for i in range(n)]

    def samples(self, cpu: int | None = None) -> int:
        """Samples measured on one CPU (or all), as the last progress record counted them."""
        return self.counts.get(cpu, 0) if cpu is not None else sum(self.counts.values())

    def coarsen(self, block_ns: int) -> BlockMaxima:
        """The same maxima in blocks of `block_ns` (a whole multiple of this block, e.g. 60 s: per minute)."""
        k = max(1, block_ns // self.block_ns)
        out = BlockMaxima(self.block_ns * k, counts=dict(self.counts))
        for cpu, a in self.per_cpu.items():
            out.per_cpu[cpu] = array("q", (max(a[i : i + k]) for i in range(0, len(a), k)))
        return out


def from_records(records: Iterable[dict], progress_ms: int = 1000) -> BlockMaxima:
    """Block maxima from a probe's stream records (blocks of its --progress-ms, the header's params)."""
    bm = BlockMaxima(progress_ms * 1_000_000)
    for rec in records:
        if rec.get("type") == "header":
            ms = (rec.get("params") or {}).get("progress_ms")
            if isinstance(ms, int) and ms > 0 and not bm.per_cpu:
                bm.block_ns = ms * 1_000_000
        bm.feed(rec)
    return bm


def from_samples(samples: Iterable[tuple[int, int, int]], block_ns: int = 1_000_000_000) -> BlockMaxima:
    """Block maxima from (cpu, time_ns, latency_ns) samples (raw files; any order within a block): block i of
    every CPU starts at the earliest time + i * block_ns. Holds one block per CPU-block that has samples, never
    the samples; a span longer than MAX_BLOCKS / 2 blocks doubles the block (as add() does) until it fits, so the
    blocks between samples are made at once, never walked one by one."""
    per: dict[int, dict[int, int]] = {}
    counts: dict[int, int] = {}
    start: int | None = None
    for cpu, time_ns, latency_ns in samples:
        start = time_ns if start is None else min(start, time_ns)
        block = time_ns // block_ns
        d = per.setdefault(cpu, {})
        d[block] = max(d.get(block, 0), latency_ns)
        counts[cpu] = counts.get(cpu, 0) + 1
    if start is None:
        return BlockMaxima(block_ns, counts=counts)
    first = start // block_ns
    span = max(max(d) for d in per.values()) - first + 1
    k = 1
    while -(-span // k) > MAX_BLOCKS // 2:
        k *= 2
    bm = BlockMaxima(block_ns * k, counts=counts)
    n = -(-span // k)
    for cpu, d in sorted(per.items()):
        a = array("q", bytes(8 * n))  # every block empty (0), then the ones with samples
        for b, top in d.items():
            i = (b - first) // k
            a[i] = max(a[i], min(max(0, top), MAX_NS))
        bm.per_cpu[cpu] = a
    return bm

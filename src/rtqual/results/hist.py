"""HDR-layout latency histogram: the same buckets and percentile definition as native/lib/hist.c.

Layout (docs/protocol.md): lowest 1 ns, highest 60 s, 3 significant digits,
2048 sub-buckets (half 1024). Counts are kept sparse ({index: count}) beside the
exact count/min/max/sum/sum of squares. Interchange: HdrHistogram V2 compressed,
base64 ("HISTFAAA..."), readable by HdrHistogram_py and the Java/C libraries.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter

LOWEST_NS = 1
HIGHEST_NS = 60_000_000_000
SIG_DIGITS = 3
SUB_BUCKET_HALF_MAGNITUDE = 10
SUB_BUCKET_HALF = 1 << SUB_BUCKET_HALF_MAGNITUDE
SUB_BUCKET_MASK = 2 * SUB_BUCKET_HALF - 1
BUCKET_COUNT = 26
COUNTS_LEN = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF

# Percentiles reported everywhere, in parts per million, with their key names.
PERCENTILES_PPM = {"p50_ns": 500_000, "p99_ns": 990_000, "p999_ns": 999_000, "p9999_ns": 999_900}


def needed_samples(ppm: int) -> int:
    """Samples a percentile needs before it means something: about 10 / (1 - p) (p99: 1,000; p99.99: 100,000)."""
    return -(-10 * 1_000_000 // (1_000_000 - ppm))


_V2_PAYLOAD_COOKIE = 0x1C849303 | 0x10
_V2_COMPRESSED_COOKIE = 0x1C849304 | 0x10


def index_of(value_ns: int) -> int:
    """Bucket index of a value in [0, HIGHEST_NS]."""
    bucket = 53 - (64 - (value_ns | SUB_BUCKET_MASK).bit_length())
    sub = value_ns >> bucket
    return ((bucket + 1) << SUB_BUCKET_HALF_MAGNITUDE) + (sub - SUB_BUCKET_HALF)


def _bucket_sub(index: int) -> tuple[int, int]:
    bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) - 1
    sub = (index & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF
    if bucket < 0:  # the lower half of bucket 0
        bucket, sub = 0, sub - SUB_BUCKET_HALF
    return bucket, sub


def lowest_equivalent(index: int) -> int:
    bucket, sub = _bucket_sub(index)
    return sub << bucket


def highest_equivalent(index: int) -> int:
    bucket, sub = _bucket_sub(index)
    return (sub << bucket) + (1 << bucket) - 1


def rank_of(ppm: int, count: int) -> int:
    """Nearest rank, exact integers: max(1, ceil(ppm * count / 1e6))."""
    return max(1, -(-ppm * count // 1_000_000))


@dataclass
class Histogram:
    counts: dict[int, int] = field(default_factory=dict)
    count: int = 0
    min_ns: int = 0
    max_ns: int = 0
    sum_ns: int = 0
    sumsq_ns2: int = 0
    out_of_range: int = 0

    def record(self, value_ns: int, n: int = 1) -> None:
        """Add n samples of one value; out-of-range values are counted, never bucketed."""
        if value_ns < 0 or value_ns > HIGHEST_NS:
            self.out_of_range += n
            return
        i = index_of(value_ns)
        self.counts[i] = self.counts.get(i, 0) + n
        self.min_ns = value_ns if self.count == 0 else min(self.min_ns, value_ns)
        self.max_ns = max(self.max_ns, value_ns)
        self.count += n
        self.sum_ns += value_ns * n
        self.sumsq_ns2 += value_ns * value_ns * n

    def merge(self, other: Histogram) -> Histogram:
        """A new histogram holding both (across CPUs or runs)."""
        out = Histogram(
            dict(self.counts),
            self.count,
            self.min_ns,
            self.max_ns,
            self.sum_ns,
            self.sumsq_ns2,
            self.out_of_range + other.out_of_range,
        )
        for i, c in other.counts.items():
            out.counts[i] = out.counts.get(i, 0) + c
        if other.count:
            out.min_ns = other.min_ns if not self.count else min(self.min_ns, other.min_ns)
            out.max_ns = max(self.max_ns, other.max_ns)
        out.count += other.count
        out.sum_ns += other.sum_ns
        out.sumsq_ns2 += other.sumsq_ns2
        return out

    @classmethod
    def merged(cls, hists: Iterable[Histogram]) -> Histogram:
        """One histogram holding all of them (a case's CPUs): empty when there are none."""
        total = cls()
        for h in hists:
            total = total.merge(h)
        return total

    def percentile_ns(self, ppm: int) -> int:
        """The DESIGN.md percentile: highest equivalent value of the bucket holding the rank, capped at max."""
        if self.count == 0:
            return 0
        rank, seen = rank_of(ppm, self.count), 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= rank:
                return min(highest_equivalent(i), self.max_ns)
        return self.max_ns

    def mean_ns(self) -> float:
        return self.sum_ns / self.count if self.count else 0.0

    def stddev_ns(self) -> float:
        """Population standard deviation from the exact sums."""
        if not self.count:
            return 0.0
        var = (self.sumsq_ns2 * self.count - self.sum_ns**2) / (self.count**2)
        return math.sqrt(max(var, 0.0))

    def stats(self) -> dict:
        """count, min, percentiles, mean, max, stddev (ns, integers), as in every report."""
        out = {"count": self.count, "min_ns": self.min_ns}
        out.update({k: self.percentile_ns(p) for k, p in PERCENTILES_PPM.items()})
        out["mean_ns"] = round(self.mean_ns())
        out["max_ns"] = self.max_ns
        out["stddev_ns"] = round(self.stddev_ns())
        out["out_of_range"] = self.out_of_range
        return out

    def count_above(self, threshold_ns: int) -> int:
        """Samples certainly above threshold: buckets whose lowest value exceeds it (exact below 2048 ns)."""
        return sum(c for i, c in self.counts.items() if lowest_equivalent(i) > threshold_ns)

    # -- wire and storage forms -------------------------------------------------
    @classmethod
    def from_record(cls, rec: dict) -> Histogram:
        """From a probe's `hist` record (or its stored copy); ValueError naming the field when the record is not
        one of this layout (record_problem): a bucket index beyond COUNTS_LEN is never a bucket."""
        if why := record_problem(rec):
            raise ValueError(why)
        return cls(
            {int(i): int(c) for i, c in rec.get("counts", [])},
            int(rec["count"]),
            int(rec["min_ns"]),
            int(rec["max_ns"]),
            int(rec["sum_ns"]),
            int(rec["sumsq_ns2"]),
            int(rec.get("out_of_range", 0)),
        )

    def to_record(self) -> dict:
        return {
            "count": self.count,
            "min_ns": self.min_ns,
            "max_ns": self.max_ns,
            "sum_ns": self.sum_ns,
            "sumsq_ns2": self.sumsq_ns2,
            "out_of_range": self.out_of_range,
            "counts": [[i, self.counts[i]] for i in sorted(self.counts) if self.counts[i]],
        }

    def encode_hdr(self) -> str:
        """HdrHistogram V2 compressed encoding, base64."""
        n = max(self.counts) + 1 if self.counts else 0
        payload = bytearray()
        zeros = 0
        for i in range(n):
            c = self.counts.get(i, 0)
            if c == 0:
                zeros += 1
                continue
            if zeros:
                payload += _zigzag_leb128(-zeros)
                zeros = 0
            payload += _zigzag_leb128(c)
        header = struct.pack(">IIIIqqd", _V2_PAYLOAD_COOKIE, len(payload), 0, SIG_DIGITS, LOWEST_NS, HIGHEST_NS, 1.0)
        body = zlib.compress(bytes(header) + bytes(payload))
        return base64.b64encode(struct.pack(">II", _V2_COMPRESSED_COOKIE, len(body)) + body).decode()

    @classmethod
    def decode_hdr(cls, text: str) -> Histogram:
        """Counts from our own V2 encoding; count/sum are rebuilt from bucket values (approximate)."""
        raw = base64.b64decode(text)
        cookie, length = struct.unpack(">II", raw[:8])
        if cookie != _V2_COMPRESSED_COOKIE:
            raise ValueError(f"not an HdrHistogram V2 compressed encoding (cookie {cookie:#x})")
        data = zlib.decompress(raw[8 : 8 + length])
        pcookie, plen, _, sig, low, high, _ = struct.unpack(">IIIIqqd", data[:40])
        if pcookie != _V2_PAYLOAD_COOKIE or (sig, low, high) != (SIG_DIGITS, LOWEST_NS, HIGHEST_NS):
            raise ValueError("histogram layout differs from rtqual's (1 ns .. 60 s, 3 digits)")
        h, i, pos, payload = cls(), 0, 0, data[40 : 40 + plen]
        while pos < len(payload):
            v, pos = _read_zigzag_leb128(payload, pos)
            if v < 0:
                i += -v
                continue
            if i >= COUNTS_LEN:  # never a bucket of this layout (and 1 << a huge bucket would fill memory)
                raise ValueError(f"bucket index {i} is outside the histogram's layout (0..{COUNTS_LEN - 1})")
            h.counts[i] = v
            lo = lowest_equivalent(i)
            h.min_ns = lo if not h.count else min(h.min_ns, lo)
            h.max_ns = max(h.max_ns, highest_equivalent(i))
            h.count += v
            h.sum_ns += lo * v
            h.sumsq_ns2 += lo * lo * v
            i += 1
        return h


def _count(x: object) -> bool:
    """A non-negative integer (JSON true/false are not counts; exact sums may pass 2^64)."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def record_problem(rec: object) -> str | None:
    """Why a histogram record (a probe's `hist` record or hist.json's copy) is not one of this layout, or None:
    at most COUNTS_LEN [index, count] pairs, each index a bucket of the layout (0 <= index < COUNTS_LEN), counts
    and exact sums non-negative integers, min <= max when anything was counted."""
    if not isinstance(rec, dict):
        return f"a histogram record is an object, not a {type(rec).__name__}"
    counts = rec.get("counts", [])
    if not isinstance(counts, list) or len(counts) > COUNTS_LEN:
        return f"'counts' is not a list of at most {COUNTS_LEN} [index, count] pairs"
    if counts:  # checked a column at a time in C (map): a day's histogram holds thousands of pairs
        pairs = set(map(type, counts)) == {list} and set(map(len, counts)) == {2}
        index = list(map(itemgetter(0), counts)) if pairs else []
        n = list(map(itemgetter(1), counts)) if pairs else []
        if not pairs or set(map(type, index)) != {int} or set(map(type, n)) != {int} or min(n) < 0:
            return "'counts' holds an entry that is not an [index, count] pair of non-negative integers"
        if min(index) < 0 or max(index) >= COUNTS_LEN:
            bad = next(i for i in index if not 0 <= i < COUNTS_LEN)
            return f"bucket index {bad} is outside the histogram's layout (0..{COUNTS_LEN - 1})"
    for key in ("count", "min_ns", "max_ns", "sum_ns", "sumsq_ns2", "out_of_range"):
        if not _count(rec.get(key, 0 if key == "out_of_range" else None)):
            return f"'{key}' missing or not a non-negative integer"
    if rec["count"] and rec["min_ns"] > rec["max_ns"]:
        return "'min_ns' is above 'max_ns'"
    return None


def _zigzag_leb128(value: int) -> bytes:
    """ZigZag then LEB128 as HdrHistogram writes it (9th byte carries 8 bits)."""
    z = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    for _ in range(8):
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z & 0xFF)
    return bytes(out)


def _read_zigzag_leb128(buf: bytes, pos: int) -> tuple[int, int]:
    z, shift = 0, 0
    for k in range(9):
        b = buf[pos]
        pos += 1
        if k == 8:
            z |= b << 56
            break
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return (z >> 1) ^ -(z & 1), pos

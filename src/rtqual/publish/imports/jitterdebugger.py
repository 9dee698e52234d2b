"""jitterdebugger (0.3, Debian's package): its output folder (`-o DIR`), or a results.json file; one case each.

Facts this relies on (its MIT source and a run here): results.json has "version", "sysinfo"
(with "resolution_in_ns": 1000 for µs, 1 with -N) and per measuring thread "cpu": {"N":
{"histogram": {value: count}, "count", "min", "max", "avg"}}; latencies are truncated to the unit;
the histogram has a fixed range (values beyond it are counted but not bucketed), so overflow =
count − Σ histogram. The threads are numbered 0.. over the CPUs of its affinity (-a): without -a
thread N is CPU N. `-s` adds samples.raw, packed little-endian records of 28 bytes: u32 thread,
i64 tv_sec, i64 tv_nsec (CLOCK_MONOTONIC wake-up time), u64 latency in the unit; its writer may
miss the last samples of a run. A sample larger than every bucket of its thread's histogram lies
beyond the range, so samples.raw gives the exact values of overflowed samples where it holds them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.imports import common
from rtqual.publish.imports.common import count, histogram, number, obj, read_json, uint
from rtqual.publish.imports.writer import Case, Series, check_series
from rtqual.results import blockmax

TOOL = "jitterdebugger"
SAMPLE = struct.Struct("<IqqQ")  # thread, tv_sec, tv_nsec, latency (units); 28 bytes, packed
CHUNK_RECORDS = 1 << 16


def parse(path: Path) -> list[Case]:
    """One case from an output folder (results.json, samples.raw if present) or a results.json file."""
    if path.is_dir():
        results, samples = path / "results.json", path / "samples.raw"
        if not results.exists():
            raise RtqError(f"{path}: no results.json (not a jitterdebugger -o folder)")
    else:
        results, samples = path, path.with_name("samples.raw")
    data = read_json(results)
    threads = common.threads(str(results), data, "cpu", "jitterdebugger results")
    sysinfo: dict = data["sysinfo"] if isinstance(data.get("sysinfo"), dict) else {}
    unit_ns = 1 if sysinfo.get("resolution_in_ns") == 1 else 1000
    series: dict[str, Series] = {}
    for tid, t in threads.items():
        where = f"{results}: cpu {str(tid)[:20]}"
        if uint(tid) is None:
            raise RtqError(f"{where}: thread number is not a non-negative integer")
        t = obj(where, t)
        for key in ("count", "min", "max", "avg"):
            if key not in t:
                raise RtqError(f"{where}: no '{key}'")
        n = count(f"{where}.count", t["count"])
        s = Series(
            n,
            unit_ns,
            count(f"{where}.min", t["min"]) if n else None,
            count(f"{where}.max", t["max"]) if n else None,
            number(f"{where}.avg", t["avg"]) if n else None,
            histogram(f"{where}.histogram", t.get("histogram", {})),
        )
        check_series(where, s)
        series[str(uint(tid))] = s
    warnings = [
        "jitterdebugger numbers its threads over the CPUs of its affinity (-a): without -a thread N is CPU N",
        f"jitterdebugger records whole {'microseconds' if unit_ns == 1000 else 'nanoseconds'}: values are "
        f"bucket upper edges, percentiles carry +-1 {'us' if unit_ns == 1000 else 'ns'}",
    ]
    raw_info = None
    extra = []
    blocks = None
    if samples.is_file():
        raw_info, more = _fill_overflow(samples, series, unit_ns)
        warnings += more
        extra.append(samples)
        blocks = blockmax.from_samples(
            (tid, t, edge) for tid, t, edge in _timed(samples, unit_ns) if str(tid) in series
        )  # per-second maxima: `rtqual tail`, the report's maximum over time
        if blocks.per_cpu:  # ("read" says whether the overflow pass read it: needed only when one overflowed)
            per_cpu = {c: len(blocks.series(c)) for c in blocks.cpus}
            raw_info["blocks"] = {"block_s": blocks.block_ns / 1e9, "per_cpu": per_cpu}
    else:
        warnings.append("no samples.raw (run without -s): overflowed samples keep unknown values")
    case = Case(
        slug="jitterdebugger",
        label="jitterdebugger",
        probe="jitterdebugger",
        tool=TOOL,
        version=f"results version {data['version']}" if "version" in data else None,
        path=results,
        series=series,
        params={"cpus": sorted(int(k) for k in series)},
        warnings=warnings,
        hostname=sysinfo.get("nodename") if isinstance(sysinfo.get("nodename"), str) else None,
        extra_inputs=extra,
        blocks=blocks,
    )
    case.source = {
        "format": "jitterdebugger results.json" + (" + samples.raw" if raw_info else ""),
        "sysinfo": sysinfo or None,
        "resolution_ns": unit_ns,
        "samples": raw_info,
        "values": "upper edge of jitterdebugger's bucket (value*unit + unit - 1 ns): at most one unit above, "
        "never below",
        "mean": "jitterdebugger's avg over all samples (truncated latencies) plus one unit minus 1 ns",
        "overflow": "count - sum(histogram), less the overflowed samples found in samples.raw; counted as out_of_range",
        "stddev": "from the histogram at the unit's resolution when nothing overflowed, else unknown",
        "missing": ["overruns", "threshold counts", "interval and priority (not recorded)", "start time"],
        "stream": "per-second maxima per thread from samples.raw's wake-up times (rtqual tail, the maximum over time)"
        if raw_info
        else None,
    }
    return [case]


def _fill_overflow(samples: Path, series: dict[str, Series], unit_ns: int) -> tuple[dict, list[str]]:
    """Read samples.raw: per thread, the samples above every histogram bucket give the exact values of
    overflowed samples. Streamed in chunks (a day of samples is gigabytes), and not read at all when
    nothing overflowed. Returns the file's summary and warnings."""
    try:
        size = samples.stat().st_size
    except OSError as e:
        raise RtqError(f"{samples}: unreadable ({e.strerror})") from None
    whole = size // SAMPLE.size
    if not any(s.overflow() for s in series.values()):
        info = {"file": str(samples), "records": whole, "record_bytes": SAMPLE.size, "read": False}
        return info, ["samples.raw not read: nothing overflowed, results.json's histograms are complete"]
    per_thread: dict[str, int] = {}
    over: dict[str, list[int]] = {k: [] for k in series}
    top = {k: max(s.buckets) if s.buckets else -1 for k, s in series.items()}
    try:
        with open(samples, "rb") as f:
            for _ in range(0, whole, CHUNK_RECORDS):
                chunk = f.read(CHUNK_RECORDS * SAMPLE.size)
                for tid, _sec, _nsec, value in SAMPLE.iter_unpack(chunk[: len(chunk) // SAMPLE.size * SAMPLE.size]):
                    key = str(tid)
                    if key not in series:
                        raise RtqError(
                            f"{samples}: a sample of thread {tid}, which results.json does not have: not the same run"
                        )
                    per_thread[key] = per_thread.get(key, 0) + 1
                    if value > top[key]:
                        over[key].append(value)
    except OSError as e:
        raise RtqError(f"{samples}: unreadable ({e.strerror})") from None
    warnings = []
    if size % SAMPLE.size:
        warnings.append(f"samples.raw ends with a partial record ({size % SAMPLE.size} bytes), ignored")
    for key, s in series.items():
        if per_thread.get(key, 0) > s.count:
            raise RtqError(
                f"{samples}: thread {key} has {per_thread[key]} samples but results.json counts {s.count}: "
                "not the same run"
            )
        if len(over[key]) > s.overflow():
            raise RtqError(
                f"{samples}: thread {key} has more samples beyond the histogram than results.json: not the same run"
            )
        s.exact_ns = [v * unit_ns + unit_ns - 1 for v in over[key]]
        check_series(f"{samples}: thread {key}", s)
        if per_thread.get(key, 0) < s.count:
            warnings.append(
                f"samples.raw holds {per_thread.get(key, 0)} of thread {key}'s {s.count} samples "
                "(jitterdebugger's writer stops before the last ones)"
            )
    info = {"file": str(samples), "records": whole, "record_bytes": SAMPLE.size, "read": True, "per_thread": per_thread}
    return info, warnings


def timed_samples(folder: Path) -> Iterator[tuple[int, int, int]]:
    """(thread, CLOCK_MONOTONIC time ns, latency ns) of every whole record of FOLDER/samples.raw, streamed (the
    route of a jitterdebugger run into rtqual tail); the unit from results.json's sysinfo when present."""
    unit_ns = 1000
    if (folder / "results.json").exists():
        sysinfo = read_json(folder / "results.json").get("sysinfo")
        unit_ns = 1 if isinstance(sysinfo, dict) and sysinfo.get("resolution_in_ns") == 1 else 1000
    for tid, t, value in _records(folder / "samples.raw"):
        yield tid, t, value * unit_ns


def _timed(samples: Path, unit_ns: int) -> Iterator[tuple[int, int, int]]:
    """(thread, time ns, the bucket's upper edge in ns: the value the import's histograms give it) per sample."""
    for tid, t, value in _records(samples):
        yield tid, t, value * unit_ns + unit_ns - 1


def _records(samples: Path) -> Iterator[tuple[int, int, int]]:
    """(thread, time ns, latency in the unit) of every whole record of samples.raw, streamed in chunks."""
    try:
        with open(samples, "rb") as f:
            while chunk := f.read(CHUNK_RECORDS * SAMPLE.size):
                for tid, sec, nsec, value in SAMPLE.iter_unpack(chunk[: len(chunk) // SAMPLE.size * SAMPLE.size]):
                    yield tid, sec * 1_000_000_000 + nsec, value
    except OSError as e:
        raise RtqError(f"{samples}: unreadable ({e.strerror})") from None

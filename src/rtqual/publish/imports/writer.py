"""The one writer every importer uses: a tool's per-CPU numbers in, an ordinary rtqual bundle out.

An importer fills a `Case` with one `Series` per CPU (or per thread, when the tool does not say
which CPU) in the tool's own terms: a bucket width, bucket counts, an overflow count, and the
tool's min/avg/max. This module turns them into rtqual's statistics and files (result.json with
the keys rtqual's runner writes, hist.json and .hdr files in rtqual's HDR layout), stating what
the tool did not record instead of inventing it:

- every value is the upper edge of the tool's bucket (value·unit + unit − 1 ns): an upper bound,
  at most one unit above the truth, like rtqual's own percentiles (never below the true value);
  percentiles are ranked on the tool's buckets, so they are exactly such edges (hist.json and the
  .hdr files hold the same samples in rtqual's HDR layout, which rounds above 2048 ns by <= 0.1 %);
- samples beyond the tool's histogram range (overflow) are counted as out_of_range, which makes
  the case inconclusive; percentiles whose rank falls among them are unknown (null);
- stddev only from a complete histogram (no overflow), to bucket resolution; null otherwise;
- overruns and threshold counts are null: none of the tools records them.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rtqual import __version__
from rtqual.answers.verdict import run_verdict
from rtqual.errors import RtqError
from rtqual.publish.imports.common import MAX_COUNT
from rtqual.results.blockmax import BlockMaxima
from rtqual.results.bundle import Bundle, names, write_json, write_text
from rtqual.results.hist import HIGHEST_NS, PERCENTILES_PPM, Histogram, rank_of

# Inputs larger than this are not copied into the bundle (their size and path are recorded).
COPY_MAX_BYTES = 16 * 1024 * 1024


@dataclass
class Series:
    """One CPU's (or thread's) samples as the tool recorded them, in its own unit."""

    count: int  # samples measured (histogram + overflow)
    unit_ns: int  # width of one bucket and unit of min/avg/max (1000 for µs, 1 for ns)
    min_units: int | None
    max_units: int | None
    avg_units: float | None  # the tool's own average over all samples
    buckets: dict[int, int] | None = None  # bucket index (value in units) -> count; None: no histogram
    exact_ns: list[int] = field(default_factory=list)  # overflow samples whose exact value is known

    def histogram(self) -> Histogram | None:
        """The samples in rtqual's HDR layout, each at its bucket's upper edge; None without buckets."""
        if self.buckets is None:
            return None
        h = Histogram()
        for value, n in sorted(self.buckets.items()):
            if n:
                h.record(edge_ns(value, self.unit_ns), n)
        for v in self.exact_ns:
            h.record(v)
        return h

    def overflow(self) -> int:
        """Samples the histogram does not hold (beyond the tool's range, values unknown)."""
        if self.buckets is None:
            return 0
        return self.count - sum(self.buckets.values()) - len(self.exact_ns)


@dataclass
class Case:
    """One imported case: what an importer read from one input (or one column group of it)."""

    slug: str  # the case id after its number: "timer" -> "001-timer"
    label: str
    probe: str  # the tool's measurement ("cyclictest", "timerlat-irq", ...), never an rtqual probe name
    tool: str
    version: str | None
    path: Path
    series: dict[str, Series]  # per_cpu key ("0", "1", ...) -> series
    params: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)  # what the tool recorded and how it was read
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # the tool itself reported a failure
    inconclusive: str | None = None  # why the numbers are incomplete in a way out_of_range cannot say
    hostname: str | None = None
    start: str | None = None
    end: str | None = None
    extra_inputs: list[Path] = field(default_factory=list)  # other files read (jitterdebugger's samples)
    blocks: BlockMaxima | None = None  # per-second maxima where the tool kept sample times: the case's stream


def edge_ns(value_units: int, unit_ns: int) -> int:
    """Upper edge of a tool's bucket in ns: the largest value the bucket can hold."""
    return value_units * unit_ns + unit_ns - 1


def series_stats(series: list[Series]) -> dict:
    """rtqual's statistics keys for one CPU (one series) or all (several): known values, nulls for the rest."""
    count = sum(s.count for s in series)
    full = bool(series) and all(s.buckets is not None for s in series)
    values = _values_ns(series) if full else {}  # sample value (ns, bucket upper edge) -> count
    overflow = sum(s.overflow() for s in series)
    mins = [edge_ns(s.min_units, s.unit_ns) for s in series if s.min_units is not None and s.count]
    maxs = [edge_ns(s.max_units, s.unit_ns) for s in series if s.max_units is not None and s.count]
    avgs = [(s.avg_units * s.unit_ns + s.unit_ns - 1, s.count) for s in series if s.avg_units is not None and s.count]
    out: dict = {"count": count, "min_ns": min(mins) if mins else None}
    max_ns = max(maxs) if maxs else (max(values) if values else None)
    for key, ppm in PERCENTILES_PPM.items():
        out[key] = _percentile_ns(values, count, ppm) if full and count else None
    known = sum(n for _, n in avgs)
    out["mean_ns"] = round(sum(a * n for a, n in avgs) / known) if avgs and known == count else None
    out["max_ns"] = max_ns
    out["stddev_ns"] = _stddev_ns(values) if full and count and not overflow else None
    out["out_of_range"] = overflow
    out["overruns"] = None
    out["over_threshold"] = None
    out["over_threshold_pct"] = None
    return out


def _values_ns(series: list[Series]) -> dict[int, int]:
    """Every bucketed sample at its bucket's upper edge, and the exactly known ones, over all series."""
    out: dict[int, int] = {}
    for s in series:
        for value, n in (s.buckets or {}).items():
            if n:
                out[edge_ns(value, s.unit_ns)] = out.get(edge_ns(value, s.unit_ns), 0) + n
        for v in s.exact_ns:
            out[v] = out.get(v, 0) + 1
    return out


def _percentile_ns(values: dict[int, int], count: int, ppm: int) -> int | None:
    """rtqual's nearest rank over all `count` samples, taken on the tool's own buckets (so the value is
    exactly a bucket's upper edge, not rounded again by rtqual's HDR layout); None when the rank lies
    among the overflowed samples."""
    rank, seen = rank_of(ppm, count), 0
    for v in sorted(values):
        seen += values[v]
        if seen >= rank:
            return v
    return None


def _stddev_ns(values: dict[int, int]) -> int:
    """Population standard deviation of the bucketed values (rtqual's definition), at bucket resolution."""
    n = sum(values.values())
    total = sum(v * c for v, c in values.items())
    var = (sum(v * v * c for v, c in values.items()) * n - total * total) / (n * n)
    return round(math.sqrt(max(var, 0.0)))


def hist_record(series: list[Series], cpu: int | None) -> dict | None:
    """hist.json's record of one CPU (cpu given) or all: rtqual's layout, overflow as out_of_range,
    max_ns the tool's maximum (it may lie beyond the histogram)."""
    hists = [s.histogram() for s in series]
    if any(h is None for h in hists) or not series:
        return None
    merged = Histogram.merged(hists)  # type: ignore[arg-type]
    rec = merged.to_record()
    rec["out_of_range"] = sum(s.overflow() for s in series)
    maxs = [edge_ns(s.max_units, s.unit_ns) for s in series if s.max_units is not None and s.count]
    if maxs:
        rec["max_ns"] = max(max(maxs), rec["max_ns"])
    return rec if cpu is None else {"type": "hist", "cpu": cpu, **rec}


def check_series(where: str, s: Series) -> None:
    """One-line errors for numbers no tool writes: negative counts, more in the histogram than measured."""
    if s.count < 0 or any(n < 0 for n in (s.buckets or {}).values()):
        raise RtqError(f"{where}: negative count")
    if s.buckets is not None and any(v < 0 or v * s.unit_ns > HIGHEST_NS for v in s.buckets):
        raise RtqError(f"{where}: histogram value out of range")
    if s.overflow() < 0:
        raise RtqError(f"{where}: the histogram holds more samples ({s.count - s.overflow()}) than counted ({s.count})")
    if any(v > HIGHEST_NS for v in s.exact_ns):
        raise RtqError(f"{where}: a sample beyond {HIGHEST_NS // 10**9} s")
    for v in (s.min_units, s.max_units):
        if v is not None and (v < 0 or v * s.unit_ns > HIGHEST_NS):
            raise RtqError(f"{where}: min/max {v} out of range")


MAX_CPUS = 8192  # Linux's largest CONFIG_NR_CPUS: a CPU number at or beyond it comes from no real run
MAX_TEXT = 200  # characters of a label, version, host name or time an importer takes from its input
PARAM_RANGES = {"priority": (0, 99), "interval_ns": (1, 3600 * 10**9), "distance_ns": (0, 3600 * 10**9)}
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_text(where: str, what: str, value: object) -> None:
    """A text an importer took from its input (label, version, host name) must be one short printable line:
    a newline or escape there would forge lines in tables, reports and the store."""
    if value is None:
        return
    if not isinstance(value, str):
        raise RtqError(f"{where}: {what}: expected text, found {type(value).__name__}")
    bad = CONTROL.search(value)
    if bad:
        raise RtqError(f"{where}: {what} holds a control character ({bad.group()!r})")
    if len(value) > MAX_TEXT:
        raise RtqError(f"{where}: {what}: longer than {MAX_TEXT} characters")


def check_case(case: Case) -> None:
    """Everything an importer read, range-checked before anything is written: CPU numbers 0..MAX_CPUS-1,
    counts and latencies within what a real run gives, known parameters in their ranges, texts without
    control characters. One RtqError line naming the file and what is wrong."""
    where = str(case.path).encode("unicode_escape").decode("ascii")
    for what in ("label", "probe", "slug", "version", "hostname", "start", "end"):
        check_text(where, what, getattr(case, what))
    for key, s in case.series.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and int(key) < MAX_CPUS):
            raise RtqError(f"{where}: CPU {str(key)[:24]!r} is not a CPU number 0..{MAX_CPUS - 1}")
        if not 0 <= s.count < MAX_COUNT:
            raise RtqError(f"{where}: CPU {key}: count {s.count} out of range")
        if s.avg_units is not None and not (math.isfinite(s.avg_units) and 0 <= s.avg_units * s.unit_ns <= HIGHEST_NS):
            raise RtqError(f"{where}: CPU {key}: average {s.avg_units} out of range")
        check_series(f"{where}: CPU {key}", s)
    cpus = case.params.get("cpus", [])
    if not isinstance(cpus, list) or not all(isinstance(c, int) and 0 <= c < MAX_CPUS for c in cpus):
        raise RtqError(f"{where}: CPU list {str(cpus)[:40]} out of range 0..{MAX_CPUS - 1}")
    for name, (lo, hi) in PARAM_RANGES.items():
        v = case.params.get(name)
        if v is not None and not (isinstance(v, int) and lo <= v <= hi):
            raise RtqError(f"{where}: {name} {v} out of range {lo}..{hi}")
    loops = case.params.get("loops")
    if loops is not None and not (isinstance(loops, int) and 0 <= loops < MAX_COUNT):
        raise RtqError(f"{where}: loops {loops} out of range")


def case_result(case: Case, case_id: str) -> dict:
    """result.json of an imported case: the keys rtqual's runner writes, plus "source"."""
    per_cpu = {k: series_stats([s]) for k, s in sorted(case.series.items(), key=lambda kv: int(kv[0]))}
    stats = series_stats(list(case.series.values()))
    warnings = list(case.warnings)
    if stats["out_of_range"]:
        warnings.append(
            f"{stats['out_of_range']} samples lay beyond {case.tool}'s histogram range: their values are unknown "
            "(only the maximum is), percentiles ranked among them are not shown; result inconclusive"
        )
    if case.error:
        verdict, reason = "error", case.error
    elif stats["out_of_range"]:
        verdict, reason = "inconclusive", f"imported from {case.tool}: histogram overflow"
    elif case.inconclusive:
        verdict, reason = "inconclusive", f"imported from {case.tool}: {case.inconclusive}"
    elif not stats["count"]:
        verdict, reason = "inconclusive", f"imported from {case.tool}: no samples"
    else:
        verdict, reason = "completed", f"imported from {case.tool} (no requirements)"
    return {
        "schema_version": 1,
        "id": case_id,
        "label": case.label,
        "probe": case.probe,
        "params": case.params,
        "requirements": {},
        "verdict": verdict,
        "reason": reason,
        "exit_code": None,
        "end": None,
        "degraded": False,
        "rt": {},
        "overhead": None,
        "start_real_ns": None,
        "stats": stats,
        "per_cpu": per_cpu,
        "threshold_events": [],
        "suppressed_events": 0,
        "cpu_time": {},
        "raw": None,
        "warnings": warnings,
        "probe_summary": None,
        "loads": [],
        "conditions": None,
        "host_samples": None,
        "source": {"tool": case.tool, "version": case.version, "file": str(case.path), **case.source},
    }


def write_case(bundle: Bundle, case: Case, case_id: str) -> dict:
    """One case folder: params.json, a copy of the input, hist.json and .hdr files, result.json (last)."""
    d = bundle.case_dir(case_id)
    write_json(
        d / names.PARAMS,
        {
            "id": case_id,
            "label": case.label,
            "probe": case.probe,
            "args": [],
            "params": case.params,
            "requirements": {},
            "loads": None,
            "conditions": None,
        },
    )
    for p in [case.path, *case.extra_inputs]:
        if p.stat().st_size <= COPY_MAX_BYTES:
            shutil.copyfile(p, d / f"source-{p.name}")
    keys = sorted(case.series, key=int)
    per_cpu = {k: hist_record([case.series[k]], int(k)) for k in keys}
    merged = hist_record([case.series[k] for k in keys], None)
    if merged is not None and all(per_cpu.values()):
        write_json(d / names.HIST, {"layout": "hdr", "per_cpu": per_cpu, "all": merged})
        for k, rec in per_cpu.items():
            write_text(d / f"hist-cpu{k}.hdr", Histogram.from_record(rec).encode_hdr() + "\n")  # type: ignore[arg-type]
        write_text(d / "hist-all.hdr", Histogram.from_record(merged).encode_hdr() + "\n")
    if case.blocks is not None and case.blocks.per_cpu:
        mins = {int(k): edge_ns(s.min_units, s.unit_ns) for k, s in case.series.items() if s.min_units is not None}
        write_text(d / names.STREAM, "".join(json.dumps(rec) + "\n" for rec in block_records(case.blocks, mins)))
    result = case_result(case, case_id)
    write_json(d / names.RESULT, result)
    bundle.add_case(result)
    return result


def block_records(bm: BlockMaxima, mins: dict[int, int]) -> Iterator[dict]:
    """Per-second maxima as the records of an rtqual stream (docs/protocol.md): a header giving the block as its
    progress period, then per block one progress record with each CPU's maximum (0: no sample in it) and its
    samples and minimum in the whole run (an import knows no running ones): what `rtqual tail` and the report's maximum
    over time read."""
    yield {"type": "header", "rt": {}, "params": {"progress_ms": max(1, bm.block_ns // 1_000_000)}, "imported": True}
    series = {cpu: bm.series(cpu) for cpu in bm.cpus}
    for i in range(max((len(v) for v in series.values()), default=0)):
        rows = [
            {"cpu": cpu, "window_max_ns": v[i], "count": bm.samples(cpu), "min_ns": mins.get(cpu, 0)}
            for cpu, v in series.items()
            if i < len(v)
        ]
        yield {"type": "progress", "elapsed_ns": (i + 1) * bm.block_ns, "cpus": rows}


def unique_labels(cases: list[Case]) -> None:
    """Several inputs with the same settings: their labels get the file name, so compare can tell them apart."""
    seen: dict[str, int] = {}
    for c in cases:
        seen[c.label] = seen.get(c.label, 0) + 1
    for c in cases:
        if seen[c.label] > 1:
            c.label = f"{c.label} ({c.path.name})"


def write_bundle(tool: str, cases: list[Case], output: Path, argv: list[str]) -> Path:
    """The bundle: manifest (schema 1, marked with its source), one folder per case, status complete."""
    if not cases:
        raise RtqError(f"{tool}: nothing to import")
    for c in cases:
        check_case(c)
    unique_labels(cases)
    versions = sorted({c.version for c in cases if c.version})
    bundle = Bundle(output, argv, f"{tool} {', '.join(versions) or 'unknown version'}")
    files = sorted({str(p) for c in cases for p in [c.path, *c.extra_inputs]})
    hosts = sorted({c.hostname for c in cases if c.hostname})
    bundle.manifest.update(
        hostname=", ".join(hosts) or None,
        start=min((c.start for c in cases if c.start), default=None),
        source={
            "tool": tool,
            "version": ", ".join(versions) or None,
            "files": files,
            "imported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "rtqual_version": __version__,
        },
    )
    bundle.save_manifest()
    verdicts = []
    for n, case in enumerate(cases, 1):
        verdicts.append(write_case(bundle, case, f"{n:03d}-{case.slug}")["verdict"])
    bundle.finish("complete", run_verdict(verdicts))
    ends = [c.end for c in cases if c.end]
    bundle.manifest["end"] = max(ends) if ends else None
    bundle.save_manifest()
    bundle.close()
    return bundle.path

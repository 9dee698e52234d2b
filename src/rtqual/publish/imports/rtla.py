"""`rtla timerlat hist` text: one case per context (IRQ, thread, user thread) per file, per-CPU rows.

The IRQ column (timer IRQ latency) and the thread column (timerlat thread wake-up latency, the
counterpart of cyclictest and rtqual's timer) measure different things, so they become separate
cases ("timerlat-irq", "timerlat-thread", and "timerlat-user" with -u/-U), each with one row per CPU.

Layout (rtla's documentation and its timerlat_hist.c print functions; rtla cannot run on this
kernel, which lacks the timerlat tracer): "# RTLA timerlat histogram", "# Time unit is
microseconds (us)" (or nanoseconds (ns) with -n), "# Duration: D HH:MM:SS", then a header
"Index IRQ-000 Thr-000 [Usr-000] IRQ-001 ..." (columns only for CPUs that saw events), one row
per bucket "index count count ..." (index = bucket × bucket size; rows of zeros skipped unless
--with-zeros), then "over:", "count:", "min:", "avg:", "max:" rows ('-' where a column has no
samples); newer versions add an "ALL:" block, which is skipped (rtqual sums the CPUs itself).
A latency L lands in bucket L / bucket size; count includes the samples over the range; avg is
sum / count truncated to the unit.
"""

from __future__ import annotations

import re
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.imports.common import read_text, uint
from rtqual.publish.imports.writer import Case, Series, check_series

TOOL = "rtla"
CONTEXTS = {
    "IRQ": ("irq", "timer IRQ latency"),
    "Thr": ("thread", "timerlat thread latency"),
    "Usr": ("user", "user-space thread latency"),
}
_COLUMN = re.compile(r"^(IRQ|Thr|Usr)-(\d{1,6})$", re.ASCII)
_SUMMARY = ("over:", "count:", "min:", "avg:", "max:")


def parse(path: Path) -> list[Case]:
    """The cases of one `rtla timerlat hist` output file."""
    text = read_text(path)
    lines = text.splitlines()
    if not any(line.strip().startswith("# RTLA timerlat histogram") for line in lines):
        raise RtqError(f"{path}: not rtla timerlat hist output (no '# RTLA timerlat histogram' line)")
    unit_ns, duration, header_at = 1000, None, None
    for n, line in enumerate(lines):
        head = line.strip()
        if head.startswith("# Time unit is"):
            unit_ns = 1 if "nanoseconds" in head or "(ns)" in head else 1000
        elif head.startswith("# Duration:"):
            duration = head.split(":", 1)[1].strip()
        elif head.startswith("Index"):
            header_at = n
            break
    if header_at is None:
        raise RtqError(f"{path}: no 'Index' header line (output made with --no-index or --no-header cannot be read)")
    columns = lines[header_at].split()[1:]
    parsed = [_COLUMN.match(c) for c in columns]
    if not columns or not all(parsed):
        raise RtqError(f"{path}:{header_at + 1}: header columns must be IRQ-N, Thr-N or Usr-N")
    cols = [(m.group(1), int(m.group(2))) for m in parsed if m]
    if len(set(cols)) != len(cols):
        raise RtqError(f"{path}:{header_at + 1}: a column is named twice")
    buckets: list[dict[int, int]] = [{} for _ in cols]
    summary: dict[str, list[int | None]] = {}
    for n, line in enumerate(lines[header_at + 1 :], header_at + 2):
        words = line.split()
        if not words:
            continue
        if words[0] == "ALL:" or (summary.keys() >= set(_SUMMARY)):
            break  # the all-CPU block and anything after (auto-analysis) are not needed
        if words[0] in _SUMMARY:
            summary[words[0]] = _values(path, n, words[1:], len(cols), allow_dash=words[0] != "over:")
            continue
        index = uint(words[0])
        if index is None:
            raise RtqError(f"{path}:{n}: expected a histogram row or a summary row, found '{line.strip()[:40]}'")
        values = _values(path, n, words[1:], len(cols), allow_dash=False)
        for c, v in enumerate(values):
            if v:
                buckets[c][index] = buckets[c].get(index, 0) + v
    missing = [k for k in _SUMMARY if k not in summary]
    if missing:
        raise RtqError(f"{path}: cut short? no '{missing[0]}' row after the histogram (or made with --no-summary)")
    bucket_size = _bucket_size(buckets)
    cases = []
    for ctx, (slug, what) in CONTEXTS.items():
        series: dict[str, Series] = {}
        for c, (kind, cpu) in enumerate(cols):
            if kind != ctx:
                continue
            total, mn, avg, mx = (summary[k][c] for k in ("count:", "min:", "avg:", "max:"))
            s = Series(
                total or 0,
                unit_ns * bucket_size,  # one bucket is the unit here; min/avg/max are put in their buckets
                mn // bucket_size if total and mn is not None else None,
                mx // bucket_size if total and mx is not None else None,
                avg / bucket_size if total and avg is not None else None,
                {idx // bucket_size: v for idx, v in buckets[c].items()},
            )
            if s.overflow() != summary["over:"][c]:
                raise RtqError(
                    f"{path}: {kind}-{cpu:03d}: 'over:' says {summary['over:'][c]}, "
                    f"count - histogram says {s.overflow()}"
                )
            check_series(f"{path}: {kind}-{cpu:03d}", s)
            series[str(cpu)] = s
        if not series:
            continue
        case = Case(
            slug=f"timerlat-{slug}",
            label=f"timerlat {slug}",
            probe=f"timerlat-{slug}",
            tool=TOOL,
            version=None,
            path=path,
            series=series,
            params={"cpus": sorted(int(k) for k in series), "context": slug},
            warnings=[
                f"rtla records whole {'microseconds' if unit_ns == 1000 else 'nanoseconds'}: values are bucket "
                f"upper edges, percentiles carry +-{bucket_size} {'us' if unit_ns == 1000 else 'ns'}",
                "rtla's output names no version or host, and not the period it ran at",
            ],
        )
        if bucket_size != 1:
            case.warnings.append(
                f"buckets are {bucket_size} units wide (inferred from the indexes; the text does not say): "
                "min, mean and max are put at their buckets' upper edges"
            )
        case.source = {
            "format": "rtla timerlat hist text",
            "context": what,
            "duration": duration,
            "resolution_ns": unit_ns,
            "bucket_size": bucket_size,
            "values": "upper edge of rtla's bucket: at most one bucket above the true latency, never below",
            "mean": "rtla's avg (sum/count, truncated) plus one unit minus 1 ns",
            "overflow": "rtla's 'over:' row, counted as out_of_range",
            "stddev": "from the histogram at bucket resolution when nothing overflowed, else unknown",
            "summary": {
                f"{kind}-{cpu:03d}": {k.rstrip(":"): summary[k][c] for k in _SUMMARY}
                for c, (kind, cpu) in enumerate(cols)
                if kind == ctx
            },
            "missing": ["overruns", "threshold counts", "the timerlat period", "rtla version", "host"],
        }
        cases.append(case)
    return cases


def _values(path: Path, n: int, words: list[str], ncols: int, allow_dash: bool) -> list[int | None]:
    """One count per column ('-' for a column without samples in the min/avg/max rows)."""
    if len(words) != ncols:
        raise RtqError(f"{path}:{n}: {len(words)} values for {ncols} columns")
    out: list[int | None] = []
    for w in words:
        if w == "-" and allow_dash:
            out.append(None)
        elif uint(w) is not None:
            out.append(uint(w))
        else:
            raise RtqError(f"{path}:{n}: '{w[:20]}' is not a count")
    return out


def _bucket_size(buckets: list[dict[int, int]]) -> int:
    """The bucket size (-b), which the text does not print: the greatest common divisor of the indexes
    shown (index = bucket x size); 1 when it cannot be told."""
    from math import gcd

    g = 0
    for b in buckets:
        for idx in b:
            g = gcd(g, idx)
    return g or 1

#!/usr/bin/env python3
"""Does the tail estimate hold? `rtqual run timer` for an hour, the return levels estimated from the first
10 minutes, compared with what the other 50 minutes showed (issue 27; docs/tail.md). Run as root, under the
shared lock on a shared machine:

    flock /work/latency.lock .venv/bin/python benchmarks/tail_backtest.py [--duration 1h] [--fit 10m]
                                                                    [--block 1s] [--keep DIR]

Blocks of 1 s come from the stream's progress records; a shorter --block (e.g. 100ms, for a short try)
runs with --raw and cuts the raw samples into blocks. Prints, for the fit span: the threshold, clusters,
shape with its interval, the verdict; then for the level expected once in the rest of the run and for the
1-hour level: the estimate with its 95 % interval, how often the rest exceeded it (clusters) against how
often it should have, and the rest's maximum.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from rtqual.answers.evidence import tail
from rtqual.publish.tail import case_blocks
from rtqual.results import bundle, rawfile
from rtqual.results.blockmax import from_samples
from rtqual.units import format_ns, parse_duration_ns


def blocks_of(path: Path, block_ns: int) -> tuple[list[int], float]:
    """The run's all-CPU block maxima and the block length in s (from raw.bin when block_ns < 1 s)."""
    model = bundle.load(path)
    case = model.cases[0]
    if block_ns < 1_000_000_000:
        raw = model.raw_file(case["id"])
        assert raw is not None, "no raw.bin: run with --raw"
        bm = from_samples(((c, t, lat) for c, t, lat, _ in rawfile.samples(raw)), block_ns)
    else:
        bm = case_blocks(model, case)
    return bm.series(None), bm.block_ns / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", default="1h")
    ap.add_argument("--fit", default="10m", help="the span the levels are estimated from (the run's start)")
    ap.add_argument("--block", default="1s", help="block length (below 1s: from --raw samples)")
    ap.add_argument("--keep", metavar="DIR", help="keep the bundle here")
    ap.add_argument("--bundle", metavar="DIR", help="analyse this run's bundle again (no new run)")
    a = ap.parse_args()
    block_ns = parse_duration_ns(a.block, "--block")
    out = Path(a.bundle or a.keep or Path(tempfile.mkdtemp(prefix="rtqual-tail-")) / "b")
    if not a.bundle:
        cmd = [sys.executable, "-m", "rtqual", "run", "timer", "--duration", a.duration, "-o", str(out), "-q"]
        cmd += ["--raw"] if block_ns < 1_000_000_000 else []
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
    values, block_s = blocks_of(out, block_ns)
    n_fit = int(parse_duration_ns(a.fit, "--fit") / 1e9 / block_s)
    first, rest = values[:n_fit], values[n_fit:]
    rest_s = len(rest) * block_s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = tail.analyse(first, block_s, 0, "timer", "all", periods_s=(rest_s,))
    print(
        f"run: {len(values)} blocks of {block_s:g} s; fit on the first {len(first) * block_s:.0f} s, "
        f"test on {rest_s:.0f} s"
    )
    print(f"fit: {case['verdict']}: {case['note']}")
    if case["threshold_ns"] is not None:
        xi = case["shape"]
        print(
            f"     threshold {format_ns(case['threshold_ns'])}, {case['clusters']} clusters, "
            f"ξ = {xi['xi']:.3f}, CI {xi['ci']}"
        )
    print(f"     checks: {json.dumps({k: round(c['p_value'], 3) for k, c in case['checks'].items()})}")
    rest_max = max(rest, default=0)
    rows = []
    for r in case["return_levels"]:
        if r["period_s"] not in (rest_s, 3600.0) or r["value_ns"] is None:
            continue
        seen = len(tail.decluster(rest, r["value_ns"])[0])
        lo, hi = r["ci_ns"]
        rows.append(
            {
                "period_s": r["period_s"],
                "level": format_ns(r["value_ns"]),
                "ci": [format_ns(lo) if lo else None, format_ns(hi) if hi else None],
                "expected_in_rest": round(rest_s / r["period_s"], 2),
                "seen_in_rest": seen,
            }
        )
    for row in rows:
        print(
            f"level once per {row['period_s']:.0f} s: {row['level']} (95 % CI {row['ci'][0]}–{row['ci'][1]}); "
            f"expected {row['expected_in_rest']} times in the rest, seen {row['seen_in_rest']}"
        )
    print(f"rest: maximum {format_ns(rest_max)} over {rest_s:.0f} s")
    if not (a.keep or a.bundle):
        shutil.rmtree(out.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

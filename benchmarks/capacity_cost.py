#!/usr/bin/env python3
"""`rtqual capacity`: what a sweep costs against the same steps run one by one, and how stable its knee is.

A sweep runs `--repeat` times (default 3). The steps of the first are then run one by one, each as its own
`rtqual capacity PRESET --start V --ceiling V --confirm 0` (one step: the same case, built the same way, and
rtqual's own start, publishing and report each time, as a user running the steps by hand with `rtqual run`
pays them). Printed: each sweep's wall time, steps and knee (carries / breaks at), the knee's spread over the
repetitions (max/min of `carries`, against one bisection step, 1 + resolution, and one climbing step, the
factor), and the ratio of the first sweep's wall time to the one-by-one total. Run as root:

    .venv/bin/python benchmarks/capacity_cost.py [--preset aps] [--scale 0.2] [--require 'p99 <= 400us']
                                                 [--start N] [--ceiling N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rtqual(*argv: str) -> float:
    """Run `rtqual ARGV`; its wall time in seconds (its exit code: 0 answered, 4 stopped or nothing found)."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "rtqual", *argv], capture_output=True, text=True)
    if p.returncode not in (0, 4):
        sys.exit(f"capacity_cost: rtqual {' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="aps")
    ap.add_argument("--scale", default="0.2")
    ap.add_argument("--require", default="p99 <= 400us")
    ap.add_argument("--start")
    ap.add_argument("--ceiling")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    common = ["--scale", a.scale, "--require", a.require, "--store", "off", "-q"]
    sweep_args = [*(["--start", a.start] if a.start else []), *(["--ceiling", a.ceiling] if a.ceiling else [])]
    with tempfile.TemporaryDirectory(prefix="rtqual-capcost-") as tmp:
        docs, walls = [], []
        for i in range(a.repeat):
            out = Path(tmp) / f"sweep{i}"
            walls.append(rtqual("capacity", a.preset, *common, *sweep_args, "-o", str(out)))
            docs.append(json.loads((out / "capacity.json").read_text()))
            d = docs[-1]
            knee = f"carries {d['carries']} (x{d.get('carried_times', 1)}), breaks at {d['breaks_at']}: {d['cause']}"
            print(f"sweep {i + 1}: {walls[-1]:.1f} s wall, {len(d['order'])} steps {d['order']}, {knee}")
        one_by_one = 0.0
        for j, v in enumerate(docs[0]["order"]):
            out = Path(tmp) / f"step{j}"
            one_by_one += rtqual("capacity", a.preset, *common, "--start", str(v), "--ceiling", str(v),
                                 "--confirm", "0", "-o", str(out))  # fmt: skip
        print(f"the first sweep's {len(docs[0]['order'])} steps one by one: {one_by_one:.1f} s wall")
        print(f"ratio sweep / one by one: {walls[0] / one_by_one:.3f}")
        carried = [d["carries"] for d in docs if d["carries"]]
        if len(carried) == len(docs) and carried:
            spread = max(carried) / min(carried)
            r = docs[0]["range"]
            bisection, climb = 1 + r["resolution"], r["factor"]

            def said(bound: float) -> str:
                return "within" if spread <= bound else "beyond"

            print(f"knee (carries) over {len(docs)} sweeps: {carried}, spread x{spread:.3f} (one bisection step "
                  f"x{bisection:g}: {said(bisection)}; one climbing step x{climb:g}: {said(climb)})")  # fmt: skip
        else:
            print(f"knee (carries) over {len(docs)} sweeps: {[d['carries'] for d in docs]}: not every sweep carried")
    return 0


if __name__ == "__main__":
    sys.exit(main())

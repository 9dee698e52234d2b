"""What --trace costs: the same timer run with and without --trace, in paired rounds, side by side.

Per round and mode: mean, p99 and max latency (the case's statistics), the CPU time of rtqual and its
probe (user + system, from the children's rusage; the trace reader's work is in it), and the CPU time of the
measurement itself: the probe's measuring threads (the case's cpu_time, the kernel's tracing of their wake-ups
included) plus the trace reader thread (the case's trace.reader_cpu_ns), without Python's start and end.
Each round is a pair
(both modes back to back, which goes first alternating: sidebyside.compare); at the end the median of the
round ratios traced/untraced with a bootstrap 95 % interval. The CPU time includes each run's start and
end (Python, the bundle: about 1 s here), the same for both modes: the shorter --duration, the closer its
ratio is to 1, hence 20 s runs (as issue 40 measured them) and only 4 pairs by default (about 3 minutes).
`--reference events` puts the kernel's own cost on the other side instead: the untraced run while a tracefs
instance records the same events on the measured CPUs for nobody (the tracepoints on each wake-up, which any
tracer pays), so the ratio is what rtqual's reader and analysis add to them.
Run as root, under the shared lock when the numbers are reported:

    flock /work/wt/measure.lock .venv/bin/python benchmarks/trace_cost.py [--reference events]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sidebyside import compare

from rtqual.measure.host import trace
from rtqual.units import parse_cpulist

KEYS = ("mean_ns", "p99_ns", "max_ns")


@contextlib.contextmanager
def kernel_events(cpus: str, on: bool) -> Iterator[None]:
    """While on: a tracefs instance recording --trace's events on the measured CPUs (rtqual's own instance setup:
    the same events, clock and buffer), read by nobody, its ring buffer overwriting itself: what the kernel's
    tracepoints cost a run, without any reader."""
    if not on:
        yield
        return
    tracer = trace.Tracer(parse_cpulist(cpus))
    try:
        (tracer.arm() / "tracing_on").write_text("1")
        yield
    finally:
        tracer.stop()


def one_run(args: argparse.Namespace, traced: bool, out: Path, events: bool = False) -> dict:
    """One `rtqual run timer` (with --trace or not; untraced optionally under kernel_events): its statistics, CPU
    seconds, spikes and lost events."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = [sys.executable, "-m", "rtqual", "run", "timer", "--cpus", args.cpus, "--interval", args.interval]
    argv += ["--duration", args.duration, "--threshold", args.threshold, "-q", "-o", str(out)]
    with kernel_events(args.cpus, events):
        p = subprocess.run(argv + ["--trace"] * traced, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 2):
        sys.exit(f"rtqual exited {p.returncode}: {p.stderr.strip()[-400:]}")
    r = json.loads(next(out.glob("cases/*/result.json")).read_text())
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    trace = r.get("trace") or {}
    probe_ns = sum(c["cpu_time_ns"] for c in (r.get("cpu_time") or {}).values())
    return {
        **{k: r["stats"][k] for k in KEYS},
        "cpu_s": cpu_s,
        "run_cpu_s": (probe_ns + (trace.get("reader_cpu_ns") or 0)) / 1e9,
        "spikes": len(r.get("spikes") or []),
        "lost": trace.get("lost_events", 0),
    }


def _row(s: dict) -> str:
    lat = " ".join(f"{k[:-3]} {s[k] / 1e3:7.1f}" for k in KEYS)
    return f"{lat} us cpu {s['cpu_s']:5.2f} s (measuring {s['run_cpu_s']:5.3f} s) spikes {s['spikes']} lost {s['lost']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4, help="rounds, each a pair: traced and untraced once")
    ap.add_argument("--duration", default="20s", help="of each run (shorter: the CPU ratio nears 1, see above)")
    ap.add_argument("--interval", default="1ms")
    ap.add_argument("--cpus", default="1", help="measured CPUs (the trace reader runs on the others)")
    ap.add_argument("--threshold", default="100us")
    ap.add_argument(
        "--reference",
        choices=("untraced", "events"),
        default="untraced",
        help="the other side: the run untraced, or untraced while the kernel records --trace's events for nobody "
        "(the tracepoints' own cost: --trace against it is what rtqual's reader adds)",
    )
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    print(
        f"# rtqual run timer --cpus {args.cpus} --interval {args.interval} --duration {args.duration} "
        f"--threshold {args.threshold}, with and without --trace"
        + (" (without: the kernel recording the same events for nobody)" if args.reference == "events" else "")
        + f", {args.rounds} rounds (pairs, order alternating)",
        flush=True,
    )
    runs = itertools.count()
    with tempfile.TemporaryDirectory(prefix="rtqual-trace-cost-") as tmp:
        compare(
            args.rounds,
            lambda: one_run(args, True, Path(tmp) / f"run-{next(runs)}"),
            lambda: one_run(args, False, Path(tmp) / f"run-{next(runs)}", args.reference == "events"),
            "untraced" if args.reference == "untraced" else "events",
            keys=(*KEYS, "cpu_s", "run_cpu_s"),
            row=_row,
            name="--trace",
        )


if __name__ == "__main__":
    main()

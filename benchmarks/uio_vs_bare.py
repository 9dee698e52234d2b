#!/usr/bin/env python3
"""rtqual's UIO interrupt loop (`rtqual run event --source uio`, active) side by side with a bare C loop
(uio_ref.c) on the same /dev/uioN.

Builds benchmarks/uio_ref.c with cc, then per round runs `rtqual-probe event --source uio` and the reference
alternately on the same device, trigger and acknowledge registers (BAR 0), CPU, SCHED_FIFO priority, rate and
count, and prints median / p99 / max of both and the median ratios rtqual/reference over the rounds (1.0: rtqual
measures what a bare loop measures). `--stages off` (default) gives rtqual the bare loop's work; `--stages auto`
adds its tracefs instance (the kernel's stages), whose cost the ratio then shows. Run as root where the device
is bound to UIO, e.g. in the lab's guest (qemu's edu: trigger 0x60, acknowledge 0x64; TCG, the emulator's times):

    scripts/kernel-lab rt --device edu -- bash -c \\
      '.venv/bin/python benchmarks/uio_vs_bare.py --uio "$RTQUAL_LAB_UIO" --rounds 3 -n 300 --rate 100 --cpu 1'
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from sidebyside import compare, options, probe_stats

from rtqual.measure.run import native

HERE = Path(__file__).resolve().parent


def build_reference(tmp: Path) -> Path:
    exe = tmp / "uio_ref"
    cc = subprocess.run(["cc", "-O2", str(HERE / "uio_ref.c"), "-o", str(exe)], capture_output=True, text=True)
    if cc.returncode != 0:
        sys.exit(f"building uio_ref failed: {cc.stderr.strip()[-300:]}")
    return exe


def rtqual_round(a) -> dict:
    argv = [str(native.probe_path()), "event", "--source", "uio", "--uio", a.uio, "--stages", a.stages]
    argv += ["--trigger", f"0:{a.trigger}=1", "--ack", f"0:{a.ack}=1", "--loops", str(a.n), "--warmup", "10"]
    argv += ["--rate", str(a.rate), "--cpu", str(a.cpu), "--priority", str(a.priority)]
    return probe_stats(subprocess.run(argv, capture_output=True, text=True, timeout=600), "rtqual-probe event")


def reference_round(exe: Path, a) -> dict:
    argv = [str(exe), a.uio, a.trigger, "1", a.ack, "1", str(a.n), str(round(1e6 / a.rate)), str(a.cpu)]
    p = subprocess.run([*argv, str(a.priority)], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"uio_ref failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def main() -> int:
    extra = {
        "--uio": {"default": os.environ.get("RTQUAL_LAB_UIO"), "help": "the UIO device (default: $RTQUAL_LAB_UIO)"},
        "--trigger": {"default": "0x60", "help": "BAR 0 offset whose write of 1 raises the interrupt (edu: 0x60)"},
        "--ack": {"default": "0x64", "help": "BAR 0 offset whose write of 1 acknowledges it (edu: 0x64)"},
        "--stages": {"default": "off", "choices": ("off", "auto"), "help": "rtqual's kernel stages (tracefs)"},
    }
    a = options(__doc__, "interrupts", extra)
    if not a.uio:
        sys.exit("--uio /dev/uioN: no device given and no $RTQUAL_LAB_UIO")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_reference(Path(tmp))
        compare(a.rounds, lambda: rtqual_round(a), lambda: reference_round(exe, a), "bare UIO loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())

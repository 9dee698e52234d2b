#!/usr/bin/env python3
"""rtqual's msg probe against references, alternately, same size and placement, several rounds.

  (a) zmq-tcp vs a bare libzmq REQ/REP loop in C (benchmarks/zmq_reqrep_ref.c, compiled here
      with cc -O2 ... -lzmq into a temporary directory);
  (b) udp and tcp vs sockperf (`sockperf server` + `sockperf ping-pong --full-rtt`, loopback).

Prints each round's median RTT and the median ratios rtqual/reference. A ratio near 1 means
rtqual's client, server and timing add nothing measurable to the transport. Run as root:

    .venv/bin/python benchmarks/msg_vs_reference.py [--rounds 5] [--loops 20000] [--seconds 3]
        [--size 64] [--client-cpu 0] [--server-cpu 1] [--policy fifo] [--priority 80]

/dev/cpu_dma_latency is held at 0 for the whole benchmark (rtqual runs with --no-dma-latency):
on a VM the idle state alone moves loopback RTT medians from ~10 us to ~50 us, so both sides
must see the same one. sockperf prints one-way latency (RTT/2) unless --full-rtt is given; we
ask for the RTT. Medians: rtqual's p50 (nearest rank, HDR bucket top, <= 0.1 % high), the
reference's exact nearest-rank median (lower median), sockperf's "percentile 50.000".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtqual.measure.run import native

HERE = Path(__file__).resolve().parent


def placement(a, cpu: int) -> list[str]:
    """taskset + chrt prefix giving a reference process the same placement as rtqual's."""
    cmd = ["taskset", "-c", str(cpu)] if cpu >= 0 else []
    return cmd + (["chrt", "-f", str(a.priority)] if a.policy == "fifo" else ["chrt", "-o", "0"])


def rtqual_p50(a, transport: str, *limit: str) -> int:
    out = subprocess.run(
        [
            str(native.probe_path()),
            "msg",
            "--transport",
            transport,
            "--size",
            str(a.size),
            "--client-cpu",
            str(a.client_cpu),
            "--server-cpu",
            str(a.server_cpu),
            "--policy",
            a.policy,
            "--priority",
            str(a.priority),
            "--no-dma-latency",
            "--max-events",
            "0",
            *limit,
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"rtqual-probe msg failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    summary = next(json.loads(line) for line in out.stdout.splitlines() if '"summary"' in line)
    return summary["cpus"][0]["p50_ns"]


def zmq_ref_p50(a, exe: Path) -> int:
    out = subprocess.run(
        [str(exe), str(a.loops), str(a.size), str(a.client_cpu), str(a.server_cpu), a.policy, str(a.priority), "100"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        sys.exit(f"zmq_reqrep_ref failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    return int(out.stdout.strip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sockperf_p50(a, tcp: bool) -> int:
    port = str(free_port())
    proto = ["--tcp"] if tcp else []
    server = subprocess.Popen(
        placement(a, a.server_cpu) + ["sockperf", "server", "-i", "127.0.0.1", "-p", port, *proto],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(10):  # the server may need a moment to listen
            time.sleep(0.5)
            out = subprocess.run(
                placement(a, a.client_cpu)
                + [
                    "sockperf",
                    "ping-pong",
                    "-i",
                    "127.0.0.1",
                    "-p",
                    port,
                    *proto,
                    "-m",
                    str(a.size),
                    "-t",
                    str(a.seconds),
                    "--full-rtt",
                ],
                capture_output=True,
                text=True,
                timeout=a.seconds + 60,
            )
            if "Connection refused" not in out.stdout + out.stderr:
                break
    finally:
        server.terminate()
        server.wait(timeout=10)
    m = re.search(r"percentile 50\.000 =\s+([0-9.]+)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"sockperf ping-pong failed ({out.returncode}): {(out.stdout + out.stderr).strip()[-300:]}")
    return round(float(m.group(1)) * 1000)  # --full-rtt: RTT in us


def us(ns: float) -> str:
    return f"{ns / 1000:8.2f} us"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=20000, help="round trips per zmq run")
    ap.add_argument("--seconds", type=int, default=3, help="length of each udp/tcp run")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=min(1, os.cpu_count() - 1))
    ap.add_argument("--policy", choices=("fifo", "other"), default="fifo")
    ap.add_argument("--priority", type=int, default=80)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency)")
    for tool in ("cc", "sockperf", "taskset", "chrt"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (apt-get install build-essential sockperf util-linux libzmq3-dev)")

    dma = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    os.write(dma, struct.pack("i", 0))
    ratios: dict[str, list[float]] = {"zmq-tcp / C REQ-REP": [], "udp / sockperf": [], "tcp / sockperf": []}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "zmq_reqrep_ref"
        cc = subprocess.run(
            ["cc", "-O2", str(HERE / "zmq_reqrep_ref.c"), "-o", str(exe), "-lzmq"], capture_output=True, text=True
        )
        if cc.returncode != 0:
            sys.exit(f"building zmq_reqrep_ref failed: {cc.stderr.strip()[-300:]}")
        print(
            f"size {a.size} B, client CPU {a.client_cpu}, server CPU {a.server_cpu}, {a.policy}"
            f"{' ' + str(a.priority) if a.policy == 'fifo' else ''}; median RTT per round"
        )
        for r in range(1, a.rounds + 1):
            q = rtqual_p50(a, "zmq-tcp", "--loops", str(a.loops))
            z = zmq_ref_p50(a, exe)
            qu = rtqual_p50(a, "udp", "--duration", f"{a.seconds}s")
            su = sockperf_p50(a, tcp=False)
            qt = rtqual_p50(a, "tcp", "--duration", f"{a.seconds}s")
            st = sockperf_p50(a, tcp=True)
            ratios["zmq-tcp / C REQ-REP"].append(q / z)
            ratios["udp / sockperf"].append(qu / su)
            ratios["tcp / sockperf"].append(qt / st)
            print(
                f"round {r}: zmq-tcp rtqual {us(q)} C {us(z)} | udp rtqual {us(qu)} sockperf {us(su)} | "
                f"tcp rtqual {us(qt)} sockperf {us(st)}"
            )
    os.close(dma)
    print("median ratio rtqual/reference (median RTT):")
    for k, v in ratios.items():
        print(f"  {k:22s} {statistics.median(v):.3f}   (rounds: {', '.join(f'{x:.3f}' for x in v)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What `rtqual monitor` costs the host it watches. Run as root, alone on the machine (under the shared
lock: flock /work/latency.lock ...):

    .venv/bin/python benchmarks/monitor_overhead.py [--duration 5m] [--cpu 0] [--no-day] [--no-live]

1. Live: the monitor at 1 kHz on one CPU (`--cpus 0 --interval 1ms`, 1-minute windows, /metrics on
   loopback, windows stored in a temp SQLite store) for --duration. CPU time (user + system, from /proc)
   of the monitor (Python) and of rtqual-probe (C) between the first minute and the end, as a share of
   one CPU (goal <= 1 %), and over the whole run; RSS of both at 1 minute and at the end; the time of a
   /metrics scrape (median and max of 20).
2. Compressed day: the fake probe replays 86 400 one-second windows as fast as it can (one sample a
   window at 20 us, one at 90 us), each window stored: the monitor's RSS over the replay (flat), the
   windows stored, the store's size per window and per host-day (2 CPUs, 1-minute windows: 2 880 windows).
Prints a table and, last, one JSON line with every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rtqual.units import parse_duration_ns
from rtqual.util import child_named, rss_kb

TICK = os.sysconf("SC_CLK_TCK")
RTQUAL = [sys.executable, "-m", "rtqual"]


def cpu_s(pid: int | None) -> float | None:
    """User + system CPU time of a live process, in seconds (/proc/PID/stat fields 14 and 15)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_ms(url: str, n: int = 20) -> tuple[float, float]:
    """Median and max time of n GETs of url, in ms."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=10) as r:
            r.read()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), max(times)


def live(duration_s: float, cpu: int, folder: Path) -> dict:
    """The monitor at 1 kHz on one CPU for duration_s: CPU share, RSS, scrape time."""
    port = free_port()
    cmd = [*RTQUAL, "monitor", "--cpus", str(cpu), "--interval", "1ms", "--window", "1m"]
    cmd += ["--listen", f"127.0.0.1:{port}", "--store", str(folder / "live.sqlite")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    out: dict = {"duration_s": duration_s}
    try:
        probe = None
        while probe is None and time.monotonic() - t0 < 30:
            time.sleep(0.2)
            probe = child_named(proc.pid, "rtqual-probe")
        time.sleep(max(0.0, 60 - (time.monotonic() - t0)))
        t1, mon1, probe1 = time.monotonic(), cpu_s(proc.pid), cpu_s(probe)
        out["rss_kb_1min"] = {"monitor": rss_kb(proc.pid), "probe": rss_kb(probe) if probe else None}
        out["scrape_ms_median"], out["scrape_ms_max"] = scrape_ms(f"http://127.0.0.1:{port}/metrics")
        time.sleep(max(0.0, duration_s - (time.monotonic() - t0)))
        t2, mon2, probe2 = time.monotonic(), cpu_s(proc.pid), cpu_s(probe)
        out["rss_kb_end"] = {"monitor": rss_kb(proc.pid), "probe": rss_kb(probe) if probe else None}
        assert None not in (mon1, mon2, probe1, probe2), "a process of the monitor ended early"
        steady = (mon2 - mon1) + (probe2 - probe1)  # type: ignore[operator]
        out["cpu_share_pct_steady"] = round(100 * steady / (t2 - t1), 3)
        out["cpu_share_pct_monitor"] = round(100 * (mon2 - mon1) / (t2 - t1), 3)  # type: ignore[operator]
        out["cpu_share_pct_probe"] = round(100 * (probe2 - probe1) / (t2 - t1), 3)  # type: ignore[operator]
        out["cpu_share_pct_whole_run"] = round(100 * (mon2 + probe2) / (t2 - t0), 3)  # type: ignore[operator]
    finally:
        proc.send_signal(2)
        out["exit_code"] = proc.wait(timeout=60)
    return out


def day(folder: Path) -> dict:
    """86 400 windows from the fake probe as fast as it goes: RSS over the replay, store size."""
    script = folder / "day.txt"
    script.write_text("repeat 86400\nsample 0 20000\nsample 0 90000\nprogress\nend\n")
    store = folder / "day.sqlite"
    cmd = [*RTQUAL, "monitor", "--probe", "fake", "--script", str(script), "--window-progress", "1"]
    cmd += ["--listen", "off", "--store", str(store)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rss = []
    while proc.poll() is None:
        kb = rss_kb(proc.pid)
        if kb:
            rss.append((round(time.monotonic() - t0, 1), kb))
        time.sleep(1)
    err = proc.stderr.read() if proc.stderr else ""
    windows = sqlite3.connect(store).execute("select count(*) from windows").fetchone()[0]
    size = store.stat().st_size
    third = max(1, len(rss) // 3)
    return {
        "exit_code": proc.returncode,
        "replay_s": round(time.monotonic() - t0, 1),
        "windows_stored": windows,
        "rss_kb_first_third_max": max(kb for _, kb in rss[:third]) if rss else None,
        "rss_kb_last_third_max": max(kb for _, kb in rss[-third:]) if rss else None,
        "rss_kb_samples": rss,
        "store_bytes": size,
        "store_bytes_per_window": round(size / max(windows, 1), 1),
        "store_bytes_per_host_day_2cpu_1min": round(size / max(windows, 1) * 2 * 1440),
        "stderr": err.strip().splitlines()[-3:],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="5m", help="live part's length (default 5m, at least 1m)")
    ap.add_argument("--cpu", type=int, default=0, help="the CPU measured (default 0)")
    ap.add_argument("--no-day", action="store_true", help="skip the compressed day")
    ap.add_argument("--no-live", action="store_true", help="skip the live part")
    a = ap.parse_args()
    duration_s = max(parse_duration_ns(a.duration) / 1e9, 65)
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="rtqual-monitor-bench-") as tmp:
        if not a.no_live:
            r = result["live"] = live(duration_s, a.cpu, Path(tmp))
            print(f"live, 1 kHz on CPU {a.cpu}, {duration_s:.0f} s:")
            print(f"  CPU share of one CPU, minute 1 to end: {r['cpu_share_pct_steady']} % (goal <= 1 %)")
            print(f"    monitor {r['cpu_share_pct_monitor']} %, probe {r['cpu_share_pct_probe']} %")
            print(f"  CPU share over the whole run (start-up included): {r['cpu_share_pct_whole_run']} %")
            print(f"  RSS at 1 min: {r['rss_kb_1min']} kB; at the end: {r['rss_kb_end']} kB")
            print(f"  /metrics scrape: median {r['scrape_ms_median']:.2f} ms, max {r['scrape_ms_max']:.2f} ms")
        if not a.no_day:
            d = result["day"] = day(Path(tmp))
            print(f"compressed day: {d['windows_stored']} windows stored in {d['replay_s']} s (exit {d['exit_code']})")
            print(
                f"  monitor RSS max, first third {d['rss_kb_first_third_max']} kB, last {d['rss_kb_last_third_max']} kB"
            )
            print(f"  monitor's last words: {d['stderr']}")  # windows the store's bounded buffer dropped, if any
            print(
                f"  store: {d['store_bytes']} bytes, {d['store_bytes_per_window']} per window, "
                f"{d['store_bytes_per_host_day_2cpu_1min']} per host-day (2 CPUs, 1-minute windows)"
            )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

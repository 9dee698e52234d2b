"""rtqual monitor's pipeline with the fake probe (no root): signals write the last window and exit 0, a port in
use is one line and exit 1, bad options are one line, windows reach the store and the textfile, and nothing
grows with time (a compressed day)."""

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitoring import MonitorProc
from rtqual.results.window import parse_coarse
from rtqual.util import rss_kb

# a few thousand samples a second, a progress record every 50 ms, for a long time
SCRIPT = "repeat 1000000\nsample 0 20000\nsample 0 30000\nsample 1 25000\nsample 1 250000\nsleep 50\nprogress\nend\n"


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "fake.txt"
    path.write_text(SCRIPT)
    return path


def monitor(script, *more, env=None):
    return MonitorProc(["monitor", "--probe", "fake", "--script", str(script), "--json", *more], env=env)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_writes_the_last_window_and_exits_0(script, tmp_path, sig):
    folder = tmp_path / "prom"
    folder.mkdir()
    store = tmp_path / "h.sqlite"
    mon = monitor(script, "--window", "1h", "--listen", "off", "--textfile", str(folder), "--store", str(store))
    mon.wait_started()
    time.sleep(1)  # samples (the fake probe's every 50 ms) into the open window
    assert mon.windows() == []  # the hour is not over
    code, err = mon.stop(sig)
    assert code == 0, err
    wins = mon.windows()
    assert [w["cpu"] for w in wins] == [0, 1] and all(w["samples"] > 0 for w in wins)
    assert wins[1]["max_ns"] == 250_000 and wins[1]["over_threshold"] == wins[1]["samples"] // 2
    text = (folder / "rtqual.prom").read_text()
    assert f'rtqual_samples_total{{cpu="1",probe="fake"}} {float(wins[1]["samples"])}' in text
    rows = sqlite3.connect(store).execute("select count(*) from windows").fetchone()
    assert rows == (2,)
    # each window's histogram (coarse bins) counts its samples, and its day holds it (history --report)
    stored = sqlite3.connect(store).execute("select cpu, samples, hist from windows order by cpu").fetchall()
    assert [(cpu, sum(parse_coarse(h).values())) for cpu, _, h in stored] == [(c, n) for c, n, _ in stored]
    days = sqlite3.connect(store).execute("select cpu, windows, max_ns from window_days order by cpu").fetchall()
    assert days == [(0, 1, wins[0]["max_ns"]), (1, 1, 250_000)]


def test_a_port_in_use_is_one_line_and_exit_1(script):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "rtqual", "monitor", "--probe", "fake", "--script", str(script)]
            + ["--listen", f"127.0.0.1:{port}", "--store", "off"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [f"rtqual: error: --listen 127.0.0.1:{port}: Address already in use"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--window", "500ms"], "--window 500ms: at least 1s"),
        (["--window", "soon"], "--window"),
        (["--listen", "9841"], "--listen 9841: give HOST:PORT"),
        (["--textfile", "/nonexistent/dir"], "--textfile /nonexistent/dir: not a folder"),
        (["--probe", "pio"], "--probe"),
        (["--interval", "1us"], "interval"),
        (["--pvs", "a b"], "--pvs"),
    ],
)
def test_bad_options_are_one_line(rtqual_cmd, args, says):
    out = rtqual_cmd("monitor", "--store", "off", "--listen", "off", *args, timeout=60)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in out.stderr


def test_hist_delta_records_sum_to_the_histogram(tmp_path):
    from conftest import probe_records

    script = tmp_path / "s.txt"
    script.write_text("repeat 5\nsample 0 1000\nsample 1 70000\nprogress\nend\nsample 0 3000\n")
    out, recs = probe_records("fake", "--script", script, "--hist-delta")
    assert out.returncode == 0
    for cpu in (0, 1):
        deltas = [r for r in recs if r["type"] == "hist_delta" and r["cpu"] == cpu]
        summed: dict[int, int] = {}
        for r in deltas:
            for i, n in r["counts"]:
                summed[i] = summed.get(i, 0) + n
        hist = next(r for r in recs if r["type"] == "hist" and r["cpu"] == cpu)
        assert summed == {i: n for i, n in hist["counts"]}
    progress = [i for i, r in enumerate(recs) if r["type"] == "progress"]
    assert all(recs[i + 1]["type"] == "hist_delta" for i in progress)


@pytest.mark.slow
def test_a_compressed_day_keeps_memory_flat(tmp_path):
    """86 400 one-second windows as fast as the fake probe replays them: the monitor's RSS stays flat."""
    script = tmp_path / "day.txt"
    script.write_text("repeat 86400\nsample 0 20000\nsample 0 90000\nprogress\nend\n")
    argv = ["monitor", "--probe", "fake", "--script", str(script), "--window-progress", "1", "--listen", "off"]
    mon = MonitorProc([*argv, "--store", "off", "--json"])
    rss = []
    while mon.proc.poll() is None:
        time.sleep(1)
        kb = rss_kb(mon.proc.pid)
        if kb:
            rss.append(kb)
    assert mon.proc.wait() == 0
    for r in mon.readers:
        r.join(timeout=10)
    assert len(mon.lines) >= 86_400 and len(rss) >= 3  # and the probe's final progress record
    assert max(rss[len(rss) // 2 :]) <= max(rss[: len(rss) // 2]) * 1.1 + 2048, rss


def test_windows_json_lines_have_the_store_keys(script):
    mon = monitor(script, "--window", "1s", "--listen", "off", "--store", "off")
    try:
        wins = mon.wait_windows(4)
    finally:
        mon.stop()
    keys = {"host", "probe", "run_as", "cpu", "start_unix_s", "duration_s", "samples", "min_ns", "mean_ns", "p50_ns"}
    keys |= {"p99_ns", "p9999_ns", "max_ns", "over_threshold", "overruns", "threshold_ns", "kernel", "preempt"}
    assert all(set(w) == keys for w in wins)
    assert json.dumps(wins)


def test_a_killed_monitors_folder_is_removed_by_the_next_start_and_by_restore(script, tmp_path, rtqual_cmd):
    """SIGKILL leaves the monitor's work folder (its pid in the name); the next monitor removes it when it
    starts, `rtqual restore` likewise, and neither touches the folder of a monitor still running."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}  # the monitors' temp folders go here, nowhere else

    def start() -> MonitorProc:
        mon = monitor(script, "--window", "1s", "--listen", "off", "--store", "off", env=env)
        mon.wait_windows(2)
        return mon

    def folders(mon: MonitorProc) -> list[Path]:
        return list(tmp.glob(f"rtqual-monitor-{mon.proc.pid}-*"))

    def kill(mon: MonitorProc) -> None:
        assert len(folders(mon)) == 1
        mon.proc.kill()
        mon.stop()
        assert len(folders(mon)) == 1  # a SIGKILL cleans nothing up

    first = start()
    kill(first)
    second = start()
    assert folders(first) == [] and len(folders(second)) == 1  # removed by the next start
    third = start()
    try:
        kill(second)
        bundle = tmp_path / "bundle"  # a finished bundle with nothing of its own to restore (restore refuses a folder
        shutil.copytree(Path(__file__).parent.parent / "data" / "bundles" / "timer-raw", bundle)  # that is none)
        out = rtqual_cmd("restore", bundle, env=env)
        assert out.returncode == 0, out.stderr
        assert folders(second) == [] and f"rtqual-monitor-{second.proc.pid}-" in out.stdout  # removed by restore
        assert len(folders(third)) == 1  # a live monitor's folder is never removed
    finally:
        code, err = third.stop()
    assert code == 0, err
    assert folders(third) == []  # its own folder, removed when it ends

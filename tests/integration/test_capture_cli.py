"""`--capture OVER` at the door (one line, exit 1, before anything runs) and where no ring can be had (said once,
the monitor goes on without capture); `history --spikes` on a store without captures."""

from __future__ import annotations

import os
import subprocess

import pytest

from monitoring import MonitorProc


def _gone_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize(
    "args, says",
    [
        (["--capture", "200"], "--capture: '200' is not a duration"),
        (["--capture", "50us"], "--capture 50us: below --threshold 100us"),
        (["--capture", "1ms", "--trace"], "--capture and --trace exclude each other"),
        (["--capture", "1ms", "--capture-per-hour", "0"], "--capture-per-hour 0"),
        (["--on-spike", "true"], "--on-spike: acts on captured spikes: give --capture OVER too"),
        (["--capture", "1ms", "--on-spike", f"signal:{_gone_pid()}"], "no process"),
        (["--capture", "1ms", "--on-spike", "true", "--on-spike-timeout", "1us"], "--on-spike-timeout 1us"),
    ],
)
def test_bad_capture_options_are_one_line(rtqual_cmd, args, says):
    out = rtqual_cmd("monitor", "--store", "off", "--listen", "off", *args, timeout=60)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in out.stderr, lines


def test_run_refuses_a_capture_below_its_threshold(rtqual_cmd, tmp_path):
    out = rtqual_cmd("run", "timer", "--capture", "10us", "-o", tmp_path / "b", "-q", timeout=60)
    assert out.returncode == 1 and out.stderr.strip().splitlines() == [
        "rtqual: error: --capture 10us: below --threshold 100us; the probe reports only samples over its threshold: "
        "lower --threshold"
    ]
    assert not (tmp_path / "b").exists()


def test_no_ring_is_said_once_and_the_monitor_goes_on(tmp_path):
    script = tmp_path / "fake.txt"
    script.write_text("repeat 1000000\nsample 0 20000\nsample 0 900000\nsleep 50\nprogress\nend\n")
    env = {**os.environ, "RTQUAL_TRACEFS": str(tmp_path)}  # a folder that is no tracefs
    mon = MonitorProc(
        ["monitor", "--probe", "fake", "--script", str(script), "--json", "--capture", "500us", "--window", "1s",
         "--listen", "off", "--store", "off"],
        env=env,
    )  # fmt: skip
    try:
        wins = mon.wait_windows(2)
    finally:
        code, err = mon.stop()
    assert code == 0, err
    said = [x for x in err.splitlines() if "--capture" in x]
    assert len(said) == 1 and "measuring without capture" in said[0] and "not a tracefs folder" in said[0]
    assert all(w.get("type") != "capture" for w in wins) and sum(w["samples"] for w in wins) > 0


def test_history_spikes_of_a_store_without_captures(rtqual_cmd, tmp_path):
    url = str(tmp_path / "h.sqlite")
    from rtqual.publish.store import open_store

    open_store(url).close()
    assert "no captured spikes stored" in rtqual_cmd("history", "--spikes", "--store", url).stdout
    assert rtqual_cmd("history", "--spikes", "--json", "--store", url).stdout.strip().startswith('{\n "spikes": []')

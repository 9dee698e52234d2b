"""Sampler (fake tree and live), summarize, and the other real-time tasks."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rtqual.measure.host.sampler import (
    Sampler,
    cpuinfo_mhz,
    parse_stat,
    read_samples,
    rt_tasks,
    summarize,
    temp_sources,
)


def fake_host(root: Path) -> Path:
    for n, (kind, milli) in enumerate([("x86_pkg_temp", "48500"), ("acpitz", "27800"), ("acpitz", "30000")]):
        z = root / f"sys/class/thermal/thermal_zone{n}"
        z.mkdir(parents=True)
        (z / "type").write_text(kind + "\n")
        (z / "temp").write_text(milli + "\n")
    hw = root / "sys/class/hwmon/hwmon0"
    hw.mkdir(parents=True)
    (hw / "name").write_text("coretemp\n")
    (hw / "temp1_input").write_text("51000\n")
    (hw / "temp1_label").write_text("Core 0\n")
    for cpu, khz in ((0, 1500000), (1, 600000)):
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_cur_freq").write_text(f"{khz}\n")
    (root / "proc").mkdir()
    (root / "proc/loadavg").write_text("0.50 0.40 0.30 1/100 1234\n")
    return root


def test_sample_from_fake_tree(tmp_path):
    s = Sampler(tmp_path / "s.jsonl", root=fake_host(tmp_path)).sample()
    assert s["temps_c"] == {"x86_pkg_temp": 48.5, "acpitz": 27.8, "acpitz.thermal_zone2": 30.0, "coretemp/Core 0": 51.0}
    assert s["freq_khz"] == {"0": 1500000, "1": 600000}
    assert s["loadavg"] == [0.5, 0.4, 0.3]
    assert isinstance(s["t_ns"], int) and isinstance(s["real_ns"], int)


def test_cpuinfo_fallback_and_missing_files(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(
        "processor\t: 0\ncpu MHz\t\t: 2596.122\n\nprocessor\t: 1\ncpu MHz\t\t: 800.000\n"
    )
    s = Sampler(tmp_path / "s.jsonl", root=tmp_path).sample()
    assert s["freq_khz"] == {"0": 2596122, "1": 800000}
    assert s["temps_c"] == {} and s["loadavg"] is None
    assert cpuinfo_mhz("garbage") == {}
    assert temp_sources(tmp_path / "nothing") == {}


def test_sampler_live_writes_lines_and_stops_quickly(tmp_path):
    path = tmp_path / "samples.jsonl"
    sampler = Sampler(path, period_s=1.0)
    sampler.start()
    time.sleep(2.5)
    t0 = time.monotonic()
    sampler.stop()
    assert time.monotonic() - t0 < 0.5
    assert not sampler.is_alive()
    lines = path.read_text().splitlines()
    assert len(lines) >= 2
    samples = [json.loads(line) for line in lines]
    assert {"t_ns", "real_ns", "temps_c", "freq_khz", "loadavg"} <= set(samples[0])
    gaps = [b["t_ns"] - a["t_ns"] for a, b in zip(samples, samples[1:])]
    assert all(0.5e9 < g < 2e9 for g in gaps), gaps
    assert sampler.errors == 0


def test_sampler_survives_a_failing_read(tmp_path, monkeypatch):
    sampler = Sampler(tmp_path / "s.jsonl", period_s=0.05, root=fake_host(tmp_path))
    real, calls = sampler.sample, []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        return real()

    monkeypatch.setattr(sampler, "sample", flaky)
    sampler.start()
    time.sleep(0.3)
    sampler.stop()
    assert sampler.errors == 1 and "Input/output error" in sampler.last_error
    assert sampler.samples >= 2 and len(read_samples(tmp_path / "s.jsonl")) == sampler.samples


def test_stop_without_start(tmp_path):
    Sampler(tmp_path / "s.jsonl").stop()


def test_summarize_synthetic_lines():
    lines = [
        json.dumps(
            {
                "t_ns": 1_000_000_000,
                "temps_c": {"cpu": 40.0},
                "freq_khz": {"0": 600000, "1": 1500000},
                "loadavg": [0.5, 0.1, 0.0],
            }
        ),
        json.dumps(
            {
                "t_ns": 2_000_000_000,
                "temps_c": {"cpu": 50.0, "gpu": 30.0},
                "freq_khz": {"0": 1200000},
                "loadavg": [2.0, 0.2, 0.1],
            }
        ),
        {"t_ns": 3_000_000_000, "temps_c": {"cpu": 45.0}, "freq_khz": {}, "loadavg": None},
        '{"t_ns": 4000000000, "temps_c": {"cpu": 9',  # truncated by a kill
    ]
    s = summarize(lines)
    assert s["samples"] == 3 and s["span_ns"] == 2_000_000_000
    assert s["temps_c"] == {
        "cpu": {"min": 40.0, "max": 50.0, "mean": 45.0},
        "gpu": {"min": 30.0, "max": 30.0, "mean": 30.0},
    }
    assert s["temp_max_c"] == 50.0
    assert s["freq_khz"] == {"0": {"min": 600000, "max": 1200000}, "1": {"min": 1500000, "max": 1500000}}
    assert s["freq_khz_range"] == [600000, 1500000]
    assert s["loadavg1_max"] == 2.0
    empty = summarize([])
    assert empty["samples"] == 0 and empty["freq_khz_range"] is None and empty["temp_max_c"] is None


def test_parse_stat():
    fields = ["S"] + ["0"] * 50
    fields[6] = str(0x00200000)  # flags: kernel thread
    fields[37], fields[38] = "10", "1"
    parsed = parse_stat("42 (odd) name (x) " + " ".join(fields))
    assert parsed == {"comm": "odd) name (x", "flags": 0x00200000, "rt_priority": 10, "policy": 1}
    assert parse_stat("42 no parens") is None
    assert parse_stat("42 (short) S 1 2") is None


def test_rt_tasks_is_fast_and_well_formed():
    t0 = time.monotonic()
    tasks = rt_tasks(exclude=(os.getpid(),))
    assert time.monotonic() - t0 < 0.5
    for t in tasks:
        assert t["policy"] in ("fifo", "rr", "deadline") and t["pid"] != os.getpid()
        assert set(t) == {"name", "pid", "tid", "policy", "priority", "affinity", "kernel"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a SCHED_FIFO task")
@pytest.mark.skipif(shutil.which("chrt") is None, reason="chrt (util-linux) missing")
def test_rt_tasks_finds_a_fifo_sleeper():
    proc = subprocess.Popen(["chrt", "-f", "10", "sleep", "5"])
    try:
        mine = []
        deadline = time.monotonic() + 3
        while not mine and time.monotonic() < deadline:  # chrt sets the policy, then execs sleep
            mine = [t for t in rt_tasks() if t["pid"] == proc.pid and t["name"] == "sleep"]
            time.sleep(0.02)
        assert len(mine) == 1
        t = mine[0]
        assert (t["policy"], t["priority"], t["tid"], t["kernel"]) == ("fifo", 10, proc.pid, False)
        assert t["affinity"] == Path(f"/proc/{proc.pid}/status").read_text().split("Cpus_allowed_list:")[1].split()[0]
        assert not [t for t in rt_tasks(exclude=[proc.pid]) if t["pid"] == proc.pid]
    finally:
        proc.kill()
        proc.wait()

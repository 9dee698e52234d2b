"""Real `rtqual-probe switch` runs (root): ping-pong context-switch latency.

Invariants only, never absolute latencies: one sample per switch in the slot of the
woken side's CPU, histogram and summary agree, the round-trip mean is reported, and
no side-B process outlives the probe.
"""

import os
import subprocess

import pytest

from conftest import interrupt, needs_probe, needs_root, one, probe_records, run_case, start_probe, wait_measured

pytestmark = [needs_probe, needs_root]


def run(*args, timeout=60):
    return probe_records("switch", *args, timeout=timeout)


CPUS = sorted(os.sched_getaffinity(0))
IPCS = ("pipe", "futex", "sem", "mq")
MODES = ("thread", "process")
PLACEMENTS = [pytest.param(str(CPUS[-1]), id="same-cpu")]
if len(CPUS) > 1:
    PLACEMENTS.append(pytest.param(f"{CPUS[0]},{CPUS[-1]}", id="cross-cpu"))
LOOPS, WARMUP = 500, 50


def probe() -> str:
    from rtqual.measure.run import native

    return str(native.probe_path())


def check_slot(s, hist):
    assert s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["p999_ns"] <= s["p9999_ns"] <= s["max_ns"]
    assert s["min_ns"] <= s["mean_ns"] <= s["max_ns"]
    assert s["min_ns"] > 0
    assert s["out_of_range"] == 0 and s["overruns"] == 0
    assert hist["count"] == s["count"] == sum(c for _, c in hist["counts"])


@pytest.mark.parametrize("cpus", PLACEMENTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ipc", IPCS)
def test_ping_pong_invariants(ipc, mode, cpus):
    out, recs = run(
        "--ipc", ipc, "--mode", mode, "--cpus", cpus, "--loops", LOOPS, "--warmup", WARMUP, "--progress-ms", 60000
    )
    assert out.returncode == 0, out.stderr
    assert one(recs, "end")["status"] == 0
    header, summ = one(recs, "header"), one(recs, "summary")
    p = header["params"]
    assert (p["ipc"], p["mode"]) == (ipc, mode)
    want = sorted({int(c) for c in cpus.split(",")})
    assert sorted(p["cpus"]) == want
    assert header["rt"]["policy"] == "fifo" and header["rt"]["mlockall"]
    hists = {h["cpu"]: h for h in recs if h["type"] == "hist"}
    slots = {s["cpu"]: s for s in summ["cpus"]}
    assert sorted(slots) == sorted(hists) == want  # one slot per woken side's CPU
    if len(want) == 1:
        # both directions wake a side on the same CPU: two switches per round trip, one slot
        assert slots[want[0]]["count"] == 2 * LOOPS
        assert slots[want[0]]["woken"] == "a+b"
    else:
        # slot = CPU of the woken side: each direction has its own slot, one sample per round trip
        assert slots[p["cpu_a"]]["woken"] == "a" and slots[p["cpu_b"]]["woken"] == "b"
        for s in slots.values():
            assert s["count"] == LOOPS
    for c, s in slots.items():
        check_slot(s, hists[c])
    if ipc == "futex":
        assert all(0 <= s["waits_without_sleep"] <= s["count"] for s in slots.values())
    # same CPU at an RT priority: side A rests (outside the timed windows) against RT throttling
    assert (p["rest_every_ns"] > 0) == (len(want) == 1)
    sw = summ["switch"]
    assert sw["round_trips"] == LOOPS
    assert sw["rested_ns"] >= 0 and (sw["rests"] == 0) == (sw["rested_ns"] == 0)
    assert sw["round_trip_mean_ns"] > 0
    # a round trip holds both one-way switches (plus the recording in between)
    one_way = sum(s["mean_ns"] * s["count"] for s in slots.values()) / LOOPS
    assert sw["round_trip_mean_ns"] >= 0.99 * one_way


def test_duration_mode_and_raw(tmp_path):
    raw = tmp_path / "sw.raw"
    out, recs = run("--cpus", CPUS[-1], "--ipc", "futex", "--duration", "300ms", "--raw", raw)
    assert out.returncode == 0, out.stderr
    summ = one(recs, "summary")
    s = summ["cpus"][0]
    assert s["count"] == 2 * summ["switch"]["round_trips"] > 0
    assert summ["raw"]["samples"] == s["count"]
    assert raw.stat().st_size == 64 + 16 * s["count"]


def _children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


@pytest.mark.parametrize("mode", MODES)
def test_sigint_is_inconclusive_and_leaves_no_process(mode):
    args = ["--mode", mode, "--ipc", "sem", "--cpus", CPUS[-1], "--duration", "60s", "--progress-ms", "100"]
    proc, _ = start_probe("switch", *args)
    wait_measured(proc)
    kids = _children_of(proc.pid)
    assert len(kids) == (1 if mode == "process" else 0)
    recs = interrupt(proc)
    assert one(recs, "end")["reason"] == "interrupted"
    assert one(recs, "summary")["cpus"][0]["count"] > 0
    for k in kids:
        assert not os.path.exists(f"/proc/{k}") or open(f"/proc/{k}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize(
    "args, text",
    [
        (["--ipc", "shm"], "--ipc"),
        (["--loops", "5", "--duration", "1s"], "exclude"),
        (["--priority", "0"], "--priority"),
    ],
)
def test_bad_options_one_line_exit_1(args, text):
    out = subprocess.run([probe(), "switch", "--check", *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual-probe: error:") and text in lines[0]


def test_more_than_two_cpus_rejected():
    if len(CPUS) < 3:
        out = subprocess.run([probe(), "switch", "--check", "--cpus", "0-2"], capture_output=True, text=True)
    else:
        out = subprocess.run(
            [probe(), "switch", "--check", "--cpus", f"{CPUS[0]},{CPUS[1]},{CPUS[2]}"], capture_output=True, text=True
        )
    assert out.returncode == 1 and "rtqual-probe: error:" in out.stderr


def _pipeline_knows(name: str) -> bool:
    from rtqual.probes.catalog import PROBES

    return name in PROBES


@pytest.mark.skipif(
    not _pipeline_knows("switch"), reason="`rtqual run switch` not wired yet (scripts/update-probe-table)"
)
def test_through_the_pipeline(tmp_path):
    case = run_case(
        tmp_path / "b", "switch", "--cpus", CPUS[-1], "--ipc", "pipe", "--mode", "process", "--duration", "2s"
    )
    s = case["stats"]
    assert s["count"] > 0 and s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"]

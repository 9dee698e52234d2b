"""rtqual monitor --capture for real (root, tracefs, a real IOC serving the PVs, the store, /metrics): stalls of a
known name (the self-test's injector, comm rtqual-stall) injected on the monitored CPU are each captured with the
injector named as the cause, in the store, in /metrics and in the PVs, and the monitor goes on watching."""

import json
import os
import sys
import time
from pathlib import Path

import pytest
from helpers import CaClient, needs_pyepics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conftest import needs_probe, needs_root  # noqa: E402
from monitoring import MonitorProc, free_port, http_get  # noqa: E402
from rtqual.measure.epics.env import epics_env  # noqa: E402
from rtqual.publish.store import open_store  # noqa: E402
from tracing import inject_stalls  # noqa: E402

STALLS = 4
HAS_TRACEFS = "tracefs" in Path("/proc/filesystems").read_text()
pytestmark = [
    needs_root,
    needs_probe,
    needs_pyepics,
    pytest.mark.skipif(not HAS_TRACEFS, reason="no tracefs in this kernel (/proc/filesystems): nothing to capture"),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs (the injector stalls one)"),
]


def _text(chars) -> str:
    """A CHAR waveform as caget gives it (a list of byte values) as text."""
    return bytes(c & 0xFF for c in chars).split(b"\0")[0].decode()


def test_each_injected_stall_is_captured_with_the_injector_named(tmp_path):
    cpu = max(os.sched_getaffinity(0))
    port, store = free_port(), tmp_path / "h.sqlite"
    env = epics_env()
    mon = MonitorProc(
        ["monitor", "--cpus", str(cpu), "--interval", "1ms", "--threshold", "1ms", "--capture", "5ms",
         "--window", "1s", "--json", "--listen", f"127.0.0.1:{port}", "--store", str(store), "--pvs", "rtqcap"],
        env=env,
    )  # fmt: skip
    ca = CaClient(env)
    try:
        mon.wait_windows(1)
        stalls = inject_stalls(cpu, STALLS, stall="12ms", gap="250ms")
        deadline = time.monotonic() + 15

        def captures() -> list[dict]:
            return [x for x in mon.windows() if x.get("type") == "capture"]

        def caught(st: dict, found: list[dict]) -> list[dict]:
            return [c for c in found if c["time_ns"] - c["latency_ns"] < st["end_ns"] and c["time_ns"] > st["start_ns"]]

        while not all(caught(st, captures()) for st in stalls):
            assert time.monotonic() < deadline, (stalls, captures())
            time.sleep(0.1)
        time.sleep(0.3)  # the PV server and the store's writer take their lines

        def outputs() -> tuple | None:
            """The PVs, /metrics and the printed captures, once they count the same captures (another spike over
            --capture on a shared VM may come between two of the reads)."""
            count, cause = ca.get_many(["rtqcap:SPIKES", "rtqcap:SPIKE_CAUSE"])
            metrics = http_get(f"http://127.0.0.1:{port}/metrics")
            printed = captures()
            total = sum(
                float(x.split()[-1]) for x in metrics.splitlines() if x.startswith("rtqual_spike_captures_total{")
            )
            return (count, cause, metrics, printed) if int(count) == total == len(printed) else None

        while not (got := outputs()):
            assert time.monotonic() < deadline, "the PVs, /metrics and the printed captures never agreed"
            time.sleep(0.1)
        count, cause, metrics, printed = got
        windows_before = len([x for x in mon.windows() if "samples" in x])
        mon.wait_windows(windows_before + len(printed) + 1)  # it goes on watching
    finally:
        ca.close()
        code, err = mon.stop()
    assert code == 0, err
    stored_all = captures()  # the store keeps every capture, those after the reads above too
    for st in stalls:  # each stall: captured, its cause the injector (a task at SCHED_FIFO 90 on the stalled CPU);
        # on a shared VM another spike (the hypervisor's, unaccounted) may overlap the stall's time too
        causes = [(c["cause"]["kind"], c["cause"]["comm"], c["cause"]["cpu"], c["cause"]["priority"],
                   c["cause"]["policy"]) for c in caught(st, printed)]  # fmt: skip
        assert any(x[:4] == ("task", "rtqual-stall", cpu, 90) and x[4] in ("fifo", "rt") for x in causes), printed
    # the PVs and /metrics counted the printed captures (outputs() above); the last capture's cause in words
    last = printed[int(count) - 1]
    assert _text(cause).startswith(f"{last['cause']['comm']} pid {last['cause']['pid']}")
    # /metrics: the injector's time, the last cause
    assert f'rtqual_spike_culprit_seconds_total{{cpu="{cpu}",kind="task",name="rtqual-stall",probe="timer"}}' in metrics
    assert f'comm="{last["cause"]["comm"]}"' in next(x for x in metrics.splitlines() if "spike_last_cause_info{" in x)
    # the store: every capture, the stalls' named, with their evidence
    with open_store(str(store), write=False) as s:
        rows = s.spikes()
    assert len(rows) == len(stored_all)
    stored = [r for r in rows if r["comm"] == "rtqual-stall"]
    assert len(stored) >= STALLS and all(r["cpu"] == r["cause_cpu"] == cpu for r in stored)
    ev = json.loads(stored[0]["evidence"])
    assert ev["culprits"][0]["name"] == "rtqual-stall" and any("rtqual-stall" in line for line in ev["text"])

"""rtqual monitor --pvs: the windows as PVs of a real IOC, read back and alarm limits changed with a CA client."""

import sys
import time
from pathlib import Path

from helpers import CaClient, gone, needs_pyepics, processes_naming

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from monitoring import MonitorProc  # noqa: E402
from rtqual.measure.epics.env import epics_env  # noqa: E402

# a progress record every 2 ms: some 2,000 samples per 1 s window, enough to carry its p99 (1,000 needed)
SCRIPT = "repeat 100000\nsample 0 20000\nsample 0 40000\nsample 1 30000\nsample 1 500000\nsleep 2\nprogress\nend\n"


@needs_pyepics
def test_window_statistics_as_pvs_with_settable_alarm_limits(tmp_path):
    script = tmp_path / "fake.txt"
    script.write_text(SCRIPT)
    env = epics_env()  # loopback and free CA/PVA ports, for the monitor's IOC and our client alike
    mon = MonitorProc(
        ["monitor", "--probe", "fake", "--script", str(script), "--window", "1s", "--json"]
        + ["--listen", "off", "--store", "off", "--pvs", "rtqmon", "--require", "max <= 1ms"],
        env=env,
    )
    ca = CaClient(env)
    try:
        mon.wait_windows(4)
        time.sleep(0.5)
        lat_max, cpu0_max, cpu1_max, p99, samples, beat = ca.get_many(
            ["rtqmon:LAT_MAX", "rtqmon:CPU0:LAT_MAX", "rtqmon:CPU1:LAT_MAX", "rtqmon:LAT_P99", "rtqmon:SAMPLES"]
            + ["rtqmon:HEARTBEAT"]
        )
        assert lat_max == 500.0 and cpu0_max == 40.0 and cpu1_max == 500.0  # µs
        assert p99 == 500.0 and samples > 0 and beat >= 2
        assert ca.get("rtqmon:LAT_MAX.HIHI") == 1000.0  # the max requirement's limit (1 ms)
        assert ca.get("rtqmon:LAT_MAX.SEVR") == 1  # MINOR: at HIGH (half the limit, 500 µs)
        ca.put("rtqmon:LAT_MAX.HIHI", 400)  # at run time
        assert ca.get("rtqmon:LAT_MAX.HIHI") == 400.0
        beat = ca.get("rtqmon:HEARTBEAT")
        deadline = time.monotonic() + 10
        while ca.get("rtqmon:HEARTBEAT") == beat:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert ca.get("rtqmon:LAT_MAX.SEVR") == 2  # MAJOR with the new limit, from the next window on
    finally:
        ca.close()
        code, err = mon.stop()
    assert code == 0, err


def test_the_ioc_response_is_monitored_and_its_ioc_stopped(tmp_path):
    env = epics_env()
    mon = MonitorProc(
        ["monitor", "--probe", "ioc", "--window", "1s", "--json", "--listen", "off", "--store", "off"], env=env
    )
    try:
        wins = mon.wait_windows(2, timeout=60)
        children = Path(f"/proc/{mon.proc.pid}/task/{mon.proc.pid}/children").read_text().split()
        iocs = [int(p) for p in children if int(p) in processes_naming("rtqual.measure.epics.iocmain")]
    finally:
        code, err = mon.stop()
    assert code == 0, err
    assert all(w["run_as"] == "ioc" and w["probe"] == "iocresp" for w in wins)
    assert sum(w["samples"] for w in wins) > 0
    assert len(iocs) == 1 and gone(iocs[0])  # the monitor's IOC ends with it

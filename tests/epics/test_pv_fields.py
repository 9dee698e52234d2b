"""The PVs' fields over Channel Access from a real IOC (pyepics in its own process, loopback): EGU, PREC, DESC
and alarm limits from the requirements (the monitor's --require/--profile, an ioc case's max), the alarm severity
a value beyond them raises, and the heartbeat and uptime PVs counting."""

import sys
import time
from pathlib import Path

from helpers import CaClient, case_result, needs_pyepics, rtqual, run_args

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from monitoring import MonitorProc  # noqa: E402
from rtqual.measure.epics.env import epics_env  # noqa: E402

NO_ALARM, MINOR, MAJOR = 0, 1, 2
# a progress record every 2 ms, 1 s windows: CPU0's maximum 40 us, CPU1's (and all CPUs') 500 us
SCRIPT = "repeat 100000\nsample 0 20000\nsample 0 40000\nsample 1 30000\nsample 1 500000\nsleep 2\nprogress\nend\n"


def grows(ca: CaClient, pv: str, wait_s: float = 2.5) -> tuple[float, float]:
    """The PV's value now and after wait_s seconds."""
    first = ca.get(pv)
    time.sleep(wait_s)
    return first, ca.get(pv)


@needs_pyepics
def test_monitor_pvs_carry_units_and_the_requirements_alarm_limits(tmp_path):
    script = tmp_path / "fake.txt"
    script.write_text(SCRIPT)
    env = epics_env()
    started = time.time()
    mon = MonitorProc(
        ["monitor", "--probe", "fake", "--script", str(script), "--window", "1s", "--json"]
        + ["--listen", "off", "--store", "off", "--pvs", "rtqfld"]
        + ["--profile", "10khz-loop", "--require", "max <= 60us", "--require", "p99 <= 2ms"],
        env=env,
    )
    ca = CaClient(env)
    try:
        mon.wait_windows(4)
        time.sleep(0.5)
        assert ca.get("rtqfld:LAT_MAX") == 500.0 and ca.get("rtqfld:CPU0:LAT_MAX") == 40.0
        assert (ca.get("rtqfld:LAT_MAX.EGU"), ca.get("rtqfld:LAT_MAX.PREC")) == ("us", 1)
        assert ca.get("rtqfld:LAT_MAX.DESC") == "maximum latency, last window, all CPUs"
        assert ca.get("rtqfld:CPU0:LAT_MAX.DESC") == "maximum latency, last window, CPU 0"
        for pv in ("rtqfld:LAT_MAX", "rtqfld:CPU0:LAT_MAX", "rtqfld:CPU1:LAT_MAX"):  # the tightest max: the profile's
            limits = [ca.get(f"{pv}.{f}") for f in ("HIHI", "HHSV", "HIGH", "HSV")]
            assert limits == [50.0, MAJOR, 25.0, MINOR], pv
        assert [ca.get(f"rtqfld:LAT_P99.{f}") for f in ("HIHI", "HIGH")] == [2000.0, 1000.0]
        assert ca.get("rtqfld:LAT_P9999.HIHI") == 20.0  # the profile's p99.99
        assert [ca.get(f"rtqfld:LAT_P50.{f}") for f in ("HHSV", "HSV")] == [NO_ALARM, NO_ALARM]  # no p50 limit
        assert ca.get("rtqfld:LAT_MAX.SEVR") == MAJOR  # 500 us over the 50 us limit
        assert ca.get("rtqfld:CPU0:LAT_MAX.SEVR") == MINOR  # 40 us: past half the limit, within it
        assert ca.get("rtqfld:LAT_P99.SEVR") == NO_ALARM and ca.get("rtqfld:LAT_P50.SEVR") == NO_ALARM
        assert (ca.get("rtqfld:SAMPLES.EGU"), ca.get("rtqfld:SAMPLES.PREC")) == ("samples", 0)
        assert (ca.get("rtqfld:UPTIME.EGU"), ca.get("rtqfld:HEARTBEAT.EGU")) == ("s", "windows")
        beat = grows(ca, "rtqfld:HEARTBEAT")
        uptime = grows(ca, "rtqfld:UPTIME")
        assert beat[1] > beat[0] >= 2  # windows published (4 lines: 2 windows of 2 CPUs)
        assert 0 < uptime[0] < uptime[1] <= time.time() - started + 0.5  # seconds since the monitor started
    finally:
        ca.close()
        code, err = mon.stop()
    assert code == 0, err


@needs_pyepics
def test_ioc_total_latency_alarms_at_an_ioc_cases_max_and_its_ioc_counts(tmp_path):
    env = epics_env()
    mon = MonitorProc(
        ["monitor", "--probe", "ioc", "--ioc-prefix", "rtqfldioc:", "--window", "1s", "--json"]
        + ["--listen", "off", "--store", "off", "--require", "max <= 1ns"],  # every response takes longer
        env=env,
    )
    ca = CaClient(env)
    try:
        mon.wait_windows(2, timeout=60)
        total = "rtqfldioc:lat:total"
        assert [ca.get(f"{total}.{f}") for f in ("HIHI", "HHSV", "HIGH", "HSV")] == [0.001, MAJOR, 0.0005, MINOR]
        assert (ca.get(f"{total}.EGU"), ca.get(f"{total}.PREC")) == ("us", 1)
        assert ca.get(f"{total}.DESC") == "total latency of the last event"
        assert ca.get(f"{total}.SEVR") == MAJOR
        assert ca.get("rtqfldioc:lat:wake.HHSV") == NO_ALARM  # a stage, not the case's sample: no limits
        beat = grows(ca, "rtqfldioc:HEARTBEAT")
        uptime = grows(ca, "rtqfldioc:UPTIME")
        assert beat[1] >= beat[0] + 1  # 1 Hz
        assert 0 < uptime[0] < uptime[1]
    finally:
        ca.close()
        code, err = mon.stop()
    assert code == 0, err


def test_run_ioc_database_has_the_cases_max_as_alarm_limits(tmp_path):
    out = tmp_path / "b"
    p = rtqual(*run_args("ioc", out, "--duration", "1s", "--require", "max <= 1ms", "--require", "p99 <= 100us"))
    assert p.returncode in (0, 2, 4), p.stderr  # judged: pass, fail, or inconclusive on this VM
    db = (out / "cases" / "001-ioc" / "ioc.db").read_text()
    total = db[db.index('record(ai, "$(P)lat:total")') :].split("\n}", 1)[0]
    assert 'field(HIHI, "1000")' in total and 'field(HIGH, "500")' in total
    assert case_result(out)["ioc"]["spec"]["require"] == ["max <= 1ms", "p99 <= 100us"]

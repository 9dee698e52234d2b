"""The operator view inside the IOC (latency statistics as records, read over CA), the Phoebus
display, IOC CPU affinity / SCHED_FIFO, and GPIO lines refused cleanly without hardware."""

import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest

from rtqual.errors import RtqError
from rtqual.measure.epics.ioc import OPERATOR_PVS, STAGES, Ioc, make_db
from rtqual.measure.epics.service import ioc_threads

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (SCHED_FIFO)")

from helpers import CaClient, needs_pyepics, rtqual_argv, run_args  # noqa: E402


def scalar(v):
    return v[0] if isinstance(v, list) else v


@pytest.fixture(scope="module")
def ca_ioc():
    ioc = Ioc(preset="aps")
    ca = None
    try:
        ioc.start()
        ca = CaClient(ioc.env)
        yield ioc, ca
    finally:
        if ca:
            ca.close()
        ioc.stop()


def stimuli(ioc, n):
    """n stimuli one after the other; their responses."""
    got = []
    for _ in range(n):
        ioc.trigger()
        got += ioc.responses(1, timeout=5)
    assert len(got) == n, ioc.log_tail()
    return got


def wait_count(ioc, ca, n, timeout=10.0):
    """Publishing is asynchronous (low priority): wait until stat:count reaches n."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = ca.get(ioc.pv("stat:count"))
        if count == n:
            return
        time.sleep(0.05)
    pytest.fail(f"stat:count {count} != {n}")


@needs_pyepics
def test_operator_statistics_over_ca(ca_ioc):
    ioc, ca = ca_ioc
    k = 30
    stimuli(ioc, k)
    wait_count(ioc, ca, k)

    n = 20
    ca.put(ioc.pv("stat:N"), n)  # resets every compress record
    got = stimuli(ioc, n)
    wait_count(ioc, ca, k + n)
    totals_us = sorted((r[3] - r[0]) / 1e3 for r in got)
    for stage in STAGES:
        lo, med, hi = (scalar(ca.get(ioc.pv(f"lat:{stage}:{s}"))) for s in ("min", "median", "max"))
        assert 0 < lo <= med <= hi, (stage, lo, med, hi)
    lo, med, hi = (scalar(ca.get(ioc.pv(f"lat:total:{s}"))) for s in ("min", "median", "max"))
    # the same numbers as the responses: compress takes the upper median of an even count
    assert lo == pytest.approx(totals_us[0], abs=1e-3)
    assert med == pytest.approx(totals_us[n // 2], abs=1e-3)
    assert hi == pytest.approx(totals_us[-1], abs=1e-3)
    history = ca.get(ioc.pv("lat:total:history"))
    assert history == pytest.approx([(r[3] - r[0]) / 1e3 for r in got], abs=1e-3)  # oldest first
    assert sum(ca.get(ioc.pv("lat:total:hist"))) == n  # cleared by stat:N, clipped not dropped

    ca.put(ioc.pv("stat:thr"), 0)  # a threshold write restarts the statistics too
    stimuli(ioc, n)
    wait_count(ioc, ca, k + 2 * n)
    for stage in STAGES:
        assert scalar(ca.get(ioc.pv(f"lat:{stage}:over"))) == 100
    ca.put(ioc.pv("stat:thr"), 1e8)
    stimuli(ioc, n)
    wait_count(ioc, ca, k + 3 * n)
    for stage in STAGES:
        assert scalar(ca.get(ioc.pv(f"lat:{stage}:over"))) == 0


def record_names(db: str) -> set[str]:
    return set(re.findall(r'record\(\w+, "([^"]+)"\)', db))


def test_operator_pvs_exist_in_every_preset():
    for preset in ("kek", "aps"):
        names = record_names(make_db(preset))
        assert {"$(P)" + pv for pv in OPERATOR_PVS} <= names
    assert not record_names(make_db("aps", operator=False)) & {"$(P)" + pv for pv in OPERATOR_PVS}


def test_display_ships_and_names_only_existing_pvs():
    bob = resources.files("rtqual") / "epics" / "rtqual.bob"
    assert bob.is_file(), "rtqual.bob is not in the installed package"
    root = ET.fromstring(bob.read_text())
    assert root.tag == "display" and root.get("version") == "2.0.0"
    pvs = [e.text.strip() for e in root.iter() if e.tag in ("pv_name", "x_pv", "y_pv") and e.text and e.text.strip()]
    names = record_names(make_db("kek"))
    assert len(pvs) >= 4 * 4 + 2 + 2
    for pv in pvs:
        assert pv.startswith("$(P)") and pv.split(".")[0] in names, pv
    shown = {pv.split(".")[0][4:] for pv in pvs}
    for stage in STAGES:
        assert {f"lat:{stage}:{s}" for s in ("min", "median", "max", "over")} <= shown
    assert {"stat:N", "stat:thr", "lat:total:history", "lat:total:hist"} <= shown


def _task_status(pid: int) -> dict[int, str]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out[int(task.name)] = line.split(":", 1)[1].strip()
    return out


@needs_root
def test_cpus_rtprio_and_reader_cpu():
    cpu = max(os.sched_getaffinity(0))
    with Ioc(preset="kek", cpus=str(cpu), rtprio=7, reader_cpu=cpu) as ioc:
        pid = ioc.proc.pid
        assert set(_task_status(pid).values()) == {str(cpu)}  # every thread inherited the CPU set
        threads = {t["tid"]: t for t in ioc_threads(pid)}
        assert threads[pid]["cls"] == "FF" and threads[pid]["rtprio"] == 7  # the main thread
        reader = [t for t in threads.values() if t["comm"] == "rtqIn0"]
        assert reader and reader[0]["cls"] == "FF"
        # EPICS threads choose their own SCHED_FIFO priority (docs/epics.md), not the process's
        assert len({t["rtprio"] for t in threads.values()}) > 2
        assert len(stimuli(ioc, 5)) == 5


def iocmain_argv(tmp_path: Path, *args: str) -> list[str]:
    """The IOC process's own command line (a database and FIFO names that need not exist) with ARGS."""
    ioc = [sys.executable, "-m", "rtqual.measure.epics.iocmain", "--db", str(tmp_path / "x.db")]
    return [*ioc, "--fifo-in", "a", "--fifo-out", "b", *args]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--rtprio", "0"], "1..99"),
        (["--rtprio", "x"], "invalid int"),
        (["--cpus", "9999"], "beyond the kernel's 8192 CPUs"),  # the one bounded CPU-list parser
        (["--cpus", "a-b"], "not a CPU list"),
    ],
)
def test_bad_cpus_or_rtprio_is_one_line(tmp_path, args, words):
    p = subprocess.run(iocmain_argv(tmp_path, *args), capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) missing")
def test_rtprio_not_permitted_is_one_line(tmp_path):
    # root without CAP_SYS_NICE and with RLIMIT_RTPRIO 0, as in a container that drops it (not another user:
    # the checkout, e.g. under /root, need not be readable by one)
    no_nice = ["prlimit", "--rtprio=0:0", "setpriv", "--bounding-set=-sys_nice", "--inh-caps=-all"]
    p = subprocess.run(
        [*no_nice, *iocmain_argv(tmp_path, "--rtprio", "10")],
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "not permitted" in p.stderr, p.stderr


def test_missing_gpio_chip_refuses_to_start():
    ioc = Ioc(preset="kek", gpio_in="/dev/gpiochip99:3")
    try:
        with pytest.raises(RtqError, match=r"/dev/gpiochip99: No such file or directory"):
            ioc.start()
    finally:
        ioc.stop()


@needs_pyepics
def test_run_ioc_operator_pvs_show_running_values_before_stat_n_events(tmp_path):
    """A short `rtqual run ioc` (far fewer than stat:N = 1000 events): a CA client reads min <= median <= max
    over the events so far (lat:total:n of them) while it runs, not empty values."""
    from rtqual.measure.epics.env import epics_env

    env = epics_env()
    prefix = f"rtqop{os.getpid()}:"
    cmd = rtqual_argv(*run_args("ioc", tmp_path / "b", "--duration", "6s", "--rate", "50", "--ioc-prefix", prefix))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ca = None
    try:
        for line in proc.stderr:
            if "serving CA on" in line:
                break
        else:
            pytest.fail("the IOC never said it serves CA")
        ca = CaClient(env)
        deadline = time.monotonic() + 20
        while (scalar(ca.get(prefix + "stat:count")) or 0) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        names = ["stat:count", "lat:total:n", "lat:total:min", "lat:total:median", "lat:total:max", "stat:N"]
        count, n, lo, med, hi, stat_n = (scalar(v) for v in ca.get_many([prefix + x for x in names]))
        assert stat_n == 1000 and 20 <= count < stat_n
        assert 1 <= n <= stat_n and abs(n - count) <= 2, (n, count)  # read together, a few µs apart
        assert 0 < lo <= med <= hi, (lo, med, hi)
        for stage in STAGES:
            assert scalar(ca.get(prefix + f"lat:{stage}:max")) > 0, stage
    finally:
        if ca:
            ca.close()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

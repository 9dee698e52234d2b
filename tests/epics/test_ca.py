"""rtqual-ca against a real EPICS IOC (epicscorelibs) on loopback: the repeater, the APS CA load
(put + monitor clients) and the ca-rtt probe. Invariants only, never absolute latencies."""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from rtqual.errors import RtqError
from rtqual.measure.epics import env as epics_env
from rtqual.measure.epics.ca import RTT_ECHO, RTT_PUT, CaLoad, Repeater, ca_db
from rtqual.measure.epics.ioc import Ioc
from rtqual.measure.run import native
from rtqual.results.stream import read_stream

N = 100
RT_ARGS = [] if os.geteuid() == 0 else ["--policy", "other", "--allow-degraded"]


def ca_processes(env: dict) -> list[int]:
    """Running rtqual-ca processes started with this env's CA server port (so: ours)."""
    mark = f"EPICS_CA_SERVER_PORT={env['EPICS_CA_SERVER_PORT']}".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() == "rtqual-ca" and mark in (d / "environ").read_bytes().split(b"\0"):
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


@pytest.fixture(scope="module")
def ioc():
    ioc = Ioc(preset="aps", extra_db=ca_db(N))
    try:
        ioc.start()
        with Repeater(ioc.env) as rep:
            ioc.repeater_pid = rep.proc.pid
            yield ioc
    finally:
        ioc.stop()


@pytest.fixture(autouse=True)
def no_leftovers(request):
    yield
    if "ioc" in request.fixturenames:
        ioc = request.getfixturevalue("ioc")
        left = [pid for pid in ca_processes(ioc.env) if pid != ioc.repeater_pid]
        assert left == [], "rtqual-ca left running after the test"


def run_ca(env, *args, timeout=60):
    out = subprocess.run(
        [str(native.ca_path()), *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout
    )
    return out, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_ca_db_records():
    db = ca_db(3, scan="1 second")
    assert db.count("record(") == 5 and db.count('SCAN, "1 second"') == 3
    assert '"$(P)load:0002"' in db and '"$(P)rtt:put"' in db and '"$(P)rtt:echo"' in db
    with pytest.raises(RtqError):
        ca_db(3, scan='x"')


def udp_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def test_repeater_starts_and_stops():
    env = epics_env.epics_env()  # ports of its own
    port = int(env["EPICS_CA_REPEATER_PORT"])
    rep = Repeater(env)
    try:
        rep.start()
        assert rep.ready["role"] == "repeater" and rep.ready["port"] == port
        assert udp_busy(port)
    finally:
        rc = rep.stop()
    assert rc == 0, rep.stderr
    assert ca_processes(env) == [] and not udp_busy(port)


def test_ca_load_put_and_monitor(ioc):
    load = CaLoad(ioc.prefix, N, put_rate_hz=500, env=ioc.env)
    with load:
        assert load.put.ready["records"] == N and load.monitor.ready["role"] == "monitor"
        time.sleep(2)
    r = load.result()
    put, mon = r["put"], r["monitor"]
    assert r["records"] == N and put["role"] == "put" and put["requested_rate_hz"] == 500
    assert put["puts"] > 0 and put["errors"] == 0
    assert 0.3 * 500 < put["rate_hz"] <= 1.05 * 500, put  # paced on deadlines: never above the request
    assert mon["connected"] == N and mon["events"] > 0 and mon["rate_hz"] > 0
    assert load.codes == {"put": 0, "monitor": 0}


def test_ca_load_unknown_prefix_is_one_clear_error(ioc):
    load = CaLoad("rtqnosuch:", 3, put_rate_hz=10, env=ioc.env, timeout=1)
    with pytest.raises(RtqError, match="rtqnosuch:load:0000.*did not connect.*EPICS_CA_ADDR_LIST"):
        load.start()
    assert not load.monitor.alive() and not load.put.alive()


def test_ca_rtt_round_trip_through_the_ioc(ioc):
    out, recs = run_ca(
        ioc.env,
        "ca-rtt",
        "--put",
        ioc.pv(RTT_PUT),
        "--monitor",
        ioc.pv(RTT_ECHO),
        "--loops",
        200,
        "--rate",
        200,
        "--warmup",
        5,
        *RT_ARGS,
    )
    assert out.returncode == 0, out.stderr
    s = read_stream(out.stdout.splitlines(keepends=True))
    assert s.complete and not s.problems and s.end["status"] == 0
    assert s.header["probe"] == "ca-rtt" and s.header["params"]["monitor"] == ioc.pv(RTT_ECHO)
    cpu = s.summary["cpus"][0]
    assert cpu["count"] == 200 and 0 < cpu["min_ns"] <= cpu["p50_ns"] <= cpu["max_ns"]
    puts = s.summary["puts"]
    assert puts["sent"] == puts["answered"] == 205 and puts["warmup"] == 5


def test_ca_rtt_same_pv_for_put_and_monitor(ioc):
    out, recs = run_ca(ioc.env, "ca-rtt", "--put", ioc.pv(RTT_PUT), "--loops", 20, "--rate", 100, *RT_ARGS)
    assert out.returncode == 0, out.stderr
    assert [r for r in recs if r["type"] == "summary"][0]["cpus"][0]["count"] == 20


def test_ca_rtt_unknown_pv_is_one_clear_line(ioc):
    out, recs = run_ca(ioc.env, "ca-rtt", "--put", "rtqnosuch:pv", "--loops", 5, "--timeout", "1s", *RT_ARGS)
    assert out.returncode == 1 and recs == []
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("rtqual-ca: error: PV 'rtqnosuch:pv' did not connect")
    assert "EPICS_CA_ADDR_LIST=127.0.0.1" in lines[0]


def test_ca_rtt_check_goes_to_rtqual_ca():
    native.check("ca-rtt", ["--put", "any:pv", *RT_ARGS])  # --check does not connect
    with pytest.raises(RtqError, match="--put PV is required"):
        native.check("ca-rtt", [])
    assert {e["name"] for e in native.probe_list() if e.get("binary") == "rtqual-ca"} == {"ca-rtt"}

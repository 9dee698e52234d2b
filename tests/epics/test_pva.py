"""PV Access: rtqual's IOC serves its records over PVA (QSRV2 from pvxslibs) on loopback only, and
`rtqual run pva-rtt` measures put -> monitor through it. Invariants only, never absolute latencies."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from helpers import gone, processes_naming, results, rtqual, run_args, run_unknown_pv

from rtqual.errors import RtqError
from rtqual.measure.epics.ca import RTT_ECHO, RTT_PUT, ca_db
from rtqual.measure.epics.ioc import Ioc
from rtqual.measure.run import native


def _pva_missing() -> str | None:
    if importlib.util.find_spec("pvxslibs") is None:
        return "pvxslibs is not importable (pip install .)"
    try:
        native.pva_path()
    except RtqError as e:
        return str(e)
    return None


pytestmark = pytest.mark.skipif(_pva_missing() is not None, reason=_pva_missing() or "")


def listening_tcp(pid: int) -> list[tuple[str, int]]:
    """(address, port) of the TCP sockets process `pid` listens on (IPv4 and IPv6), from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # state LISTEN
                addr, port = f[1].split(":")
                if table == "tcp":
                    host = ".".join(str(b) for b in reversed(bytes.fromhex(addr)))
                else:
                    host = "::1" if addr == "0" * 24 + "01000000" else addr
                out.append((host, int(port, 16)))
    return out


def test_iocs_pva_server_listens_on_loopback_only():
    with Ioc() as ioc:
        port = ioc.ready["pva_server_port"]
        assert port and port == ioc.env["EPICS_PVA_SERVER_PORT"]
        socks = listening_tcp(ioc.proc.pid)
        assert ("127.0.0.1", int(port)) in socks  # PVA
        assert ("127.0.0.1", int(ioc.env["EPICS_CA_SERVER_PORT"])) in socks  # CA
        assert all(host == "127.0.0.1" for host, _ in socks), socks
    assert gone(ioc.proc.pid)


def test_pva_rtt_every_put_gets_exactly_one_echo_and_leaves_nothing(tmp_path):
    out = tmp_path / "b"
    p = rtqual(*run_args("pva-rtt", out, "--duration", "2s", "--rate", 50, "--records", 10, "--put-rate", 100))
    assert p.returncode == 0, p.stderr
    assert " and PVA on 127.0.0.1:" in p.stderr
    (r,) = results(out)
    puts = r["probe_summary"]["puts"]
    assert r["probe"] == "pva-rtt" and r["stats"]["count"] == 100 and r["stats"]["min_ns"] > 0
    assert puts["unanswered"] == 0 and puts["sent"] == puts["answered"] == 100 + puts["warmup"]
    assert r["params"]["put"].endswith("rtt:put") and r["params"]["monitor"].endswith("rtt:echo")
    assert r["ioc"]["ca_load"]["put"]["puts"] > 0  # the IOC's CA load runs beside it
    assert processes_naming(r["ioc"]["prefix"]) == []
    assert processes_naming("rtqual-pva\0pva-rtt") == []


def test_pva_rtt_unknown_pv_is_one_clear_line(tmp_path):
    p = run_unknown_pv("pva-rtt", tmp_path / "b")
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    (r,) = results(tmp_path / "b")
    assert r["verdict"] == "error" and "nosuch:pv" in r["reason"] and "\n" not in r["reason"]


def rtt_alone_argv(tool, probe: str, ioc: Ioc, *options: str) -> list[str]:
    """The RTT client TOOL run alone against the IOC's rtt records (SCHED_OTHER, degraded allowed)."""
    pvs = ["--put", ioc.pv(RTT_PUT), "--monitor", ioc.pv(RTT_ECHO)]
    return [str(tool), probe, *pvs, *options, "--policy", "other", "--allow-degraded"]


def test_pva_rtt_alone_against_the_ioc():
    with Ioc(extra_db=ca_db(0)) as ioc:
        args = rtt_alone_argv(native.pva_path(), "pva-rtt", ioc, "--loops", "20", "--rate", "100")
        p = subprocess.run(args, env=ioc.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    header, summary = recs[0], next(r for r in recs if r["type"] == "summary")
    assert header["params"]["pva_server_port"] == ioc.env["EPICS_PVA_SERVER_PORT"]
    assert summary["cpus"][0]["count"] == 20 and summary["puts"]["unanswered"] == 0


def host_addresses() -> list[str]:
    """The host's IPv4 addresses other than loopback."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return [a for a in out if "." in a and not a.startswith("127.")]


@pytest.mark.skipif(not host_addresses(), reason="no non-loopback IPv4 address")
def test_searches_to_the_hosts_own_address_find_nothing():
    """pvxs binds its UDP search socket to 0.0.0.0 (to receive broadcasts), but answers only
    searches that came in on EPICS_PVAS_INTF_ADDR_LIST; CA's server binds 127.0.0.1 itself."""
    with Ioc(extra_db=ca_db(0)) as ioc:
        for tool, probe, var in (
            (native.pva_path(), "pva-rtt", "EPICS_PVA_ADDR_LIST"),
            (native.ca_path(), "ca-rtt", "EPICS_CA_ADDR_LIST"),
        ):
            args = rtt_alone_argv(tool, probe, ioc, "--loops", "2", "--timeout", "1s")
            assert subprocess.run(args, env=ioc.env, capture_output=True, timeout=60).returncode == 0, probe
            p = subprocess.run(
                args, env={**ioc.env, var: host_addresses()[0]}, capture_output=True, text=True, timeout=60
            )
            assert p.returncode == 1 and ioc.prefix in p.stderr, (probe, p.returncode, p.stderr)

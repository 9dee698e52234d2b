"""Loopback means every socket (issue 21 item 5): every socket of `rtqual run ioc` and `rtqual monitor --pvs`
(their whole process trees, sampled while they run) is listed from /proc/PID/fd and /proc/PID/net/{tcp,udp}{,6};
a socket bound to the wildcard (0.0.0.0 or ::) fails the test unless it is one of the documented exceptions
(docs/epics.md "Sockets"), each named by the program part that makes it and why no EPICS setting moves it."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from monitoring import MonitorProc  # noqa: E402
from rtqual.measure.epics.env import epics_env  # noqa: E402

# The wildcard sockets EPICS makes whatever its environment says (docs/epics.md "Sockets"): the process
# (by its command line) and the port's role -> why. A role is "search" (the PVA search port), "repeater" (the
# CA repeater port) or "sender" (an ephemeral UDP port: sends beacons or searches, bound by libca to
# INADDR_ANY:0 or by the kernel on the first sendto of an unbound socket).
EXCEPTIONS = {
    ("iocmain", "search"): "pvxs binds its UDP search port to the wildcard by design and drops searches "
    "not addressed to an EPICS_PVAS_INTF_ADDR_LIST address",
    ("iocmain", "sender"): "rsrv's beacon socket and pvxs's beacon senders are never bound; libca (CA links) "
    "binds INADDR_ANY:0: send-only sockets on ephemeral ports",
    ("pvserver", "sender"): "rsrv's beacon socket and libca's search socket (as in the IOC)",
    ("rtqual-ca", "repeater"): "libca's ca_repeater() binds INADDR_ANY on EPICS_CA_REPEATER_PORT, unconditionally",
    ("rtqual-ca", "sender"): "libca's client UDP socket is bound to INADDR_ANY:0 unconditionally",
}
TABLES = ("tcp", "tcp6", "udp", "udp6")
LISTEN_TCP = "0A"  # /proc/net/tcp state LISTEN


def tree(root: int) -> list[int]:
    """root and all its descendants, now."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            kids.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def address(hexaddr: str) -> tuple[str, int]:
    """/proc/net/{tcp,udp}{,6}'s "0100007F:1F90" as ("127.0.0.1", 8080)."""
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host order
    return str(ipaddress.ip_address(raw)), int(port, 16)


def sockets(pid: int) -> list[tuple[str, str, int, str]]:
    """(protocol, local address, local port, state) of every socket pid holds."""
    try:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        rows = {}
        for table in TABLES:
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                f = line.split()
                rows[f[9]] = (table, *address(f[1]), f[3])
    except OSError:
        return []
    return [rows[i] for i in inodes if i in rows]


def program(pid: int) -> str:
    """A short name for a process of the tree: iocmain, pvserver, rtqual-ca, or its command."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return "?"
    for name in ("iocmain", "pvserver", "rtqual-ca"):
        if any(name in a for a in argv):
            return name
    return " ".join(argv[:3])


def ports_of(pid: int) -> dict[str, int]:
    """The EPICS ports the process was started with (its environment), defaults for the rest."""
    try:
        env = dict(
            kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if "=" in kv
        )
    except OSError:
        env = {}
    defaults = {"EPICS_CA_SERVER_PORT": 5064, "EPICS_CA_REPEATER_PORT": 5065, "EPICS_PVA_BROADCAST_PORT": 5076}
    return {k: int(env.get(k) or v) for k, v in defaults.items()}


def role(proto: str, port: int, ports: dict[str, int]) -> str:
    if proto.startswith("tcp"):
        return "tcp"
    if port == ports["EPICS_PVA_BROADCAST_PORT"]:
        return "search"
    if port == ports["EPICS_CA_REPEATER_PORT"]:
        return "repeater"
    if port == ports["EPICS_CA_SERVER_PORT"]:
        return "ca-server"
    return "sender"


def watch(proc: subprocess.Popen, seconds: float) -> set[tuple]:
    """Every (program, protocol, address, port, role) seen in proc's tree, sampled every 0.2 s."""
    seen: set[tuple] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        for pid in tree(proc.pid):
            name, ports = program(pid), ports_of(pid)
            for proto, addr, port, state in sockets(pid):
                if proto.startswith("tcp") and state != LISTEN_TCP:
                    continue  # connections: their local end follows the listener or the peer
                if port == 0:
                    continue  # made but never bound: reachable from nowhere
                seen.add((name, proto, addr, port, role(proto, port, ports)))
        time.sleep(0.2)
    return seen


def wildcard_offenders(seen: set[tuple]) -> list[str]:
    """The wildcard sockets that are not documented exceptions, as readable lines."""
    bad = []
    for name, proto, addr, port, what in sorted(seen):
        if ipaddress.ip_address(addr).is_unspecified and (name, what) not in EXCEPTIONS:
            bad.append(f"{name} {proto} {addr}:{port} ({what})")
    return bad


def test_run_ioc_binds_loopback_only(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", "ioc", "--duration", "4s", "--baseline", "1s", "--allow-degraded"]
        + ["-q", "--store", "off", "-o", str(tmp_path / "b")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = watch(proc, 90)
    finally:
        proc.kill() if proc.poll() is None else None
        out, err = proc.communicate(timeout=30)
    assert any(s[0] == "iocmain" for s in seen), f"no IOC seen: {err[-500:]}"
    assert any(s[0] == "iocmain" and s[2] == "127.0.0.1" and s[4] == "ca-server" for s in seen), sorted(seen)
    assert wildcard_offenders(seen) == [], sorted(seen)


def test_monitor_pvs_binds_loopback_only(tmp_path):
    script = tmp_path / "fake.txt"
    script.write_text("repeat 100000\nsample 0 20000\nsleep 20\nprogress\nend\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPICS_")}  # rtqual's defaults alone
    env.update({k: v for k, v in epics_env(env).items() if k.endswith("_PORT")})  # free ports, not 5064
    mon = MonitorProc(
        ["monitor", "--probe", "fake", "--script", str(script), "--window", "1s", "--json"]
        + ["--listen", "off", "--store", "off", "--pvs", "rtqsock"],
        env=env,
    )
    try:
        mon.wait_windows(1, timeout=60)
        seen = watch(mon.proc, 3)
    finally:
        code, err = mon.stop()
    assert code == 0, err
    assert any(s[0] == "pvserver" and s[2] == "127.0.0.1" and s[4] == "ca-server" for s in seen), sorted(seen)
    assert wildcard_offenders(seen) == [], sorted(seen)

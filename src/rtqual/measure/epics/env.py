"""EPICS network hygiene, in code: rtqual's IOC and clients use loopback only and ports picked
per run, unless the user's environment already says otherwise (never overridden)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, MutableMapping

# No search, beacon or PVA broadcast leaves the host by default.
LOOPBACK = {
    "EPICS_CA_AUTO_ADDR_LIST": "NO",
    "EPICS_CA_ADDR_LIST": "127.0.0.1",
    "EPICS_CAS_INTF_ADDR_LIST": "127.0.0.1",
    # rsrv's beacons: to the loopback repeater only (else it falls back to EPICS_CA_ADDR_LIST / broadcasts)
    "EPICS_CAS_AUTO_BEACON_ADDR_LIST": "NO",
    "EPICS_CAS_BEACON_ADDR_LIST": "127.0.0.1",
    "EPICS_PVA_AUTO_ADDR_LIST": "NO",
    "EPICS_PVA_ADDR_LIST": "127.0.0.1",
    "EPICS_PVAS_INTF_ADDR_LIST": "127.0.0.1",
    # pvxs's server takes its beacon list from EPICS_PVA_ADDR_LIST only when these are unset; say it
    "EPICS_PVAS_AUTO_BEACON_ADDR_LIST": "NO",
    "EPICS_PVAS_BEACON_ADDR_LIST": "127.0.0.1",
}

# Which protocols each port variable is used with (both must be free on 127.0.0.1).
PORTS = {
    "EPICS_CA_SERVER_PORT": ("tcp", "udp"),
    "EPICS_CA_REPEATER_PORT": ("udp",),
    "EPICS_PVA_SERVER_PORT": ("tcp", "udp"),
    "EPICS_PVA_BROADCAST_PORT": ("udp",),
}


def free_ports(kinds: list[tuple[str, ...]], host: str = "127.0.0.1") -> list[int]:
    """One distinct port per entry, free on `host` for every protocol of that entry. The sockets
    are held until all are chosen, so the ports differ; a race with other programs remains."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for protos in kinds:
            for _ in range(200):
                first = socket.socket(socket.AF_INET, _socktype(protos[0]))
                first.bind((host, 0))
                port = first.getsockname()[1]
                group = [first]
                try:
                    for proto in protos[1:]:
                        s = socket.socket(socket.AF_INET, _socktype(proto))
                        group.append(s)
                        s.bind((host, port))
                except OSError:
                    for s in group:
                        s.close()
                    continue
                held.extend(group)
                ports.append(port)
                break
            else:
                raise OSError(f"no free port for {protos} on {host}")
    finally:
        for s in held:
            s.close()
    return ports


def _socktype(proto: str) -> int:
    return socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM


def epics_env(base: Mapping[str, str] | None = None, *, ports: bool = True) -> dict[str, str]:
    """A copy of `base` (default os.environ) with the loopback defaults and, if `ports`, free
    ports for CA and PVA; variables already set in `base` are kept as they are."""
    env = dict(os.environ if base is None else base)
    for key, value in LOOPBACK.items():
        env.setdefault(key, value)
    if ports:
        missing = [k for k in PORTS if k not in env]
        for key, port in zip(missing, free_ports([PORTS[k] for k in missing])):
            env[key] = str(port)
    return env


def apply(environ: MutableMapping[str, str] | None = None, *, ports: bool = False) -> dict[str, str]:
    """Set the loopback defaults (and ports, if asked) in `environ` (default os.environ) without
    overriding; for in-process clients such as pyepics. Returns what was added."""
    target = os.environ if environ is None else environ
    added = {k: v for k, v in epics_env(target, ports=ports).items() if k not in target}
    target.update(added)
    return added

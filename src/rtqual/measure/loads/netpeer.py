"""The two ends of the network load: `python -m rtqual.measure.loads.netpeer send|recv ...`.

The sender runs inside the namespace the load made (or on this host toward a peer the user
named) and paces its packets by the clock: each tick it sends what is due since the start, so
the average rate holds even though Python sleeps coarsely. The receiver runs on this side and
counts what arrives. Both write their counts to a JSON file (atomically, twice a second and at
the end), so a SIGKILL loses at most half a second of counting. SIGINT/SIGTERM end the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

_TICK_S = 0.001  # pacing tick: at 20k packets/s a tick sends about 20
_SAVE_S = 0.5  # counts written this often
_MAX_BEHIND_S = 0.2  # a sender further behind than this forgets the backlog (counted as missed)
_RCVBUF_BYTES = 4 << 20  # asked for; the kernel caps it at net.core.rmem_max
ETH_P_ARP = 0x0806
SO_BINDTODEVICE = 25


class Counts:
    """What one end did; written as JSON to `path`."""

    def __init__(self, path: str, role: str, mode: str):
        self.path = path
        self.data: dict[str, Any] = {"role": role, "mode": mode, "packets": 0, "bytes": 0, "errors": 0}
        self.data.update(arp=0, missed=0, first_ns=None, last_ns=None, start_ns=time.time_ns(), end_ns=None)
        self.saved = 0.0

    def add(self, nbytes: int, kind: str = "packets") -> None:
        """Count one packet (or ARP frame) of nbytes."""
        now = time.time_ns()
        if self.data["first_ns"] is None:
            self.data["first_ns"] = now
        self.data["last_ns"] = now
        self.data[kind] += 1
        self.data["bytes"] += nbytes

    def save(self, final: bool = False) -> None:
        """Write the counts (write + rename), at most every _SAVE_S unless final."""
        now = time.monotonic()
        if not final and now - self.saved < _SAVE_S:
            return
        self.saved = now
        if final:
            self.data["end_ns"] = time.time_ns()
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)


def _bind_device(sock: socket.socket, dev: str | None) -> None:
    if dev:
        sock.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, dev.encode())


def ca_search(seq: int) -> bytes:
    """A Channel Access version + search request pair (the name searches of a busy accelerator
    network) for a PV that does not exist: 16-byte headers, payload padded to 8 bytes."""
    name = f"RTQUAL:NOISE:{seq % 100000}".encode() + b"\0"
    name += b"\0" * (-len(name) % 8)
    version = struct.pack("!HHHHII", 0, 0, 1, 13, 0, 0)
    search = struct.pack("!HHHHII", 6, len(name), 5, 13, seq & 0xFFFFFFFF, seq & 0xFFFFFFFF)
    return version + search + name


def arp_request(src_mac: bytes, src_ip: str, target_ip: str) -> bytes:
    """A broadcast Ethernet frame asking who has target_ip."""
    eth = b"\xff" * 6 + src_mac + struct.pack("!H", ETH_P_ARP)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + src_mac + socket.inet_aton(src_ip)
    return eth + arp + b"\0" * 6 + socket.inet_aton(target_ip) + b"\0" * 18


def send(a: argparse.Namespace, stop: list[bool]) -> Counts:
    """Paced sender: `rate` packets/s of `size` bytes (udp, broadcast), or a stream (tcp)."""
    c = Counts(a.out, "send", a.mode)
    payload = b"\x55" * a.size
    if a.mode == "tcp":
        sock = socket.create_connection((a.dst, a.port), timeout=5)
        sock.settimeout(0.2)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        _bind_device(sock, a.dev)
        if a.mode == "broadcast":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    arp = None
    if a.arp_rate:
        arp = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
        arp.bind((a.dev, 0))
        mac = arp.getsockname()[4]
        prefix = a.src.rsplit(".", 1)[0]
    t0 = time.monotonic()
    arp_sent = 0
    while not stop[0]:
        now = time.monotonic()
        due = int((now - t0) * a.rate) - c.data["packets"] - c.data["missed"] if a.rate else 64
        if a.rate and due > a.rate * _MAX_BEHIND_S:
            c.data["missed"] += due
            due = 0
        for _ in range(due):
            try:
                if a.mode == "tcp":
                    sock.sendall(payload)
                elif a.mode == "broadcast":
                    msg = ca_search(c.data["packets"])
                    sock.sendto(msg, (a.dst, a.port))
                    payload = msg
                else:
                    sock.sendto(payload, (a.dst, a.port))
                c.add(len(payload))
            except (TimeoutError, BlockingIOError):
                break
            except OSError:
                c.data["errors"] += 1
        if arp is not None:
            for _ in range(int((now - t0) * a.arp_rate) - arp_sent):
                target = f"{prefix}.{100 + arp_sent % 100}"  # nobody has it: the host only listens
                arp.send(arp_request(mac, a.src, target))
                arp_sent += 1
                c.add(60, "arp")
        c.save()
        time.sleep(_TICK_S)
    return c


def recv(a: argparse.Namespace, stop: list[bool]) -> Counts:
    """Count datagrams (udp, broadcast), bytes (tcp) and, with --arp, ARP frames on --dev."""
    c = Counts(a.out, "recv", a.mode)
    socks = []
    if a.mode == "tcp":
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((a.dst, a.port))
        lsock.listen(1)
        socks.append(lsock)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF_BYTES)  # ride out a starved receiver
        _bind_device(sock, a.dev)
        sock.bind(("0.0.0.0" if a.mode == "broadcast" else a.dst, a.port))
        socks.append(sock)
    arp = None
    if a.arp:
        arp = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
        arp.bind((a.dev, 0))
        socks.append(arp)
    ready_line = f"ready {a.mode} {a.dst}:{a.port}\n"
    sys.stdout.write(ready_line)
    sys.stdout.flush()
    while not stop[0]:
        readable, _, _ = select.select(socks, [], [], 0.2)
        for s in readable:
            if a.mode == "tcp" and s is socks[0]:
                conn, _ = s.accept()
                conn.setblocking(False)
                socks.append(conn)
                continue
            try:
                data = s.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            if s is arp:
                c.add(len(data), "arp")
            elif a.mode == "tcp":
                if not data:
                    socks.remove(s)
                    continue
                c.add(len(data))  # tcp counts reads; bytes is what matters
            else:
                c.add(len(data))
        c.save()
    return c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rtqual.measure.loads.netpeer")
    p.add_argument("role", choices=("send", "recv"))
    p.add_argument("--mode", choices=("udp", "tcp", "broadcast"), required=True)
    p.add_argument("--dst", required=True, help="address sent to (recv: bound to)")
    p.add_argument("--src", default="", help="sender's own address (for ARP)")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--rate", type=int, default=0, help="packets/s (0: as fast as it goes, tcp only)")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--arp-rate", type=int, default=0)
    p.add_argument("--arp", action="store_true", help="recv: count ARP frames on --dev too")
    p.add_argument("--dev", default=None)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    stop = [False]

    def ask_stop(signum: int, frame: object) -> None:
        stop[0] = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, ask_stop)
    counts = (send if a.role == "send" else recv)(a, stop)
    counts.save(final=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""network: packets delivered into this host's network stack at a set rate and size.

Without a second machine the load makes its own path: a network namespace and a veth pair with
addresses from the benchmarking range 198.18.0.0/15 that exist only on that pair, a sender
inside the namespace and a receiver on this side, so the kernel pays the softirqs and socket
wake-ups of every packet. Both are `python -m rtqual.measure.loads.netpeer`, die with rtqual (PDEATHSIG,
own sessions). The namespace and veth are journaled in the run's change journal before they are
made, deleted when the load stops and by `rtqual restore` after a SIGKILL. With interface=IF and
peer=ADDR the sender runs here instead and sends toward the user's peer (never used by tests).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rtqual.errors import EXIT_SKIP, RtqError
from rtqual.loadspec import TYPES
from rtqual.measure.conditions.objects import net_objects, remove_net_object
from rtqual.measure.loads.base import Load, python_env
from rtqual.util import has_capability

CAP_NET_ADMIN = 12
SHORT_FRACTION = 0.9  # below 90 % of the rate asked the load did not do its job
_READY_S = 5.0
_NET = "198.18"  # RFC 2544 benchmarking range: never a real peer
_counter = [0]


def irq_counts() -> dict[int, dict[str, int]]:
    """Per CPU: all interrupts (/proc/interrupts summed), NET_RX and NET_TX softirqs (/proc/softirqs)."""
    out: dict[int, dict[str, int]] = {}

    def table(path: str) -> tuple[list[int], list[tuple[str, list[int]]]]:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            return [], []
        cpus = [int(w[3:]) for w in lines[0].split() if w.startswith("CPU")]
        rows = []
        for line in lines[1:]:
            name, _, rest = line.partition(":")
            nums = []
            for w in rest.split()[: len(cpus)]:
                if not w.isdigit():
                    break
                nums.append(int(w))
            rows.append((name.strip(), nums))
        return cpus, rows

    cpus, rows = table("/proc/interrupts")
    for i, cpu in enumerate(cpus):
        out[cpu] = {"interrupts": sum(n[i] for _, n in rows if len(n) > i), "net_rx": 0, "net_tx": 0}
    cpus, rows = table("/proc/softirqs")
    for name, nums in rows:
        if name in ("NET_RX", "NET_TX"):
            for i, cpu in enumerate(cpus[: len(nums)]):
                out.setdefault(cpu, {"interrupts": 0, "net_rx": 0, "net_tx": 0})[name.lower()] = nums[i]
    return out


def _ip(*args: str) -> None:
    """Run `ip ARGS` or raise RtqError with its message."""
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise RtqError(f"ip {' '.join(args)}: {p.stderr.strip() or f'exit {p.returncode}'}")


def _free_subnet(seed: int) -> int:
    """A third octet K such that 198.18.K.0/24 is on no interface of this host."""
    p = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=10)
    used = {w.split(".")[2] for w in p.stdout.split() if w.startswith(_NET + ".")}
    for i in range(256):
        k = (seed + i) % 256
        if str(k) not in used:
            return k
    raise RtqError(f"network: no free /24 left in {_NET}.0.0/16")


class Network(Load):
    """A receiver here and a sender in a namespace of its own (or here, toward the user's peer)."""

    type = "network"
    OPTIONS = TYPES[type].options

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        o = self.options
        self.port: int = o["port"] or (5064 if o["mode"] == "broadcast" else 9000)
        self.instances = 1 if o["interface"] else 2  # [receiver,] sender
        self.netns: str | None = None
        self.host_if = self.ns_if = ""
        self.host_addr = self.ns_addr = ""
        self.subnet = 0
        self._stopping = False
        self._records: list[dict] = []
        self._irq_before: dict[int, dict[str, int]] = {}
        self._irq_after: dict[int, dict[str, int]] = {}
        self._log_dir: Path | None = None

    def find_tool(self) -> str:
        return sys.executable

    def check(self) -> None:
        """Root's network rights and iproute2, asked before any case runs."""
        if not has_capability(CAP_NET_ADMIN):
            raise RtqError(
                f"load '{self.name}': needs CAP_NET_ADMIN to make its network namespace and veth pair "
                "(run as root, or grant cap_net_admin)",
                EXIT_SKIP,
            )
        if not self.options["interface"] and shutil.which("ip") is None:
            raise RtqError(f"load '{self.name}': ip not found: apt-get install iproute2")
        if self.options["interface"] and self.options["interface"] not in net_objects("veth"):
            raise RtqError(f"load '{self.name}': no interface {self.options['interface']!r} on this host")

    def env(self) -> dict:
        return python_env()

    def _file(self, role: str) -> str:
        assert self._log_dir is not None
        return str(self._log_dir / f"load-{self.name}-{role}.json")

    def argv(self, index: int) -> list[str]:
        """Instance 0 the receiver (this side), 1 the sender (inside the namespace); interface mode: the sender only."""
        o = self.options
        common = ["--mode", o["mode"], "--port", str(self.port)]
        if o["interface"]:
            return [self.exe, "-m", "rtqual.measure.loads.netpeer", "send", *common, "--dst", o["peer"],
                    "--rate", str(o["rate"]), "--size", str(o["size"]), "--dev", o["interface"],
                    "--out", self._file("send")]  # fmt: skip
        if index == 0:
            arp = ["--arp"] if o["arp_rate"] else []
            return [self.exe, "-m", "rtqual.measure.loads.netpeer", "recv", *common, "--dst", self.host_addr,
                    "--dev", self.host_if, *arp, "--out", self._file("recv")]  # fmt: skip
        dst = f"{_NET}.{self.subnet}.255" if o["mode"] == "broadcast" else self.host_addr
        assert self.netns is not None
        return ["ip", "netns", "exec", self.netns, self.exe, "-m", "rtqual.measure.loads.netpeer", "send", *common,
                "--dst", dst, "--src", self.ns_addr, "--rate", str(o["rate"]), "--size", str(o["size"]),
                "--arp-rate", str(o["arp_rate"]), "--dev", self.ns_if, "--out", self._file("send")]  # fmt: skip

    def _journal(self, kind: str, name: str) -> None:
        """Record a namespace or veth before it is made (in the run's journal when there is one)."""
        record = {"knob": name, "kind": kind, "condition": f"network load {self.name}", "before": None,
                  "after": "created", "applied": True}  # fmt: skip
        self._records.append(self.journal.note(record) if self.journal is not None else record)

    def _make_path(self) -> None:
        """The namespace, the veth pair (one end moved in), addresses, links up."""
        _counter[0] += 1
        pid = os.getpid()
        self.subnet = _free_subnet(pid * 7 + _counter[0])
        tag = f"{pid}n{self.subnet}"
        self.netns, self.host_if, self.ns_if = f"rtqual-{tag}", f"rq{tag}h", f"rq{tag}p"
        self.host_addr, self.ns_addr = f"{_NET}.{self.subnet}.1", f"{_NET}.{self.subnet}.2"
        self._journal("netns", self.netns)
        _ip("netns", "add", self.netns)
        self._journal("veth", self.host_if)
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        _ip("link", "set", self.ns_if, "netns", self.netns)
        _ip("addr", "add", f"{self.host_addr}/24", "broadcast", "+", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        _ip("-n", self.netns, "addr", "add", f"{self.ns_addr}/24", "broadcast", "+", "dev", self.ns_if)
        _ip("-n", self.netns, "link", "set", self.ns_if, "up")
        _ip("-n", self.netns, "link", "set", "lo", "up")

    def _remove_path(self) -> list[str]:
        """Delete what _make_path made (veth first, then the namespace); problems, never raises."""
        problems = []
        for record in reversed(self._records):
            if record.get("restored"):
                continue
            try:
                remove_net_object(record["kind"], record["knob"])
                record["restored"] = True
            except RtqError as e:
                problems.append(str(e))
        if self.journal is not None:
            self.journal.save_state()
        return problems

    def start(self, log_dir: Path) -> None:
        """Make the path, start the receiver, wait for it to listen, then the sender."""
        if not self.exe:
            raise RtqError(f"load '{self.name}': start() before prepare()")
        self._log_dir = Path(log_dir)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._start_ns = time.time_ns()
        if not self.options["interface"]:
            self._make_path()
        self._irq_before = irq_counts()
        if self.instances == 2:
            recv = self._spawn(0, self._log_dir)
            deadline = time.monotonic() + _READY_S
            log = self._log_dir / recv.log
            while b"ready" not in log.read_bytes():
                if recv.proc.poll() is not None or time.monotonic() > deadline:
                    raise RtqError(f"load '{self.name}': receiver did not start (log: {recv.log})")
                time.sleep(0.02)
        self._spawn(self.instances - 1, self._log_dir)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the sender first (so the receiver counts what is in flight), then the rest; then
        delete the namespace and veth whatever happened."""
        try:
            if not self._stopped and self.poll() is None and self._running:
                self._stopping = True  # the sender's exit from here on is ours, not a death
                sender = self._running[-1]
                sender.stopped_by, sender.end_ns = "SIGINT", time.time_ns()
                try:
                    os.killpg(sender.proc.pid, signal.SIGINT)
                    sender.proc.wait(timeout=2)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
                time.sleep(0.1)
            if not self._stopped:
                self._irq_after = irq_counts()
            super().stop(timeout_s)
        finally:
            problems = self._remove_path()
        if problems:
            raise RtqError(f"load '{self.name}': {problems[0]}")

    def poll(self) -> str | None:
        """As every load, except while stop() has already ended the sender."""
        return self._dead if self._stopping else super().poll()

    def _read(self, role: str) -> dict:
        try:
            return json.loads(Path(self._file(role)).read_text())
        except (OSError, ValueError, AssertionError):
            return {}

    def collect(self) -> dict:
        """The base record plus "network": path, asked and achieved rates, drops, IRQ/softirq deltas."""
        out = super().collect()
        o = self.options
        sent, got = self._read("send"), self._read("recv")

        def rate(d: dict, key: str) -> float | None:
            first, last = d.get("first_ns"), d.get("last_ns")
            if not d or not first or not last or last <= first:
                return None
            return d.get(key, 0) / ((last - first) / 1e9)

        sent_pps, sent_arp = rate(sent, "packets"), rate(sent, "arp")
        delivered = got if got else sent
        udp_like = o["mode"] != "tcp" and bool(got)
        delta = {
            cpu: {k: self._irq_after.get(cpu, {}).get(k, 0) - v for k, v in counts.items()}
            for cpu, counts in self._irq_before.items()
        } if self._irq_after else {}  # fmt: skip
        achieved = {
            "packets_per_s": sent_pps,
            "bytes_per_s": rate(delivered, "bytes"),
            "received_packets_per_s": rate(got, "packets") if got else None,
            "arp_per_s": sent_arp,
            "received_arp": got.get("arp") if got else None,
            "sent": sent.get("packets"),
            "received": got.get("packets") if got else None,
            "drops": max(sent.get("packets", 0) - got.get("packets", 0), 0) if udp_like else None,
            "send_errors": sent.get("errors"),
            "missed": sent.get("missed"),
        }
        short = None
        if o["rate"] and self._start_ns is not None and self._stop_ns is not None:
            if sent_pps is None or sent_pps < SHORT_FRACTION * o["rate"]:
                got_text = "nothing" if sent_pps is None else f"{sent_pps:.0f} packets/s"
                short = f"network '{self.name}' sent {got_text} of {o['rate']} asked"
            elif o["arp_rate"] and (sent_arp or 0) < SHORT_FRACTION * o["arp_rate"]:
                short = f"network '{self.name}' sent {sent_arp or 0:.0f} ARP/s of {o['arp_rate']} asked"
        out["shortfall"] = short
        out["network"] = {
            "mode": o["mode"],
            "asked": {"packets_per_s": o["rate"], "size_bytes": o["size"], "arp_per_s": o["arp_rate"]},
            "path": {
                "netns": self.netns,
                "host_if": self.host_if or None,
                "ns_if": self.ns_if or None,
                "host_addr": self.host_addr or None,
                "ns_addr": self.ns_addr or None,
                "interface": o["interface"],
                "peer": o["peer"],
                "port": self.port,
            },
            "changes": self._records,
            "achieved": achieved,
            "receiving_cpu": self.cpus[0] if self.cpus else None,
            "irq_delta": {str(cpu): d for cpu, d in delta.items()},
        }
        return out

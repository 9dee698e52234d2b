"""The network load for real: its own namespace and veth pair (root), achieved rates, IRQ/softirq
counts, cleanup after the case, after SIGKILL + `rtqual restore`, and one-line errors. Traffic only
inside the namespace the load makes; never a user-named peer."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_probe
from rtqual.measure.loads import make_load
from rtqual.measure.loads.network import CAP_NET_ADMIN
from rtqual.util import has_capability

needs_net_admin = pytest.mark.skipif(not has_capability(CAP_NET_ADMIN), reason="needs CAP_NET_ADMIN (root)")


def ours(pid: int | None = None) -> dict:
    """Namespaces, links and netpeer processes of the network load (of rtqual process pid, or any)."""
    tag = f"rtqual-{pid}n" if pid else "rtqual-"
    link = f"rq{pid}n" if pid else "rq"
    try:
        netns = [n for n in os.listdir("/run/netns") if n.startswith(tag)]
    except OSError:
        netns = []
    links = [n for n in os.listdir("/sys/class/net") if n.startswith(link) and n[-1] in "hp"]
    procs = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode()
                with open(f"/proc/{d}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if "rtqual.measure.loads.netpeer" in cmd and state != "Z" and (pid is None or f"rq{pid}n" in cmd):
                procs.append(int(d))
    return {"netns": netns, "links": links, "procs": procs}


def script(tmp_path, n=200):
    path = tmp_path / "s.txt"
    path.write_text("".join(f"sample 0 {5_000 + i} 0\n" for i in range(n)))
    return path


# A bad network option is one line before anything runs: tests/integration/test_run_loads.py.


@needs_net_admin
def test_without_cap_net_admin_the_run_is_skipped_saying_what_to_grant(tmp_path):
    argv = ["setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin", sys.executable, "-m", "rtqual"]
    out = subprocess.run(
        [*argv, "run", "timer", "--duration", "1s", "--load", "network", "-o", tmp_path / "b", "-q"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 3 and "CAP_NET_ADMIN" in out.stderr and out.stderr.count("\n") == 1, out.stderr


@needs_net_admin
@pytest.mark.parametrize(
    "spec",
    [
        {"mode": "udp", "rate": 5000, "size": 256},
        {"mode": "udp", "rate": 20000, "size": 64},
        {"mode": "broadcast", "rate": 300, "arp_rate": 50},
        {"mode": "tcp", "rate": 2000, "size": 1000},
    ],
)
def test_rates_are_reached_and_the_receiving_cpu_pays_softirqs(tmp_path, spec):
    load = make_load({"type": "network", "cpus": "0", "port": 39000 + os.getpid() % 1000, **spec})
    load.prepare()
    try:
        load.start(tmp_path)
        assert load.netns in os.listdir("/run/netns") and load.host_if in os.listdir("/sys/class/net")
        time.sleep(2)
    finally:
        load.stop()
    net = load.collect()["network"]
    a = net["achieved"]
    assert abs(a["packets_per_s"] - spec["rate"]) <= 0.1 * spec["rate"], a
    assert load.collect()["shortfall"] is None
    if spec["mode"] != "tcp":
        assert a["received"] >= 0.9 * a["sent"] and a["drops"] is not None, a
    else:
        assert a["bytes_per_s"] >= 0.9 * spec["rate"] * spec["size"], a
    if spec.get("arp_rate"):
        assert abs(a["arp_per_s"] - spec["arp_rate"]) <= 0.1 * spec["arp_rate"] and a["received_arp"] > 0, a
    assert net["receiving_cpu"] == 0
    cpu0 = net["irq_delta"]["0"]
    assert cpu0["net_rx"] > 0 and cpu0["interrupts"] > 0, net["irq_delta"]
    assert load.netns not in os.listdir("/run/netns") and load.host_if not in os.listdir("/sys/class/net")
    assert all(c.get("restored") for c in net["changes"]) and len(net["changes"]) == 2


@needs_net_admin
@needs_probe
def test_namespace_exists_during_the_case_and_nothing_is_left_after(rtqual_cmd, tmp_path):
    seen = tmp_path / "seen.txt"
    spy = f"sh -c 'ls /run/netns /sys/class/net > {seen}; sleep 60'"  # started after the network load
    out = rtqual_cmd(
        "run", "fake", "--script", script(tmp_path), "--load", "network,rate=2000,cpus=0",
        "--load", f"command,argv={spy}", "--settle", "1s", "-o", tmp_path / "b", "-q",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "b/cases/001-fake/result.json").read_text())
    net = result["loads"][0]["network"]
    assert net["path"]["netns"] in seen.read_text() and net["path"]["host_if"] in seen.read_text()
    assert net["achieved"]["sent"] > 0 and result["loads"][0]["shortfall"] is None
    journal = json.loads((tmp_path / "b/host/changes.json").read_text())["changes"]
    assert {c["kind"] for c in journal} == {"netns", "veth"} and all(c["restored"] for c in journal)
    time.sleep(0.2)
    pid = int(journal[0]["knob"].split("-")[1].split("n")[0])  # rtqual-<pid>n<subnet>
    left = ours(pid)
    assert left == {"netns": [], "links": [], "procs": []}, left
    shown = rtqual_cmd("show", tmp_path / "b")
    assert "network load network: udp" in shown.stdout and "NET_RX softirqs" in shown.stdout, shown.stdout


@needs_net_admin
@needs_probe
def test_a_rate_out_of_reach_makes_the_case_inconclusive(rtqual_cmd, tmp_path):
    out = rtqual_cmd(
        "run", "fake", "--script", script(tmp_path), "--load", "network,rate=1000000,size=1400,cpus=0",
        "--settle", "1s", "-o", tmp_path / "b", "-q",
    )  # fmt: skip
    assert out.returncode == 4, out.stderr
    result = json.loads((tmp_path / "b/cases/001-fake/result.json").read_text())
    assert result["verdict"] == "inconclusive" and "load short of its rate" in result["reason"], result["reason"]


@needs_net_admin
@needs_probe
def test_after_sigkill_the_sender_dies_and_restore_removes_the_namespace(rtqual_cmd, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", "timer", "--duration", "60s", "--load", "network,rate=1000",
         "-o", tmp_path / "b", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (ours(proc.pid)["netns"] and len(ours(proc.pid)["procs"]) == 2):
            assert time.monotonic() < deadline and proc.poll() is None, "the load never started"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 5
    while ours(proc.pid)["procs"] and time.monotonic() < deadline:
        time.sleep(0.1)
    left = ours(proc.pid)
    assert left["procs"] == [] and left["netns"] and left["links"], left  # PDEATHSIG; the path stays
    out = rtqual_cmd("restore", tmp_path / "b")
    assert out.returncode == 0, out.stderr
    assert ours(proc.pid) == {"netns": [], "links": [], "procs": []}
    again = rtqual_cmd("restore", tmp_path / "b")
    assert again.returncode == 0, again.stderr

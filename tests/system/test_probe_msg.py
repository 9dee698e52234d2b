"""Real `rtqual-probe msg` runs (root): message round trips between processes.

Invariants only, never absolute latencies: one sample per round trip, histogram and
summary agree, the scheduling each process really got is read back into the header,
and no server/broker process outlives the probe.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import interrupt, needs_probe, needs_root, one, probe_records, run_case, start_probe

pytestmark = [needs_probe, needs_root]


def run(*args, timeout=60):
    return probe_records("msg", *args, timeout=timeout)


ZMQ = ("zmq-tcp", "zmq-ipc")
BARE = ("udp", "tcp", "unix-stream", "unix-dgram")
CPUS = sorted(os.sched_getaffinity(0))
CLIENT_CPU, SERVER_CPU = CPUS[0], CPUS[-1]
LOOPS_300 = ("--loops", 300, "--warmup", 20, "--client-cpu", CLIENT_CPU)  # 320 round trips, the client placed


def probe() -> str:
    from rtqual.measure.run import native

    return str(native.probe_path())


def zmq_skip_reason() -> str | None:
    """None if the binary has libzmq; else the probe's own skip line."""
    try:
        out = subprocess.run(
            [probe(), "msg", "--check", "--transport", "zmq-tcp"], capture_output=True, text=True, timeout=30
        )
    except Exception as e:  # no binary: needs_probe skips the module anyway
        return str(e)
    if out.returncode == 3 and "built without libzmq" in out.stderr:
        return "rtqual-probe built without libzmq (apt-get install libzmq3-dev and rebuild)"
    return None


ZMQ_SKIP = zmq_skip_reason()


def transport_param(t):
    marks = [pytest.mark.skip(reason=ZMQ_SKIP)] if t in ZMQ and ZMQ_SKIP else []
    return pytest.param(t, marks=marks, id=t)


TRANSPORTS = [transport_param(t) for t in ZMQ + BARE]


def child_pids(header) -> list[int]:
    procs = header["params"]["processes"]
    return [procs[r]["pid"] for r in ("server", "broker") if r in procs]


def assert_gone(pids):
    """No server/broker survives the probe (a reused pid would not be an rtqual-probe)."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        assert b"rtqual-probe" not in cmd, f"pid {pid} outlived the probe"


def assert_invariants(recs, count):
    s = one(recs, "summary")["cpus"]
    assert len(s) == 1
    s = s[0]
    h = one(recs, "hist")
    assert s["count"] == h["count"] == count
    assert sum(c for _, c in h["counts"]) == count
    assert 0 < s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["p999_ns"] <= s["p9999_ns"] <= s["max_ns"]
    assert s["min_ns"] <= s["mean_ns"] <= s["max_ns"]
    assert s["out_of_range"] == 0
    return s


def assert_placed(proc, cpu, policy="fifo", priority=80):
    assert proc["policy"] == proc["policy_requested"] == policy
    assert proc["priority"] == (priority if policy != "other" else 0)
    if cpu is not None:
        assert proc["cpu_requested"] == cpu and proc["affinity"] == [cpu]
    for thr in proc["other_threads"]:  # zmq context threads inherit what the process got
        assert (thr["policy"], thr["affinity"]) == (proc["policy"], proc["affinity"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_transport_loops(transport):
    out, recs = run("--transport", transport, *LOOPS_300, "--server-cpu", SERVER_CPU, "--size", 100)
    assert out.returncode == 0, out.stderr
    head = one(recs, "header")
    assert one(recs, "end")["status"] == 0
    s = assert_invariants(recs, 300)
    assert s["cpu"] == CLIENT_CPU == head["params"]["slot_cpu"]
    assert s["wakeups"] == 320 and s["overruns"] == 0  # warm-up + measured: one reply per message
    p = head["params"]
    assert p["transport"] == transport and p["size"] == 100 and not p["chain"]
    assert set(p["processes"]) == {"client", "server"}
    assert_placed(p["processes"]["client"], CLIENT_CPU)
    assert_placed(p["processes"]["server"], SERVER_CPU)
    assert p["processes"]["server"]["pid"] != p["processes"]["client"]["pid"]
    assert p["processes"]["server"]["mlockall"] and p["processes"]["client"]["mlockall"]
    if transport in ZMQ:
        assert p["processes"]["server"]["other_threads"], "zmq I/O threads not read back"
    assert_gone(child_pids(head))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_chain(transport):
    servers = ["--broker-cpu", SERVER_CPU, "--server-cpu", SERVER_CPU, "--server-priority", 70]
    out, recs = run("--transport", transport, "--chain", *LOOPS_300, *servers)
    assert out.returncode == 0, out.stderr
    head = one(recs, "header")
    assert_invariants(recs, 300)
    procs = head["params"]["processes"]
    assert head["params"]["chain"] and set(procs) == {"client", "broker", "server"}
    assert len({procs[r]["pid"] for r in procs}) == 3
    assert_placed(procs["broker"], SERVER_CPU)
    assert_placed(procs["server"], SERVER_CPU, priority=70)
    assert procs["broker"]["endpoint"] != procs["server"]["endpoint"]
    assert_gone(child_pids(head))


def test_time_sharing_unbound():
    """The paper's case 2: every process TS (SCHED_OTHER), none bound; slot = client's CPU at start."""
    out, recs = run("--transport", "udp", "--chain", "--policy", "other", "--loops", 300)
    assert out.returncode == 0, out.stderr
    head = one(recs, "header")
    s = assert_invariants(recs, 300)
    procs = head["params"]["processes"]
    for r in ("client", "broker", "server"):
        assert_placed(procs[r], None, policy="other")
        assert procs[r]["cpu_requested"] == -1 and procs[r]["affinity"] == CPUS
    assert head["rt"]["policy"] == "other"
    assert head["params"]["slot_cpu"] == s["cpu"] and s["cpu"] in CPUS
    assert_gone(child_pids(head))


def test_broker_options_ignored_without_chain():
    out, recs = run("--transport", "tcp", "--broker-cpu", SERVER_CPU, "--loops", 50)
    assert out.returncode == 0, out.stderr
    assert "broker" not in one(recs, "header")["params"]["processes"]
    assert any(r["type"] == "event" and r["kind"] == "warning" and "without --chain" in r["message"] for r in recs)


def test_mixed_policies():
    """The paper's case 1 shape: RT everywhere, only the broker (message server) bound."""
    policies = ["--client-policy", "rr", "--client-priority", 60, "--server-policy", "other"]
    out, recs = run("--transport", "tcp", "--chain", "--broker-cpu", SERVER_CPU, *policies, "--loops", 200)
    assert out.returncode == 0, out.stderr
    procs = one(recs, "header")["params"]["processes"]
    assert_placed(procs["client"], None, policy="rr", priority=60)
    assert_placed(procs["broker"], SERVER_CPU)
    assert_placed(procs["server"], None, policy="other")


def test_rate_periods():
    out, recs = run("--transport", "unix-dgram", "--rate", 1000, "--loops", 200, "--warmup", 10)
    assert out.returncode == 0, out.stderr
    s = one(recs, "summary")["cpus"][0]
    assert s["count"] + s["overruns"] == 200  # every period is a round trip or an overrun
    assert_invariants(recs, s["count"])
    assert one(recs, "header")["params"]["period_ns"] == 1_000_000


def test_duration_mode():
    t0 = time.monotonic()
    out, recs = run("--transport", "unix-stream", "--duration", "1s", "--warmup", 10)
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - t0 >= 1.0
    s = one(recs, "summary")["cpus"][0]
    assert s["count"] > 0 and s["wakeups"] == s["count"] + 10
    assert_invariants(recs, s["count"])


@pytest.mark.parametrize("transport", [transport_param("zmq-tcp"), transport_param("unix-dgram")])
def test_sigint_stops_everything(transport):
    p, header = start_probe("msg", "--transport", transport, "--chain", "--duration", "60s")
    pids = child_pids(header)
    assert len(pids) == 2
    time.sleep(0.3)
    recs = interrupt(p)
    end = one(recs, "end")
    assert (end["status"], end["reason"]) == (4, "interrupted")
    assert one(recs, "summary")["cpus"][0]["count"] > 0
    assert_gone(pids)


def test_server_death_is_an_error():
    p, header = start_probe("msg", "--transport", "udp", "--duration", "60s", "--timeout", "200ms")
    server = header["params"]["processes"]["server"]["pid"]
    time.sleep(0.2)
    os.kill(server, signal.SIGKILL)
    rest, err = p.communicate(timeout=30)
    assert p.returncode == 1
    end = [json.loads(line) for line in rest.splitlines()][-1]
    assert end["type"] == "end" and end["status"] == 1
    assert "no reply" in end["message"] and f"server (pid {server})" in end["message"]
    assert err.strip().splitlines()[-1].startswith("rtqual-probe: error: ")


def test_probe_killed_children_follow():
    """SIGKILL of the probe: the children die with it (PR_SET_PDEATHSIG)."""
    p, header = start_probe("msg", "--transport", "tcp", "--chain", "--duration", "60s")
    pids = child_pids(header)
    p.kill()
    p.wait(timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            assert_gone(pids)
            break
        except AssertionError:
            time.sleep(0.05)
    assert_gone(pids)


@pytest.mark.parametrize(
    "args, text",
    [
        (["--transport", "udp", "--size", "70000"], "at most 65507"),
        (["--transport", "unix-stream", "--loops", "5", "--duration", "1s"], "exclude each other"),
        (["--transport", "unix-dgram", "--client-cpu", "4096"], "--client-cpu"),
    ],
)
def test_bad_options(args, text):
    out = subprocess.run([probe(), "msg", "--check", *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and text in out.stderr


def test_pipeline_run(tmp_path):
    """Through `rtqual run msg` (the probe catalog drives it)."""
    case = run_case(tmp_path / "b", "msg", "--transport", "udp", "--duration", "2s")
    s = case["stats"]
    assert s["count"] > 0
    assert s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"]

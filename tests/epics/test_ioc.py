"""A real EPICS 7 IOC (epicscorelibs) with rtqual's device support, on loopback."""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest
from helpers import gone, needs_pyepics

from rtqual.errors import RtqError
from rtqual.measure.epics import env as epics_env
from rtqual.measure.epics.ioc import Ioc, make_db


@pytest.fixture(params=[("kek", "callback"), ("aps", "callback"), ("aps", "immediate")], ids=lambda p: "-".join(p))
def ioc(request):
    preset, mode = request.param
    ioc = Ioc(preset=preset, mode=mode)
    try:
        ioc.start()
        yield ioc
    finally:
        ioc.stop()
        if ioc.proc is not None:
            assert gone(ioc.proc.pid), "IOC still running after stop"
        assert not ioc.dir.exists()


def test_env_loopback_defaults_do_not_override():
    env = epics_env.epics_env({"EPICS_CA_ADDR_LIST": "10.0.0.5", "EPICS_CA_SERVER_PORT": "5999"})
    assert env["EPICS_CA_ADDR_LIST"] == "10.0.0.5"
    assert env["EPICS_CA_SERVER_PORT"] == "5999"
    assert env["EPICS_CA_AUTO_ADDR_LIST"] == "NO"
    assert env["EPICS_CAS_INTF_ADDR_LIST"] == "127.0.0.1"
    assert env["EPICS_PVA_AUTO_ADDR_LIST"] == "NO"
    assert env["EPICS_PVAS_INTF_ADDR_LIST"] == "127.0.0.1"
    ports = [int(env[k]) for k in ("EPICS_CA_REPEATER_PORT", "EPICS_PVA_SERVER_PORT", "EPICS_PVA_BROADCAST_PORT")]
    assert len(set(ports)) == 3 and all(1024 <= p < 65536 for p in ports)


def test_env_ports_are_free_for_tcp_and_udp():
    (port,) = epics_env.free_ports([("tcp", "udp")])
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", port))


def test_make_db_presets():
    kek, aps = make_db("kek", operator=False), make_db("aps", operator=False)
    assert kek.count("record(") == 2 and 'DTYP, "rtqual"' in kek
    assert aps.count("record(") == 3 and "record(calc" in aps
    # the operator view is part of every preset by default
    for preset in ("kek", "aps"):
        assert make_db(preset).startswith(make_db(preset, operator=False))
        assert 'DTYP, "rtqual latency"' in make_db(preset)
    with pytest.raises(RtqError):
        make_db("nosuch")


def test_ioc_ready_and_device_support_loaded(ioc):
    assert ioc.alive()
    assert ioc.ready["type"] == "ready" and ioc.ready["prefix"] == ioc.prefix
    assert ioc.ready["ca_server_port"] == ioc.env["EPICS_CA_SERVER_PORT"]
    assert ioc.ready["epics_version"].startswith("7.")
    assert "recGblRecordError" not in ioc.log.read_text()


def test_every_stimulus_gets_one_response_with_ordered_stages(ioc):
    n = 100
    sent = []
    got = []
    for _ in range(n):
        sent.append(ioc.trigger())
        got += ioc.responses(1, timeout=5)
    got += ioc.responses(1, timeout=0.3)  # nothing extra may follow
    assert len(got) == n, ioc.log_tail()
    assert [r[0] for r in got] == sent
    for t_stim, t_wake, t_process, t_out in got:
        assert t_stim <= t_wake <= t_process <= t_out
        # the stages add up to the total
        assert (t_wake - t_stim) + (t_process - t_wake) + (t_out - t_process) == t_out - t_stim
        assert t_out - t_stim < 1_000_000_000


def test_burst_of_stimuli_is_not_coalesced(ioc):
    sent = [ioc.trigger() for _ in range(50)]
    got = ioc.responses(50, timeout=10)
    assert [r[0] for r in got] == sent
    assert ioc.responses(1, timeout=0.3) == []


@needs_pyepics
def test_ca_read_and_put_on_loopback(ioc):
    """An independent CA client (pyepics, same libca) reads the bi and writes the bo; a CA put
    to the bo is not a stimulus, so it gives no response."""
    code = (
        "import sys, epicscorelibs.path.pyepics, epics\n"
        "print(epics.caget(sys.argv[1], timeout=5))\n"
        "print(epics.caput(sys.argv[2], 1, wait=True, timeout=5))\n"
        "print(epics.caget(sys.argv[2] + '.DTYP', as_string=True, timeout=5))\n"
    )
    ioc.trigger()
    assert len(ioc.responses(1)) == 1
    out = subprocess.run(
        [sys.executable, "-c", code, ioc.pv("in"), ioc.pv("out")],
        env=ioc.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    val, put, dtyp = out.stdout.split("\n")[:3]
    assert val in ("0", "1") and put == "1" and dtyp == "rtqual", out.stdout
    assert ioc.responses(1, timeout=0.3) == []


def test_ioc_stopped_when_the_block_fails():
    with pytest.raises(RuntimeError), Ioc(preset="kek") as ioc:
        pid = ioc.proc.pid
        raise RuntimeError("test failure inside the block")
    assert gone(pid)
    assert not ioc.dir.exists()


def test_ioc_start_error_is_reported_and_cleaned_up(tmp_path):
    ioc = Ioc(preset="kek", workdir=tmp_path)
    ioc.fifo_in.write_text("not a fifo")  # the bi cannot open its line: the IOC must not report ready
    try:
        with pytest.raises(RtqError, match="not a FIFO|could not use"):
            ioc.start()
    finally:
        ioc.stop()
    assert gone(ioc.proc.pid)


def test_eventfd_output_with_times_out_writes_the_four_times_after_the_line(tmp_path):
    """The path a GPIO output takes too (times=): the line is set first, then the four times go to
    the --times-out FIFO, where a harness watching the line finds the IOC's stages."""
    fifo_in, times = tmp_path / "in.fifo", tmp_path / "times.fifo"
    os.mkfifo(fifo_in)
    os.mkfifo(times)
    (tmp_path / "ioc.db").write_text(make_db("kek", operator=False))
    efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    w = os.open(fifo_in, os.O_RDWR | os.O_CLOEXEC)
    r = os.open(times, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    ioc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rtqual.measure.epics.iocmain",
            "--db",
            str(tmp_path / "ioc.db"),
            "--prefix",
            "rtqtimes:",
            "--fifo-in",
            str(fifo_in),
            "--eventfd-out",
            str(efd),
            "--times-out",
            str(times),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=[efd],
        env=epics_env.epics_env(),
        start_new_session=True,
    )
    try:
        assert json.loads(ioc.stdout.readline())["type"] == "ready"
        for _ in range(3):
            t_stim = time.monotonic_ns()
            os.write(w, struct.pack("=q", t_stim))
            assert select.select([r], [], [], 5)[0], "no times on --times-out"
            msg = struct.unpack("=4q", os.read(r, 32))
            t_out = os.eventfd_read(efd)  # the line: one counter, t_out
            assert msg[0] == t_stim and msg[3] == t_out and t_stim <= msg[1] <= msg[2] <= t_out
    finally:
        for fd in (efd, w, r):
            os.close(fd)
        os.killpg(ioc.pid, signal.SIGTERM)  # as rtqual's death would (PDEATHSIG)
        try:
            _, err = ioc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(ioc.pid, signal.SIGKILL)
            _, err = ioc.communicate()
            pytest.fail(f"the IOC did not stop on SIGTERM within 30 s: {err[-500:]}")
    assert ioc.returncode == 0, err[-500:]
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtqual.measure.epics.iocmain",
            "--db",
            "x.db",
            "--fifo-in",
            "a",
            "--fifo-out",
            "b",
            "--times-out",
            "c",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "--times-out goes with" in p.stderr, p.stderr

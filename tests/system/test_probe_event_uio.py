"""`event --source uio` on bad input, on a host without UIO: a stand-in device (a pty, whose sysfs entry under
RTQUAL_SYSFS says it is uio's) lets every refusal and the interrupt that never comes run here. Each ends with one
line and its documented exit code (docs/interrupts.md), and leaves nothing masked: the PCI command register's
interrupt-disable bit cleared, the last word written to the device the unmask (int32 1). Real interrupts: the
kernel lab (tests/kernels)."""

import json
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import needs_probe, needs_root, rtqual_run, show_json

pytestmark = [needs_probe, needs_root]
INTX_DISABLE = 0x400


def probe_path() -> str:
    from rtqual.measure.run import native

    return str(native.probe_path())


def an_irq() -> int:
    """An IRQ this host lists in /proc/interrupts (the stand-in device says it is its own)."""
    for line in Path("/proc/interrupts").read_text().splitlines()[1:]:
        head = line.split(":", 1)[0].strip()
        if head.isdigit():
            return int(head)
    pytest.skip("no numbered line in /proc/interrupts")


class FakeUio:
    """A pty as the UIO device: SYSFS/class/uio/<pts>/{dev,name,event,device/{irq,resource0,config}}."""

    def __init__(self, tmp: Path, irq: int | None):
        self.master, slave = os.openpty()
        self.path = os.ttyname(slave)
        self._slave = slave
        st = os.stat(self.path)
        self.sysfs = tmp / "sys"
        d = self.sysfs / "class" / "uio" / os.path.basename(self.path)
        (d / "device").mkdir(parents=True)
        (d / "dev").write_text(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}\n")
        (d / "name").write_text("rtqual_fake_uio\n")
        (d / "event").write_text("0\n")
        if irq is not None:
            (d / "device" / "irq").write_text(f"{irq}\n")
        (d / "device" / "resource0").write_bytes(bytes(4096))
        config = bytearray(256)
        config[4:6] = struct.pack("<H", 0x0006 | INTX_DISABLE)  # memory, bus master; interrupt disabled
        (d / "device" / "config").write_bytes(bytes(config))
        self.dev = d
        os.set_blocking(self.master, False)

    def env(self) -> dict:
        return {**os.environ, "RTQUAL_SYSFS": str(self.sysfs)}

    def command_register(self) -> int:
        return struct.unpack("<H", (self.dev / "device" / "config").read_bytes()[4:6])[0]

    def written(self) -> bytes:
        """What the probe wrote to the device (the pty's other end)."""
        try:
            return os.read(self.master, 4096)
        except BlockingIOError:
            return b""

    def close(self):
        os.close(self.master)
        os.close(self._slave)


@pytest.fixture
def fake(tmp_path):
    f = FakeUio(tmp_path, an_irq())
    yield f
    f.close()


def probe(fake, *args, timeout=60, **kw):
    return subprocess.run(
        [probe_path(), "event", "--source", "uio", "--uio", fake.path, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=fake.env(),
        **kw,
    )


def one_line(p) -> str:
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_not_a_uio_device(fake):
    p = subprocess.run(
        [probe_path(), "event", "--source", "uio", "--uio", "/dev/null"], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 1 and "not a UIO device" in one_line(p)


def test_an_irq_that_does_not_exist(fake):
    p = probe(fake, "--irq", 1_000_000, "--trigger", "0:0x60=1")
    assert p.returncode == 1 and "--irq 1000000: no such interrupt" in one_line(p)


def test_a_device_without_an_interrupt(tmp_path):
    f = FakeUio(tmp_path, None)  # no irq in sysfs, its name on no /proc/interrupts line
    try:
        p = probe(f, "--trigger", "0:0x60=1")
        assert p.returncode == 1 and "no interrupt found" in one_line(p)
    finally:
        f.close()


@pytest.mark.parametrize(
    "opt, value, words",
    [
        ("--trigger", "0:0x1000=1", "outside BAR 0 (4096 bytes)"),
        ("--ack", "0:0xffc=1", None),  # the last word of the BAR is inside
        ("--trigger", "1:0x60=1", "BAR 1 of"),  # the device has no BAR 1
        ("--trigger", "0:0x62=1", "multiple of 4"),
    ],
)
def test_registers_outside_their_bar(fake, opt, value, words):
    args = [opt, value] if opt == "--trigger" else ["--trigger", "0:0x60=1", opt, value, "--check"]
    p = probe(fake, *args, "--check")
    if words is None:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode == 1 and words in one_line(p)


def test_no_permission():
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) missing")
    tmp = Path(tempfile.mkdtemp())  # a folder nobody may read: the device's own mode is what refuses
    tmp.chmod(0o755)
    fake = FakeUio(tmp, an_irq())
    probe_dir = Path(probe_path()).resolve()
    p = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(probe_dir), "event", "--source", "uio",
         "--uio", fake.path, "--trigger", "0:0x60=1", "--allow-degraded"],
        capture_output=True, text=True, timeout=30, env=fake.env(),
    )  # fmt: skip
    fake.close()
    shutil.rmtree(tmp)
    assert p.returncode == 3 and "Permission denied" in one_line(p), p.stderr


def test_an_interrupt_that_never_comes_is_bounded_and_leaves_it_unmasked(fake):
    p = probe(fake, "--trigger", "0:0x60=1", "--ack", "0:0x64=1", "--timeout", "50ms", "--loops", 5, "--stages",
              "off", "--json-fd", 1)  # fmt: skip
    assert p.returncode == 4
    line = one_line(p)
    assert "no interrupt from" in line and "within --timeout 50 ms" in line and "1 raised, 0 samples" in line
    res = (fake.dev / "device" / "resource0").read_bytes()
    assert struct.unpack("<II", res[0x60:0x68]) == (1, 1)  # triggered, then acknowledged at the end
    assert not fake.command_register() & INTX_DISABLE  # nothing left masked
    written = fake.written()
    assert written and len(written) % 4 == 0 and struct.unpack("<i", written[-4:]) == (1,)  # the unmask, last


def test_passive_needs_the_kernel_trace(fake):
    if Path("/sys/kernel/tracing/instances").exists() or Path("/sys/kernel/debug/tracing/instances").exists():
        pytest.skip("tracefs is mounted here: the passive source can run")
    p = probe(fake, "--timeout", "50ms")
    assert p.returncode == 3 and "irq_handler_entry" in one_line(p)


def test_the_cli_keeps_what_was_seen(fake, tmp_path):
    bundle = tmp_path / "b"
    p = rtqual_run("run", "event", "--source", "uio", "--uio", fake.path, "--trigger", "0:0x60=1", "--timeout",
                   "50ms", "--loops", 3, "--stages", "off", "-q", "-o", bundle, env=fake.env())  # fmt: skip
    assert p.returncode == 4, p.stderr
    case = show_json(bundle)["cases"][0]
    assert case["verdict"] == "inconclusive" and "no interrupt from" in case["reason"]
    assert case["interrupts"]["raised"] == 1 and case["interrupts"]["samples"] == 0
    assert case["interrupts"]["missed"] == 1
    assert case["irq"]["number"] == an_irq() and set(case["irq"]) >= {"number", "thread", "policy", "priority", "cpu"}
    assert case["params"]["mode"] == "active" and case["params"]["trigger"] == "0:0x60=1"


def pio(fake, *args, timeout=60):
    return subprocess.run(
        [probe_path(), "pio", "--uio", fake.path, *map(str, args), "--json-fd", "1"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=fake.env(),
    )


@pytest.mark.parametrize("width", [8, 32])
def test_pio_sweeps_a_bar_range(fake, width):
    p = pio(fake, "--bar", 0, "--offset", "0x100", "--size", 1024, "--width", width, "--op", "write", "--passes", 4)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    params = next(r for r in recs if r["type"] == "header")["params"]
    assert params["map_kind"] == "bar" and params["offset"] == 0x100 and params["bytes_per_pass"] == 1024
    assert params["accesses_per_pass"] == 1024 * 8 // width and "bus" in params["note"]
    (cpu,) = next(r for r in recs if r["type"] == "summary")["cpus"]
    assert cpu["count"] == cpu["passes"] == 4
    res = (fake.dev / "device" / "resource0").read_bytes()
    assert any(res[0x100:0x500]) and not any(res[:0x100]) and not any(res[0x500:])  # that range, no other byte


@pytest.mark.parametrize(
    "args, words",
    [
        (["--offset", "0x1000"], "outside BAR 0 (4096 bytes)"),
        (["--offset", "0xf00", "--size", 512], "past the end of BAR 0"),
        (["--bar", 3], "BAR 3 of"),
        (["--offset", "12"], "multiple of 8"),
        (["--map", "shm"], "exclude each other"),
    ],
)
def test_pio_range_outside_the_bar(fake, args, words):
    p = pio(fake, *args, "--passes", 1)
    assert p.returncode == 1 and words in one_line(p)


def test_the_ioc_harness_bounds_an_interrupt_that_never_comes_and_leaves_it_unmasked(fake, tmp_path):
    """`rtqual run ioc --input uio:DEV`'s harness (iocresp --uio) with no IOC answering: exit 4 with what was
    seen, the device acknowledged and unmasked at the end; a register outside its BAR is one line (exit 1)."""
    out = tmp_path / "out.fifo"
    os.mkfifo(out)
    argv = [probe_path(), "iocresp", "--uio", fake.path, "--out", str(out), "--trigger", "0:0x60=1"]
    p = subprocess.run([*argv, "--ack", "0:0x64=1", "--timeout", "50ms", "--loops", "3"], capture_output=True,
                       text=True, timeout=60, env=fake.env())  # fmt: skip
    assert p.returncode == 4 and "no response from the IOC to the interrupt of" in p.stderr.strip().splitlines()[-1]
    summary = next(json.loads(x) for x in p.stdout.splitlines() if '"summary"' in x)
    assert summary["interrupts"]["raised"] == 1 and summary["interrupts"]["missed"] == 1  # every trigger accounted
    res = (fake.dev / "device" / "resource0").read_bytes()
    assert struct.unpack("<II", res[0x60:0x68]) == (1, 1)  # triggered, then acknowledged at the end
    assert not fake.command_register() & INTX_DISABLE  # nothing left masked
    written = fake.written()
    assert written and struct.unpack("<i", written[-4:]) == (1,)  # the unmask, last
    p = subprocess.run([*argv[:-1], "0:0x2000=1"], capture_output=True, text=True, timeout=60, env=fake.env())
    assert p.returncode == 1 and "outside BAR 0" in one_line(p)


def test_a_passive_ioc_input_needs_the_kernel_trace_and_is_taken_where_it_is(fake, tmp_path):
    """`rtqual run ioc --input uio:DEV` without --trigger (passive: the interrupt comes from outside, t0 its
    irq_handler_entry): the harness's check (what `rtqual run` asks before the IOC starts) refuses it in one line,
    exit 1, without tracefs (the stand-in sysfs has none, whatever this host mounts), and takes it with one."""
    out = tmp_path / "out.fifo"
    os.mkfifo(out)
    argv = [probe_path(), "iocresp", "--uio", fake.path, "--out", str(out), "--ack", "0:0x64=1", "--check"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=fake.env())
    line = one_line(p)
    assert p.returncode == 1 and "without --trigger (passive)" in line and "irq_handler_entry" in line
    (fake.sysfs / "kernel" / "tracing" / "instances").mkdir(parents=True)  # a tracefs with instances
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=fake.env())
    assert p.returncode == 0, p.stderr


def test_the_cli_refuses_a_passive_ioc_input_without_tracefs_before_the_ioc_starts(fake, tmp_path):
    from conftest import epics_missing

    if why := epics_missing():
        pytest.skip(why)
    tmp = tmp_path / "tmp"  # the IOC's temp folder (its FIFOs) would be made here
    tmp.mkdir()
    p = rtqual_run("run", "ioc", "--input", f"uio:{fake.path}", "--ack", "0:0x64=1", "--duration", "1s", "-q", "-o",
                   tmp_path / "b", env={**fake.env(), "TMPDIR": str(tmp)})  # fmt: skip
    assert p.returncode == 1 and "without --trigger (passive)" in one_line(p), p.stderr
    assert not (tmp_path / "b").exists() and list(tmp.iterdir()) == []  # no bundle, no IOC: nothing started
    assert fake.written() == b"" and fake.command_register() & INTX_DISABLE  # the check left the device as it was

"""The probe session's service fill (rtqual.measure.run.session.prepare) with rtqual's real IOC service: the probe's
options get the IOC's FIFOs, and a probe that refuses its options leaves no IOC folder behind."""

import os

import pytest

from rtqual.errors import RtqError
from rtqual.measure.run.session import prepare
from rtqual.probes.catalog import probe_case


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """The IOC's temp folder goes into the test's own folder (tempfile reads TMPDIR once: reset it)."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return tmp_path


def test_the_service_fills_the_probe_options(tmpdir_env):
    case = probe_case("ioc", {"duration": 1_000_000_000}, [0], "c")
    svc, args = prepare(case["probe"], case["run_as"], case["args"], case["service"])
    try:
        assert "$(IOC_IN)" in case["args"] and not any("$(" in a for a in args)
        fifo_in = args[args.index("--in") + 1]
        assert os.path.dirname(fifo_in) in {str(p) for p in svc.temp_paths()}
    finally:
        svc.discard()
    assert list(tmpdir_env.iterdir()) == []


def test_a_refused_probe_discards_its_service(tmpdir_env):
    case = probe_case("ioc", {}, [0], "c")
    with pytest.raises(RtqError, match="--duration"):
        prepare(case["probe"], case["run_as"], [*case["args"], "--duration", "1ns"], case["service"])
    assert list(tmpdir_env.iterdir()) == []  # the IOC's FIFOs' folder is gone with it


def test_a_uio_input_fills_the_device_instead_of_the_input_fifo(tmpdir_env):
    from rtqual.measure.epics.service import IocService

    fixed = {"in": "$(IOC_IN)", "out": "$(IOC_OUT)", "uio": "$(IOC_UIO)"}
    svc = IocService({"input": "uio:/dev/uio7"})
    try:
        filled = svc.fill(fixed)
        assert filled["uio"] == "/dev/uio7" and "in" not in filled and filled["out"] == str(svc.ioc.fifo_out)
        assert svc.ioc.uio_in == "/dev/uio7"
    finally:
        svc.discard()
    svc = IocService({})  # the FIFO input: no --uio at all
    try:
        assert set(svc.fill(fixed)) == {"in", "out"}
    finally:
        svc.discard()
    for bad in ("fifo:/x", "uio:", "uio:dev/uio0", "/dev/uio0"):
        with pytest.raises(RtqError, match="want uio:/dev/uioN"):
            IocService({"input": bad})
    with pytest.raises(RtqError, match="--input and --gpio"):
        IocService({"input": "uio:/dev/uio0", "gpio": "/dev/gpiochip0:1,2,3,4"})


def test_a_uio_input_that_is_no_uio_device_is_refused_before_the_ioc_starts(tmpdir_env):
    case = probe_case("ioc", {"input": "uio:/dev/null", "trigger": "0:0x60=1"}, [0], "c")
    with pytest.raises(RtqError, match="not a UIO device"):
        prepare(case["probe"], case["run_as"], case["args"], case["service"])
    assert list(tmpdir_env.iterdir()) == []  # nothing left: the IOC never started

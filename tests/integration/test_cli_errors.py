"""Bad input: one clear line on stderr and exit 1, never a traceback."""

import pytest

from conftest import needs_probe, rtqual_run
from rtqual.errors import RtqError


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["run", "timer", "--cpus", "0-x"], "--cpus"),
        (["run", "timer", "--cpus", "4095"], "not online"),
        (["run", "timer", "--interval", "0ms"], "--interval"),
        (["run", "timer", "--interval", "-1ms"], "--interval"),
        (["run", "timer", "--interval", "10"], "unit"),
        (["run", "timer", "--priority", "100"], "--priority"),
        (["run", "timer", "--priority", "abc"], "priority"),
        (["run", "timer", "--bogus"], "--bogus"),
        (["run", "timer", "--duration", "1s", "--loops", "5"], "not allowed"),
        (["run", "nosuchprobe"], "nosuchprobe"),
        (["run", "ioc", "--ioc-cpus", "4095"], "not online"),
        (["run", "ioc", "--reader-cpu", "4095"], "not online"),
        (["run", "ioc", "--ioc-prefix", 'a"b'], "IOC prefix"),
        (["run", "ioc", "--records", "-1"], "--records"),
        (["run", "ioc", "--scan", "3 second"], "--scan"),
        (["run", "ioc", "--baseline", "fast"], "--baseline"),
        (["run", "ioc", "--ioc-db", "/nonexistent.db"], "--ioc-db"),
        (["run", "ioc", "--ioc-chain", "-1"], "--ioc-chain"),
        (["show", "/nonexistent/bundle"], "not an rtqual bundle"),
        (["export", "raw", "/nonexistent/bundle"], "not an rtqual bundle"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_bad_input_one_line(rtqual_cmd, args, fragment):
    out = rtqual_cmd(*args)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual: error:") and fragment in lines[0], out.stderr
    assert "Traceback" not in out.stderr


@needs_probe
@pytest.mark.parametrize(
    "args,hint",
    [
        (["run", "timr"], "did you mean 'timer'?"),
        (["runn"], "did you mean 'run'?"),
        (["run", "timer", "--duraton", "1s"], "did you mean '--duration'?"),
        (["run", "timer", "--duraton=1s"], "did you mean '--duration'?"),
        (["show", "x", "--tabel", "kek"], "did you mean '--table'?"),
        (["history", "--sinse=1d"], "did you mean '--since'?"),
    ],
)
def test_a_typo_gets_did_you_mean(rtqual_cmd, args, hint):
    out = rtqual_cmd(*args)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and hint in out.stderr, out.stderr


def test_internal_probes_are_not_offered(rtqual_cmd):
    """fake and inject are for tests and the self-test: a user's typo is not answered with them."""
    out = rtqual_cmd("run", "fak")
    assert out.returncode == 1 and "timer" in out.stderr, out.stderr
    assert "fake" not in out.stderr and "inject" not in out.stderr
    assert "fake" not in rtqual_cmd("run", "--help").stdout


@pytest.mark.parametrize(
    "path,says", [("/nonexistent/bundle", "no such file or directory"), ("/etc/hostname", "not a directory")]
)
def test_a_missing_bundle_is_said_as_such(rtqual_cmd, path, says):
    for command in (["show"], ["verify"], ["report"], ["compare", path]):
        out = rtqual_cmd(*command, path)
        assert out.returncode == 1 and out.stderr.count("\n") == 1 and says in out.stderr, out.stderr


def test_unwritable_output(rtqual_cmd, tmp_path):
    out = rtqual_cmd("run", "timer", "--duration", "1s", "-o", "/proc/rtqual-bundle", "--allow-degraded")
    assert out.returncode == 1 and out.stderr.startswith("rtqual: error: cannot create bundle"), out.stderr


def test_version(rtqual_cmd):
    out = rtqual_cmd("--version")
    assert out.returncode == 0 and out.stdout.startswith("rtqual ") and "rtqual-probe" in out.stdout


def test_an_option_given_as_zero_is_kept_not_taken_for_absent():
    from rtqual import cli
    from rtqual.scenario import single

    a = cli.build_parser().parse_args(["run", "timer", "--warmup", "0"])
    assert single.probe_options_case("timer", a)["params"]["warmup"] == 0
    a = cli.build_parser().parse_args(["run", "switch", "--warmup", "0", "--cpus", "0"])
    assert single.probe_options_case("switch", a)["params"]["warmup"] == 0
    a = cli.build_parser().parse_args(["run", "ioc", "--ioc-rtprio", "0"])
    with pytest.raises(RtqError, match="--ioc-rtprio"):
        single.probe_options_case("ioc", a)


def test_timerlat_without_the_tracer_says_which_kernel_option_is_missing(tmp_path):
    """This VM's kernel has no timerlat tracer: exit 3 in one line naming CONFIG_TIMERLAT_TRACER (where the
    tracer exists, tests/kernels runs the probe for real)."""
    import os

    from rtqual.measure.host.trace import find_tracefs

    root = find_tracefs(open("/proc/self/mounts").read())
    if os.geteuid() != 0 or (root is not None and "timerlat" in (root / "available_tracers").read_text().split()):
        pytest.skip("needs root and a kernel without the timerlat tracer")
    p = rtqual_run("run", "timerlat", "--duration", "1s", "-o", tmp_path / "b")
    assert p.returncode == 3 and "CONFIG_TIMERLAT_TRACER" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr

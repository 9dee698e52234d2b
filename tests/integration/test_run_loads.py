"""`rtqual run PROBE --load ...`, a load that does not start, run_as beside probe, one program name in errors:
the fake probe, no root."""

import json
import os

import pytest

from conftest import needs_probe, show_json
from rtqual.errors import RtqError


def script(tmp_path, samples=((0, 5_000, 0), (1, 7_000, 0))):
    path = tmp_path / "s.txt"
    path.write_text("".join(f"sample {cpu} {lat} {skip}\n" for cpu, lat, skip in samples))
    return path


@pytest.mark.parametrize(
    "load,fragment",
    [
        ("hackbench,groups=x", "--load hackbench: groups: expected an integer, got 'x'"),
        ("hackbnch", "--load hackbnch: unknown load (did you mean 'hackbench'?)"),
        ("hackbench,grups=3", "--load hackbench: unknown option 'grups'"),
        ("hackbench,groups=0", "--load hackbench: option 'groups' must be in 1..10000, got 0"),
        ("cpu-hog,policy=fifo,force=maybe", "--load cpu-hog: force: expected true or false, got 'maybe'"),
        ("command", "--load command: option 'argv' is required"),
        ("command,argv=/nonexistent/prog", "program '/nonexistent/prog' is not an executable file"),
        ("network,mode=smtp", "option 'mode' must be one of udp, tcp, broadcast"),
        ("network,rate=0", "rate 0 (unpaced) is for mode tcp only"),
        ("network,peer=192.0.2.1", "interface and peer go together"),
        ("network,instances=3", "option 'instances' does not apply"),
        ("network,mode=udp,arp_rate=5", "arp_rate applies to mode broadcast only"),
        ("network,rate=2000000", "option 'rate' must be in 0..1000000"),
    ],
)
def test_a_bad_load_is_one_line_before_anything_runs(rtqual_cmd, tmp_path, load, fragment):
    out = rtqual_cmd("run", "timer", "--duration", "1s", "--load", load, "-o", tmp_path / "b", "-q")
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual: error: ") and fragment in lines[0], out.stderr
    assert not (tmp_path / "b").exists()  # checked before anything ran


def test_settle_only_with_a_load(rtqual_cmd, tmp_path):
    out = rtqual_cmd("run", "timer", "--settle", "1s", "-o", tmp_path / "b")
    assert out.returncode == 1 and "--settle: only with --load" in out.stderr, out.stderr


def test_load_values_follow_the_load_table():
    from rtqual.loadspec import parse_load

    assert parse_load("hackbench,groups=4,cpus=0,1") == {"type": "hackbench", "groups": 4, "cpus": "0,1"}
    assert parse_load("pi_stress,rr,groups=2") == {"type": "pi_stress", "rr": True, "groups": 2}
    assert parse_load("stress-ng,args=--cpu-method matrixprod") == {
        "type": "stress-ng",
        "args": ["--cpu-method", "matrixprod"],
    }
    with pytest.raises(RtqError, match="'x' is not key=value"):
        parse_load("hackbench,x")


@pytest.mark.parametrize(
    "argv,line",
    [
        (["run", "timer", "--bogus"], "rtqual: error: unrecognized arguments: --bogus (see --help)"),
        (["run", "timer", "--priority", "abc"], "rtqual: error: run timer: argument --priority: invalid int value"),
        (["frobnicate"], "rtqual: error: argument COMMAND: invalid choice: 'frobnicate'"),
    ],
)
def test_a_command_line_mistake_names_the_program_once(rtqual_cmd, argv, line):
    out = rtqual_cmd(*argv)
    assert out.returncode == 1 and out.stderr.startswith(line), out.stderr
    assert out.stderr.count("rtqual:") == 1 and out.stderr.count("\n") == 1, out.stderr


@needs_probe
def test_run_fake_under_a_load_records_it_and_writes_a_one_case_scenario(rtqual_cmd, tmp_path):
    out = rtqual_cmd(
        "run", "fake", "--script", script(tmp_path), "--load", "command,argv=sleep 60", "--settle", "100ms",
        "-o", tmp_path / "b", "-q",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    params = json.loads((tmp_path / "b" / "cases" / "001-fake" / "params.json").read_text())
    assert params["loads"] == [{"type": "command", "argv": "sleep 60"}]
    assert params["conditions"] == {"settle_ns": 100_000_000}
    result = json.loads((tmp_path / "b" / "cases" / "001-fake" / "result.json").read_text())
    assert result["verdict"] == "completed" and result["loads"][0]["alive_until_stop"], result["reason"]
    assert result["label"].endswith("under command")
    assert not (tmp_path / "b" / "scenario.toml").exists()  # the fake probe is not for scenario files


@needs_probe
def test_a_load_that_dies_at_once_makes_the_case_inconclusive_and_the_exit_code_agrees(rtqual_cmd, tmp_path):
    out = rtqual_cmd("run", "fake", "--script", script(tmp_path), "--load", "command,argv=false", "-o", tmp_path / "b")
    assert out.returncode == 4, out.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["verdict"] == "inconclusive" and manifest["status"] == "complete"
    case = show_json(tmp_path / "b")["cases"][0]
    assert case["verdict"] == "inconclusive" and case["reason"].startswith("load not running: command exited")


def not_startable(tmp_path):
    """An executable file the kernel cannot run (no #! and not ELF): found on disk, fails at exec."""
    bad = tmp_path / "not-a-program"
    bad.write_text("this is not a program\n")
    os.chmod(bad, 0o755)
    return bad


@needs_probe
def test_a_load_that_fails_to_start_makes_its_case_inconclusive_and_later_cases_still_run(tmp_path):
    from rtqual.measure.run.driver import run
    from rtqual.probes.catalog import probe_case
    from rtqual.results import bundle

    s = script(tmp_path)
    first = probe_case("fake", {"script": str(s)}, [0], "001-bad-load")
    first.update(loads=[{"type": "command", "argv": [str(not_startable(tmp_path))]}], conditions={"settle_ns": 0})
    second = probe_case("fake", {"script": str(s)}, [0], "002-idle")
    path = run([first, second], ["test"], output=str(tmp_path / "b"), quiet=True).path
    data = bundle.load(path)
    assert [r["verdict"] for r in data["cases"]] == ["inconclusive", "completed"]
    assert data["cases"][0]["reason"].startswith("load did not start: load 'command': cannot start")
    assert data["manifest"]["status"] == "complete" and data["manifest"]["verdict"] == "inconclusive"


@needs_probe
def test_a_load_that_fails_to_start_exit_code_and_manifest_agree(rtqual_cmd, tmp_path):
    load = f"command,argv={not_startable(tmp_path)}"
    out = rtqual_cmd("run", "fake", "--script", script(tmp_path), "--load", load, "-o", tmp_path / "b", "-q")
    assert out.returncode == 4, out.stderr
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["verdict"] == "inconclusive"


@needs_probe
def test_run_as_is_recorded_beside_probe(rtqual_cmd, tmp_path):
    out = rtqual_cmd("run", "fake", "--script", script(tmp_path), "-o", tmp_path / "b", "-q")
    assert out.returncode == 0, out.stderr
    d = tmp_path / "b" / "cases" / "001-fake"
    for f in ("params.json", "result.json"):
        doc = json.loads((d / f).read_text())
        assert doc["probe"] == "fake" and doc["run_as"] == "fake", f
    case = show_json(tmp_path / "b")["cases"][0]
    assert case["probe"] == "fake" and case["run_as"] == "fake"


def test_a_service_probe_runs_as_the_name_given():
    from rtqual.probes.catalog import probe_case

    case = probe_case("ioc", {}, [0], "001-ioc")
    assert case["probe"] == "iocresp" and case["run_as"] == "ioc"
    assert case["args"][:4] == ["--in", "$(IOC_IN)", "--out", "$(IOC_OUT)"] and case["service"]["type"] == "ioc"


def test_the_fake_probe_is_hidden_from_help(rtqual_cmd):
    out = rtqual_cmd("run", "--help")
    assert out.returncode == 0 and "timer" in out.stdout
    assert "fake" not in out.stdout and "SUPPRESS" not in out.stdout, out.stdout

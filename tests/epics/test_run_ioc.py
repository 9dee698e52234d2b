"""`rtqual run ioc`: the iocresp harness against a real IOC the runner starts and always stops."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import case_result, gone, processes_naming, rtqual, rtqual_argv, run_args

from rtqual.publish.views import stage_table


# (preset, mode, timer baseline): the IOC case is 002-ioc after a baseline, else 001-ioc.
@pytest.fixture(
    scope="module", params=[("kek", "callback", "1s"), ("aps", "immediate", "0")], ids=lambda p: "-".join(p[:2])
)
def run(request, tmp_path_factory):
    preset, mode, baseline = request.param
    out = tmp_path_factory.mktemp("ioc") / "bundle"
    ioc = ["--preset", preset, "--mode", mode]
    p = rtqual(*run_args("ioc", out, *ioc, "--duration", "2s", "--rate", "200", baseline=baseline))
    case = out / "cases" / ("001-ioc" if baseline == "0" else "002-ioc")
    result = json.loads((case / "result.json").read_text()) if (case / "result.json").exists() else None
    return p, out, result


def test_baseline_timer_case_comes_first_in_the_same_bundle(run):
    p, out, result = run
    show = json.loads(rtqual("show", "--json", str(out)).stdout)
    probes = [c["probe"] for c in show["cases"]]
    assert probes == (["timer", "iocresp"] if result["id"] == "002-ioc" else ["iocresp"])
    if len(probes) == 2:
        assert show["cases"][0]["stats"]["count"] > 0


def test_run_ioc_exits_0_and_prints_stages(run):
    p, _, _ = run
    assert p.returncode == 0, p.stdout + p.stderr
    for word in ("wake", "dispatch", "chain", "return", "total", "EPICS 7."):
        assert word in p.stdout


def test_every_stimulus_answered_count_matches_rate(run):
    p, out, result = run
    show = json.loads(rtqual("show", "--json", str(out)).stdout)
    count = show["cases"][-1]["stats"]["count"]
    assert count == 2 * 200  # warm-up excluded
    st = result["probe_summary"]["stimuli"]
    assert st["sent"] == st["answered"] == count + st["warmup"]
    assert st["unanswered"] == 0 and st["mismatched"] == 0


def test_stages_add_up_to_total(run):
    _, _, result = run
    stages = result["probe_summary"]["stages"]
    total = result["stats"]
    assert set(stages) == {"wake", "dispatch", "chain", "return"}
    for s in stages.values():
        assert s["count"] == total["count"]
        assert 0 <= s["min_ns"] <= s["p50_ns"] <= s["max_ns"]
    # per stimulus the stages sum to the total, so the sums of minima / maxima bound it
    assert sum(s["min_ns"] for s in stages.values()) <= total["min_ns"] * 1.002 + 1
    assert sum(s["max_ns"] for s in stages.values()) >= total["max_ns"] * 0.998
    # and the means add up exactly (up to rounding)
    assert abs(sum(s["mean_ns"] for s in stages.values()) - total["mean_ns"]) <= 4 + total["mean_ns"] * 0.002
    rows = [line for line in stage_table(result).splitlines() if not line.startswith("'-'")]  # the N note apart
    assert len(rows) == 7  # header, rule, wake, dispatch, chain, return, total


def test_ioc_recorded_and_stopped(run):
    _, out, result = run
    ioc = result["ioc"]
    assert ioc["epics_version"].startswith("7.") and ioc["threads"]
    assert all({"comm", "cls", "rtprio"} <= set(t) for t in ioc["threads"])
    assert ioc["affinity"] and ioc["vm_lck"] is not None
    assert gone(ioc["pid"]), "IOC still running after rtqual run ioc"
    assert (out / "cases" / result["id"] / "ioc.stderr").exists()
    db = (out / "cases" / result["id"] / "ioc.db").read_text()
    assert 'record(bi, "$(P)in")' in db and ('record(calc, "$(P)calc")' in db) == (ioc["preset"] == "aps")


def iocs_of(parent: int) -> list[int]:
    """Pids of IOC processes (rtqual.measure.epics.iocmain) whose parent is `parent`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read()
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        if b"rtqual.measure.epics.iocmain" in cmd and int(stat[stat.rindex(")") + 2 :].split()[1]) == parent:
            out.append(int(d))
    return out


def start_and_wait_for_ioc(tmp_path):
    """`rtqual run ioc` for 60 s; returns (Popen, bundle, IOC pid) once the harness measures."""
    import time

    out = tmp_path / "bundle"
    argv = rtqual_argv(*run_args("ioc", out, "--duration", "60s"))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stream = out / "cases" / "001-ioc" / "stream.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if stream.exists() and '"progress"' in stream.read_text():
            break
        time.sleep(0.1)
    else:
        p.kill()
        pytest.fail(f"the IOC case never started measuring: {p.communicate()}")
    pids = iocs_of(p.pid)
    assert len(pids) == 1
    return p, out, pids[0]


def test_sigint_keeps_the_measured_part_and_stops_the_ioc(tmp_path):
    p, out, ioc_pid = start_and_wait_for_ioc(tmp_path)
    p.send_signal(2)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 4, err  # inconclusive: interrupted
    result = case_result(out)
    assert result["verdict"] == "inconclusive" and result["stats"]["count"] > 0
    assert result["ioc"]["exit_code"] is not None
    assert gone(ioc_pid)
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"


def test_sigkill_of_rtqual_still_stops_the_ioc(tmp_path):
    import time

    p, out, ioc_pid = start_and_wait_for_ioc(tmp_path)
    cmd = open(f"/proc/{ioc_pid}/cmdline").read().split("\0")
    ioc_dir = cmd[cmd.index("--orphan-removes") + 1]
    assert os.path.isdir(ioc_dir)
    p.kill()
    p.communicate(timeout=30)
    deadline = time.monotonic() + 15  # PR_SET_PDEATHSIG: SIGTERM, then the IOC's clean exit
    while not gone(ioc_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(ioc_pid), "IOC left running after rtqual was killed"
    assert not os.path.exists(ioc_dir), (
        "the IOC's temp folder is left after rtqual was killed: "
        f"{os.listdir(ioc_dir)}; the IOC said "
        f"{(out / 'cases' / '001-ioc' / 'ioc.stderr').read_text()[-500:]}"
    )


def test_a_bad_user_database_is_a_clear_error(tmp_path):
    db = tmp_path / "user.db"
    db.write_text('record(ai, "$(P)x") {\n    field(NOSUCH, "1")\n}\n')
    p = rtqual(*run_args("ioc", tmp_path / "b", "--ioc-db", db, "--duration", "1s", degraded=False))
    assert p.returncode == 1
    assert "doesn't have a field 'NOSUCH'" in p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "NOSUCH" in (tmp_path / "b" / "cases" / "001-ioc" / "ioc.db").read_text()  # kept to look at


# GPIO lines (a board wired STIM -> IN, OUT -> RESP). This VM has no GPIO chip: the clear errors are
# tested as they are, the wired run with fake_gpio.c, a test double of the v2 character device in
# every process (LD_PRELOAD) whose "wires" are FIFOs. It tests rtqual's GPIO path end to end (the
# harness, the device support, the times FIFO, the stage arithmetic), not GPIO hardware.


@pytest.fixture(scope="module")
def fake_gpio(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc missing (it builds the GPIO test double)")
    lib = tmp_path_factory.mktemp("fakegpio") / "libfakegpio.so"
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-Wall",
            "-shared",
            "-fPIC",
            "-o",
            str(lib),
            str(Path(__file__).with_name("fake_gpio.c")),
            "-ldl",
        ],
        check=True,
    )

    def env(wires: str, folder: Path) -> dict:
        folder.mkdir()
        return {
            **os.environ,
            "LD_PRELOAD": str(lib),
            "RTQUAL_FAKE_GPIO_DIR": str(folder),
            "RTQUAL_FAKE_GPIO_WIRES": wires,
        }

    return env


GPIO = ["--gpio", "/dev/gpiochip0:17,27,22,23", "--duration", "2s"]  # the lines fake_gpio wires


def test_gpio_wired_run_answers_every_stimulus_with_the_drive_stage(tmp_path, fake_gpio):
    out = tmp_path / "b"
    p = rtqual(*run_args("ioc", out, *GPIO, "--rate", "100"), env=fake_gpio("17:27,22:23", tmp_path / "wires"))
    assert p.returncode == 0, p.stdout + p.stderr
    result = case_result(out)
    assert result["label"] == "ioc kek callback gpio 100 Hz" and result["params"]["gpio_stim"] == "/dev/gpiochip0:17"
    st, stages, total = result["probe_summary"]["stimuli"], result["probe_summary"]["stages"], result["stats"]
    assert total["count"] == 200 and st["sent"] == st["answered"] == 200 + st["warmup"]
    assert st["mismatched"] == st["unanswered"] == st["stray_edges"] == 0
    assert list(stages) == ["drive", "wake", "dispatch", "chain", "return"]
    assert all(s["count"] == 200 and 0 <= s["min_ns"] <= s["max_ns"] for s in stages.values())
    assert abs(sum(s["mean_ns"] for s in stages.values()) - total["mean_ns"]) <= 5 + total["mean_ns"] * 0.002
    assert "drive = stimulus line toggled" in rtqual("show", out).stdout


def test_gpio_response_not_wired_is_one_clear_error(tmp_path, fake_gpio):
    out = tmp_path / "b"
    p = rtqual(*run_args("ioc", out, *GPIO, "--timeout", "1s"), env=fake_gpio("17:27,22:24", tmp_path / "wires"))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    result = case_result(out)
    assert result["verdict"] == "error" and "\n" not in result["reason"]
    assert (
        "(are /dev/gpiochip0:17 -> the IOC's input and the IOC's output -> /dev/gpiochip0:23 wired?)"
        in result["reason"]
    )


@pytest.mark.parametrize(
    "spec", ["/dev/gpiochip0:1,2,3", "/dev/gpiochip0:1,2,3,3", "1,2,3,4", "/dev/gpiochip0:a,2,3,4"]
)
def test_a_bad_gpio_spec_is_one_line(tmp_path, spec):
    p = rtqual(*run_args("ioc", tmp_path / "b", "--gpio", spec, "--duration", "1s", degraded=False))
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "CHIP:STIM,IN,OUT,RESP" in p.stderr, p.stderr


def test_gpio_lines_reach_the_ioc_and_the_harness(tmp_path):
    from rtqual.measure.epics.service import IocService

    svc = IocService({"type": "ioc", "gpio": "/dev/gpiochip7:17,27,22,23"})
    try:
        assert svc.ioc.gpio_in == "/dev/gpiochip7:27 edge=both" and svc.ioc.gpio_out == "/dev/gpiochip7:22"
        args = svc.resolve(["--in", "$(IOC_IN)", "--out", "$(IOC_OUT)", "--rate", "25"])
        assert args == [
            "--gpio-stim",
            "/dev/gpiochip7:17",
            "--gpio-resp",
            "/dev/gpiochip7:23",
            "--out",
            str(svc.ioc.fifo_out),
            "--rate",
            "25",
        ]  # the IOC's times still come on --out
    finally:
        svc.discard()
    # a chip that is not there: the IOC says so, one verdict, nothing left running
    gpio = ["--gpio", "/dev/gpiochip99:17,27,22,23", "--ioc-prefix", "rtqgpio:"]
    p = rtqual(*run_args("ioc", tmp_path / "b", *gpio, "--duration", "1s", degraded=False))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    result = case_result(tmp_path / "b")
    assert result["verdict"] == "error" and "/dev/gpiochip99: No such file or directory" in result["reason"]
    assert result["label"] == "ioc kek callback gpio 50 Hz"
    assert processes_naming("rtqgpio:") == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["--gpio-stim", "/dev/gpiochip99:1", "--out", "OUT"], "--gpio-stim and --gpio-resp go together"),
        (
            ["--gpio-stim", "/dev/gpiochip99", "--gpio-resp", "/dev/gpiochip99:2", "--out", "OUT"],
            "want /dev/gpiochipN:LINE",
        ),
        (
            ["--in", "OUT", "--gpio-stim", "/dev/gpiochip99:1", "--gpio-resp", "/dev/gpiochip99:2", "--out", "OUT"],
            "one stimulus, a FIFO or a GPIO line",
        ),
        (
            [
                "--gpio-stim",
                "/dev/gpiochip99:1",
                "--gpio-resp",
                "/dev/gpiochip99:2",
                "--out",
                "OUT",
                "--allow-degraded",
            ],
            "--gpio-stim /dev/gpiochip99:1: No such file or directory",
        ),
    ],
)
def test_iocresp_gpio_options_are_checked(tmp_path, args, words):
    from rtqual.measure.run import native

    os.mkfifo(tmp_path / "out.fifo")
    args = [str(tmp_path / "out.fifo") if a == "OUT" else a for a in args]
    p = subprocess.run(
        [native.probe_path(), "iocresp", *args, "--loops", "3"], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and words in p.stderr, p.stderr

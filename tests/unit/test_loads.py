"""Load drivers: real processes are started and stopped; no test may leave one behind."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from rtqual.errors import EXIT_SKIP, RtqError
from rtqual.measure.loads import LOADS, LoadSet, make_load
from rtqual.measure.loads.base import _may_use_rt
from rtqual.measure.loads.hackbench import Hackbench
from rtqual.units import online_cpus

ONLINE = online_cpus()
needs_2_cpus = pytest.mark.skipif(len(ONLINE) < 2, reason="needs 2 online CPUs (one left free)")
needs_rt = pytest.mark.skipif(not _may_use_rt(99), reason="needs root or CAP_SYS_NICE for SCHED_FIFO/RR")


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """Exists and is not a zombie (this container's init does not reap orphans)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _session(sid: int) -> list[int]:
    """Live processes of a session: a load instance and all its descendants."""
    return [
        int(d)
        for d in os.listdir("/proc")
        if d.isdigit() and (f := _stat(int(d))) and f[0] not in ("Z", "X") and int(f[3]) == sid
    ]


def _cpu_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_for(cond, timeout_s=3.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    return cond()


@pytest.fixture
def loads(tmp_path):
    """make(spec) -> a started load; afterwards every load is stopped and nothing may survive."""
    made = []

    def make(spec, start=True):
        load = make_load(spec)
        made.append(load)
        if start:
            load.prepare()
            load.start(tmp_path)
        return load

    make.log_dir = tmp_path
    yield make
    pids = [inst["pid"] for load in made for inst in load.collect()["instances"]]
    for load in made:
        load.stop(timeout_s=2)
    survivors = [p for pid in pids for p in _session(pid)] + [pid for pid in pids if _alive(pid)]
    for pid in survivors:  # clean up, then fail
        os.kill(pid, 9)
    assert not survivors, f"processes left behind: {survivors}"


# -- spec validation ----------------------------------------------------------------------------


def test_registry_has_the_drivers():
    assert set(LOADS) == {"hackbench", "pi_stress", "stress-ng", "cpu-hog", "command", "network", "inject"}


def test_every_declared_type_has_its_driver():
    """One source of truth: a driver's options are its type's declaration (rtqual.loadspec), in the same order."""
    from rtqual import loadspec

    assert list(LOADS) == list(loadspec.TYPES)
    for kind, cls in LOADS.items():
        assert cls.type == kind and cls.OPTIONS is loadspec.TYPES[kind].options


def test_check_gives_every_option_and_the_priority():
    from rtqual.loadspec import DEFAULT_RT_PRIORITY, check

    values = check({"type": "command", "argv": "sleep 1", "policy": "rr", "cpus": "1,0"})
    assert values["argv"] == ["sleep", "1"] and values["cpus"] == [0, 1] and values["finite"] is False
    assert values["priority"] == DEFAULT_RT_PRIORITY and values["instances"] is None
    assert check({"type": "cpu-hog"})["priority"] == 0
    load = make_load({"type": "command", "argv": "sleep 1", "policy": "rr", "cpus": "1,0"})
    assert load.priority == DEFAULT_RT_PRIORITY and load.options == {"argv": ["sleep", "1"], "finite": False}


def test_load_options_are_fields():
    """Loads declare their options with the same Field as probes and scenario files."""
    from rtqual.fields import Field

    for cls in LOADS.values():
        fields = cls.option_fields()
        assert list(fields)[:6] == ["name", "cpus", "policy", "priority", "instances", "force"]
        assert all(isinstance(f, Field) for f in fields.values())
    assert Hackbench.option_fields()["groups"].lo == 1
    assert LOADS["command"].option_fields()["argv"].required


def test_loads_do_not_import_the_scenario_package():
    code = "import sys, rtqual.measure.loads; sys.exit('rtqual.scenario' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_docs_loads_md_is_current():
    from pathlib import Path

    from rtqual.loadspec import options_markdown

    committed = (Path(__file__).resolve().parents[2] / "docs/loads.md").read_text()
    assert committed == options_markdown(), "regenerate: python -m rtqual.measure.loads > docs/loads.md"


def test_unknown_key_is_rejected_with_its_name():
    with pytest.raises(RtqError, match="unknown option 'grops'"):
        make_load({"type": "hackbench", "grops": 4})


def test_unknown_or_missing_type():
    with pytest.raises(RtqError, match="unknown type 'hackbanch'.*hackbench"):
        make_load({"type": "hackbanch"})
    with pytest.raises(RtqError, match="missing 'type'"):
        make_load({"groups": 4})


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "hackbench", "groups": "4"}, "'groups' must be an integer"),
        ({"type": "hackbench", "groups": True}, "'groups' must be an integer"),
        ({"type": "hackbench", "groups": 0}, "'groups' must be in 1"),
        ({"type": "hackbench", "mode": "fork"}, "'mode' must be one of process, thread"),
        ({"type": "cpu-hog", "policy": "deadline"}, "'policy' must be one of"),
        ({"type": "cpu-hog", "priority": 10}, "priority applies to policy fifo or rr only"),
        ({"type": "cpu-hog", "policy": "fifo", "priority": 0}, "must be in 1..99"),
        ({"type": "cpu-hog", "cpus": "zero"}, "not a CPU list"),
        ({"type": "cpu-hog", "cpus": [-1]}, "'cpus' must be a CPU list"),
        ({"type": "cpu-hog", "force": "yes"}, "'force' must be true or false"),
        ({"type": "stress-ng", "args": "--cpu-method matrixprod"}, "'args' must be a list of strings"),
        ({"type": "stress-ng", "stressor": "cpu; rm"}, "not a stressor name"),
        ({"type": "command"}, "'argv' is required"),
        ({"type": "command", "argv": "sleep 'unbalanced"}, "cannot be split"),
        ({"type": "pi_stress", "cpus": "1"}, "'cpus' is not supported"),
    ],
)
def test_bad_values_are_rejected_naming_the_key(spec, message):
    with pytest.raises(RtqError, match=message):
        make_load(spec)


def test_argv_string_is_split_like_a_shell_line():
    load = make_load({"type": "command", "argv": "sh -c 'sleep 1000'"})
    assert load.options["argv"] == ["sh", "-c", "sleep 1000"]


def test_defaults():
    hog = make_load({"type": "cpu-hog"})
    assert hog.instances == len(ONLINE) and hog.policy == "other" and hog.priority == 0
    assert make_load({"type": "command", "argv": "true", "policy": "rr", "cpus": "0"}).priority < 50
    assert make_load({"type": "command", "argv": "true", "cpus": "0-1,1"}).cpus == [0, 1]


# -- preparation: tools, permissions, safety ----------------------------------------------------


def test_missing_tool_names_the_package(monkeypatch, tmp_path):
    class NoSuchTool(Hackbench):
        tool = "rtq-no-such-tool"

    with pytest.raises(RtqError, match=r"^rtq-no-such-tool not found: apt-get install rt-tests$"):
        NoSuchTool().prepare()
    monkeypatch.setenv("PATH", str(tmp_path))
    for kind, package in (("hackbench", "rt-tests"), ("stress-ng", "stress-ng")):
        with pytest.raises(RtqError, match=f"not found: apt-get install {package}"):
            make_load({"type": kind}).prepare()
    with pytest.raises(RtqError, match="pi_stress not found: apt-get install rt-tests"):
        make_load({"type": "pi_stress", "force": True}).prepare()


def test_command_missing_program_is_a_clear_error():
    with pytest.raises(RtqError, match="program 'rtq-no-such-program' not found on PATH"):
        make_load({"type": "command", "argv": ["rtq-no-such-program", "x"]}).prepare()
    with pytest.raises(RtqError, match="program '/nonexistent/rtq' is not an executable file"):
        make_load({"type": "command", "argv": "/nonexistent/rtq"}).prepare()


def test_rt_without_permission_is_a_skip(monkeypatch):
    monkeypatch.setattr("rtqual.measure.loads.base._may_use_rt", lambda priority: False)
    with pytest.raises(RtqError, match="policy fifo needs root or CAP_SYS_NICE") as e:
        make_load({"type": "command", "argv": "true", "policy": "fifo", "cpus": "0"}).prepare()
    assert e.value.exit_code == EXIT_SKIP
    with pytest.raises(RtqError, match="pi_stress needs root or CAP_SYS_NICE"):
        make_load({"type": "pi_stress", "force": True}).prepare()


def test_offline_cpu_is_refused():
    with pytest.raises(RtqError, match="CPU 4095 is not online"):
        make_load({"type": "command", "argv": "true", "cpus": [4095]}).prepare()


@needs_rt
def test_rt_load_on_every_cpu_is_refused_unless_forced():
    every = ",".join(map(str, ONLINE))
    for spec in (
        {"type": "command", "argv": "true", "policy": "fifo"},
        {"type": "command", "argv": "true", "policy": "rr", "cpus": every},
        {"type": "cpu-hog", "policy": "fifo", "priority": 10},
    ):
        with pytest.raises(
            RtqError, match="RT load on every CPU can freeze the machine; leave one CPU free or set force = true"
        ):
            make_load(spec).prepare()
        make_load({**spec, "force": True}).prepare()
    with pytest.raises(
        RtqError, match="pi_stress runs SCHED_FIFO threads on every CPU, which can freeze the machine; set force = true"
    ):
        make_load({"type": "pi_stress"}).prepare()


@needs_rt
@needs_2_cpus
def test_rt_load_leaving_a_cpu_free_is_accepted():
    make_load({"type": "cpu-hog", "policy": "fifo", "cpus": ONLINE[1:]}).prepare()


# -- running loads ----------------------------------------------------------------------------


def test_cpu_hog_burns_cpu_pinned_one_per_cpu(loads):
    hog = loads({"type": "cpu-hog"})
    insts = hog.collect()["instances"]
    assert [i["cpus"] for i in insts] == [[c] for c in ONLINE]
    before = {i["pid"]: _wait_for(lambda pid=i["pid"]: _alive(pid) and _cpu_ticks(pid)) for i in insts}
    time.sleep(0.6)
    assert hog.poll() is None
    for pid, ticks in before.items():
        assert _cpu_ticks(pid) - ticks >= os.sysconf("SC_CLK_TCK") * 0.1, "cpu-hog does not burn CPU"
    for inst in insts:
        assert _cpus_allowed(inst["pid"]) == str(inst["cpus"][0])
    hog.stop()
    assert {i["stopped_by"] for i in hog.collect()["instances"]} == {"SIGINT"}
    assert (loads.log_dir / "load-cpu-hog-0.log").read_text() == ""  # no traceback


def _cpus_allowed(pid: int) -> str:
    with open(f"/proc/{pid}/status") as f:
        return next(line.split()[1] for line in f if line.startswith("Cpus_allowed_list:"))


def test_command_start_poll_stop_collect(loads):
    load = loads({"type": "command", "argv": ["sleep", "1000"], "name": "sleeper"})
    pid = load.collect()["instances"][0]["pid"]
    assert _alive(pid) and os.getpgid(pid) == pid and os.getsid(pid) == pid
    assert load.poll() is None
    load.stop()
    load.stop()  # idempotent
    result = load.collect()
    inst = result["instances"][0]
    assert not _alive(pid)
    assert inst["stopped_by"] == "SIGINT" and inst["exit_code"] == -2
    assert inst["argv"] == [shutil.which("sleep"), "1000"] and inst["log"] == "load-sleeper-0.log"
    assert result["alive_until_stop"] and result["dead_reason"] is None and result["leftover_pids"] == []
    assert result["start_ns"] <= inst["start_ns"] <= inst["end_ns"] <= result["stop_ns"]
    assert (loads.log_dir / "load-sleeper-0.log").exists()
    assert load.poll() is None


def test_grandchildren_die_with_the_load(loads):
    load = loads({"type": "command", "argv": ["sh", "-c", "sleep 1000 & sleep 1000"]})
    sid = load.collect()["instances"][0]["pid"]
    family = _wait_for(lambda: len(_session(sid)) == 3 and _session(sid))
    assert family and len(family) == 3, "sh and its two sleeps"
    load.stop(timeout_s=0.5)
    assert [pid for pid in family if _alive(pid)] == []
    # sh starts background jobs with SIGINT ignored: only the SIGTERM step ends them
    assert load.collect()["instances"][0]["stopped_by"] == "SIGTERM"


def test_orphaned_grandchild_is_stopped_too(loads):
    load = loads({"type": "command", "argv": ["sh", "-c", "sleep 1000 & exit 0"], "finite": True})
    sid = load.collect()["instances"][0]["pid"]
    orphan = _wait_for(lambda: [p for p in _session(sid) if p != sid])
    assert orphan
    load.stop(timeout_s=0.5)
    assert not _alive(orphan[0])
    assert load.collect()["instances"][0]["exit_code"] == 0


def test_stop_escalates_when_signals_are_ignored(loads):
    load = loads({"type": "command", "argv": ["sh", "-c", "trap '' INT TERM; sleep 1000; sleep 1000"]})
    time.sleep(0.2)  # let the trap be set
    t0 = time.monotonic()
    load.stop(timeout_s=0.3)
    assert time.monotonic() - t0 < 3
    assert load.collect()["instances"][0]["stopped_by"] == "SIGKILL"


def test_dead_load_reports_exit_code(loads):
    load = loads({"type": "command", "argv": ["sh", "-c", "exit 3"]})
    reason = _wait_for(load.poll)
    assert reason and reason.startswith("command exited with code 3 after ") and "load-command-0.log" in reason
    load.stop()
    result = load.collect()
    assert result["dead_reason"] == reason and not result["alive_until_stop"]
    assert result["instances"][0]["exit_code"] == 3 and result["instances"][0]["stopped_by"] == "exited"


def test_dead_load_reports_signal_and_instance(loads):
    load = loads({"type": "command", "argv": "sh -c 'kill -9 $$'", "instances": 2, "name": "k"})
    reason = _wait_for(load.poll)
    assert reason and "was killed by SIGKILL" in reason and reason.startswith("k[")


def test_clean_exit_is_dead_unless_finite(loads):
    assert "code 0" in _wait_for(loads({"type": "command", "argv": "true"}).poll)
    finite = loads({"type": "command", "argv": "true", "finite": True, "name": "once"})
    time.sleep(0.3)
    assert finite.poll() is None


@needs_2_cpus
def test_affinity_is_applied(loads):
    load = loads({"type": "command", "argv": "sleep 1000", "cpus": str(ONLINE[1])})
    assert _cpus_allowed(load.collect()["instances"][0]["pid"]) == str(ONLINE[1])


@pytest.mark.parametrize(
    "policy, expected", [("batch", os.SCHED_BATCH), ("idle", os.SCHED_IDLE), ("other", os.SCHED_OTHER)]
)
def test_normal_policies_are_applied(loads, policy, expected):
    pid = loads({"type": "command", "argv": "sleep 1000", "policy": policy}).collect()["instances"][0]["pid"]
    assert os.sched_getscheduler(pid) == expected


@needs_rt
@needs_2_cpus
def test_rt_policy_and_priority_are_applied(loads):
    fifo = loads({"type": "command", "argv": "sleep 1000", "policy": "fifo", "priority": 5, "cpus": ONLINE[1:]})
    rr = loads({"type": "command", "argv": "sleep 1000", "policy": "rr", "cpus": ONLINE[1:], "name": "rr"})
    pid = fifo.collect()["instances"][0]["pid"]
    assert os.sched_getscheduler(pid) == os.SCHED_FIFO and os.sched_getparam(pid).sched_priority == 5
    pid = rr.collect()["instances"][0]["pid"]
    assert os.sched_getscheduler(pid) == os.SCHED_RR and os.sched_getparam(pid).sched_priority == 1


def test_start_requires_prepare(loads):
    load = loads({"type": "command", "argv": "sleep 1000"}, start=False)
    with pytest.raises(RtqError, match="before prepare"):
        load.start(loads.log_dir)


def test_loadset_names_polls_and_stops_everything(loads, tmp_path):
    a = loads({"type": "command", "argv": "sleep 1000"}, start=False)
    b = loads({"type": "command", "argv": "sleep 1000"}, start=False)
    loadset = LoadSet([a, b])
    assert [a.name, b.name] == ["command", "command-2"]
    loadset.prepare_all()
    loadset.start_all(tmp_path)
    assert loadset.poll_all() is None
    loadset.stop_all()
    loadset.stop_all()
    assert [r["instances"][0]["stopped_by"] for r in loadset.collect_all()] == ["SIGINT", "SIGINT"]
    assert (tmp_path / "load-command-2-0.log").exists()


def test_loadset_stops_started_loads_when_a_start_fails(loads, tmp_path):
    script = tmp_path / "vanishing"
    script.write_text("#!/bin/sh\nsleep 1000\n")
    script.chmod(0o755)
    good = loads({"type": "command", "argv": "sleep 1000"}, start=False)
    bad = loads({"type": "command", "argv": [str(script)], "name": "bad"}, start=False)
    loadset = LoadSet([good, bad])
    loadset.prepare_all()
    script.unlink()
    with pytest.raises(RtqError, match="load 'bad': cannot start"):
        loadset.start_all(tmp_path)
    pid = good.collect()["instances"][0]["pid"]
    assert not _alive(pid) and good.collect()["instances"][0]["stopped_by"] == "SIGINT"
    loadset.stop_all()  # the runner's finally: still fine


def test_respawn_passes_failures_on():
    run = [sys.executable, "-m", "rtqual.measure.loads.respawn", "sh", "-c"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    assert subprocess.run(run + ["exit 5"], env=env, timeout=20).returncode == 5
    assert subprocess.run(run + ["kill -TERM $$"], env=env, timeout=20).returncode == -15


# -- the real tools ----------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("hackbench") is None, reason="hackbench missing: apt-get install rt-tests")
def test_hackbench_keeps_running_until_stopped(loads):
    # One run of 10 loops takes ~10 ms: alive after 1 s only because it is restarted.
    load = loads({"type": "hackbench", "groups": 1, "fds": 2, "loops": 10, "transport": "pipe"})
    time.sleep(1.0)
    assert load.poll() is None
    sid = load.collect()["instances"][0]["pid"]
    assert len(_session(sid)) >= 1
    load.stop()
    text = (loads.log_dir / "load-hackbench-0.log").read_text()
    assert text.count("Time:") == 1, "only the first run's stdout is kept"


def test_hackbench_failure_is_a_dead_load(loads, monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "hackbench"  # fails like hackbench on a bad option
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'hackbench: bad option' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    load = loads({"type": "hackbench"})
    assert "hackbench exited with code 1 after" in _wait_for(load.poll, 5)
    assert "bad option" in (loads.log_dir / "load-hackbench-0.log").read_text()


@pytest.mark.skipif(shutil.which("pi_stress") is None, reason="pi_stress missing: apt-get install rt-tests")
@needs_rt
def test_pi_stress_runs_until_sigint(loads):
    load = loads({"type": "pi_stress", "force": True, "groups": 1})
    time.sleep(0.5)
    assert load.poll() is None
    load.stop()
    assert load.collect()["instances"][0]["stopped_by"] == "SIGINT"


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng missing: apt-get install stress-ng")
def test_stress_ng_runs_until_stopped(loads):
    load = loads(
        {
            "type": "stress-ng",
            "stressor": "cpu",
            "workers": 1,
            "cpus": ONLINE[-1:],
            "args": ["--cpu-method", "matrixprod"],
        }
    )
    sid = load.collect()["instances"][0]["pid"]
    assert _wait_for(lambda: len(_session(sid)) >= 2), "stress-ng and its worker"
    time.sleep(0.3)
    assert load.poll() is None
    assert all(_cpus_allowed(pid) == str(ONLINE[-1]) for pid in _session(sid))
    load.stop()
    assert load.collect()["instances"][0]["argv"][1:5] == ["--cpu", "1", "--timeout", "0"]


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng missing: apt-get install stress-ng")
def test_stress_ng_unknown_stressor():
    with pytest.raises(RtqError, match="stress-ng has no stressor 'rtq-nope'"):
        make_load({"type": "stress-ng", "stressor": "rtq-nope"}).prepare()

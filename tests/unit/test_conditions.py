"""Conditions: cpufreq on a fake sysfs tree (anywhere), cgroup cpusets for real (root only)."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from rtqual.errors import RtqError
from rtqual.measure.conditions import applier, objects
from rtqual.measure.conditions.applier import Conditions, not_applied, order_min_max
from rtqual.measure.conditions.journal import restore_from_records
from rtqual.measure.conditions.objects import (
    Cpuset,
    cpuset_mount,
    enable_cpuset_controller,
    find_cpuset_mount,
    make_cpuset,
)
from rtqual.measure.conditions.restore import restore_from_bundle

CPUFREQ = {
    "scaling_governor": "schedutil",
    "scaling_available_governors": "performance powersave schedutil",
    "cpuinfo_min_freq": "300000",
    "cpuinfo_max_freq": "1500000",
    "scaling_min_freq": "600000",
    "scaling_max_freq": "1500000",
    "scaling_cur_freq": "1200000",
}


def fake_tree(root: Path, cpus=4, shared=False, **files) -> Path:
    """/sys/devices/system/cpu with cpufreq per CPU (or one policy shared by all when shared)."""
    base = root / "sys/devices/system/cpu"
    base.mkdir(parents=True)
    (base / "online").write_text(f"0-{cpus - 1}\n")
    for cpu in range(cpus):
        d = base / f"cpu{cpu}"
        d.mkdir()
        if shared and cpu > 0:
            (d / "cpufreq").symlink_to(base / "cpu0/cpufreq")
            continue
        (d / "cpufreq").mkdir()
        for name, value in {**CPUFREQ, **files}.items():
            (d / "cpufreq" / name).write_text(value + "\n")
    return root


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): p.read_text().strip()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def checked_writes(monkeypatch):
    """Every write goes through: assert min <= max holds in the fake tree after each one."""
    written = []
    real = objects._write

    def write(path, value):
        real(path, value)
        written.append((Path(path).name, value))
        d = Path(path).parent
        if (d / "scaling_min_freq").exists():
            lo = int((d / "scaling_min_freq").read_text())
            hi = int((d / "scaling_max_freq").read_text())
            assert lo <= hi, f"min {lo} > max {hi} after writing {path}"

    monkeypatch.setattr(objects, "_write", write)
    return written


# ---------------------------------------------------------------- cpufreq, fake tree


def test_governor_and_frequency_round_trip(tmp_path, checked_writes):
    root = fake_tree(tmp_path)
    before = snapshot(root)
    c = Conditions(root)
    records = c.apply({"governor": "performance", "frequency_khz": 1000000, "settle_ns": 0})
    assert records and all(r["applied"] for r in records), records
    assert {r["cpu"] for r in records} == {0, 1, 2, 3}
    for cpu in range(4):
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        assert (d / "scaling_governor").read_text() == "performance"
        assert (d / "scaling_min_freq").read_text() == (d / "scaling_max_freq").read_text() == "1000000"
    gov = next(r for r in records if r["knob"].endswith("cpu0/cpufreq/scaling_governor"))
    assert gov["before"] == "schedutil" and gov["after"] == "performance"
    actions = c.restore()
    assert len(actions) == len(records) and all(a["restored"] for a in actions)
    assert snapshot(root) == before
    assert c.restore() == []  # idempotent
    assert all(r["restored"] for r in c.records)


@pytest.mark.parametrize("target, first", [(1000000, "scaling_max_freq"), (400000, "scaling_min_freq")])
def test_min_max_write_order(tmp_path, checked_writes, target, first):
    root = fake_tree(tmp_path, cpus=1)
    c = Conditions(root)
    assert all(r["applied"] for r in c.apply({"frequency_khz": target}))
    freq_writes = [name for name, _ in checked_writes if name.startswith("scaling_m")]
    assert freq_writes[0] == first
    c.restore()  # checked_writes asserts min <= max on the way back too
    assert snapshot(root) == snapshot(fake_tree(tmp_path / "fresh", cpus=1))


def test_order_min_max():
    assert order_min_max(1500000, 600000) == ("scaling_max_freq", "scaling_min_freq")
    assert order_min_max(600000, 600000) == ("scaling_max_freq", "scaling_min_freq")
    assert order_min_max(300000, 600000) == ("scaling_min_freq", "scaling_max_freq")


def test_frequency_uses_userspace_when_available(tmp_path, checked_writes):
    root = fake_tree(
        tmp_path,
        cpus=1,
        scaling_available_governors="performance userspace schedutil",
        scaling_setspeed="<unsupported>",
    )
    c = Conditions(root)
    records = c.apply({"frequency_khz": 900000})
    d = root / "sys/devices/system/cpu/cpu0/cpufreq"
    assert all(r["applied"] for r in records)
    assert (d / "scaling_governor").read_text() == "userspace"
    assert (d / "scaling_setspeed").read_text() == "900000"
    assert [name for name, _ in checked_writes] == [
        "scaling_governor",
        "scaling_max_freq",
        "scaling_min_freq",
        "scaling_setspeed",
    ]
    c.restore()
    assert (d / "scaling_governor").read_text() == "schedutil"
    assert (d / "scaling_min_freq").read_text() == "600000"
    assert (d / "scaling_max_freq").read_text() == "1500000"


def test_unavailable_governor_is_marked_not_applied(tmp_path):
    root = fake_tree(tmp_path, cpus=2)
    before = snapshot(root)
    records = Conditions(root).apply({"governor": "ondemand"})
    assert [r["applied"] for r in records] == [False, False]
    assert records[0]["reason"] == "governor 'ondemand' not available (have: performance powersave schedutil)"
    assert snapshot(root) == before
    warnings = not_applied(records)
    assert len(warnings) == 2 and "not applied on cpu0" in warnings[0] and "ondemand" in warnings[0]


def test_no_cpufreq_is_marked_not_applied(tmp_path):
    base = tmp_path / "sys/devices/system/cpu"
    base.mkdir(parents=True)
    (base / "online").write_text("0-1\n")
    records = Conditions(tmp_path).apply({"governor": "performance", "frequency_khz": 600000})
    assert len(records) == 1
    assert records[0]["applied"] is False and records[0]["reason"] == "no cpufreq on this host"
    assert "not applied" in not_applied(records)[0]


def test_frequency_outside_range_or_table(tmp_path):
    root = fake_tree(tmp_path, cpus=1)
    [r] = Conditions(root).apply({"frequency_khz": 3000000})
    assert not r["applied"] and r["reason"] == "frequency 3000000 kHz outside this CPU's range 300000-1500000 kHz"
    root2 = fake_tree(tmp_path / "t", cpus=1, scaling_available_frequencies="600000 1200000 1500000")
    [r] = Conditions(root2).apply({"frequency_khz": 1000000})
    assert not r["applied"] and r["reason"] == "frequency 1000000 kHz not available (have: 600000 1200000 1500000)"


def test_permission_denied_is_recorded(tmp_path, monkeypatch):
    root = fake_tree(tmp_path, cpus=1)
    before = snapshot(root)

    def denied(path, value):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(objects, "_write", denied)
    c = Conditions(root)
    [r] = c.apply({"governor": "performance"})
    assert r["applied"] is False and r["reason"] == "permission denied"
    actions = c.restore()  # the write-back fails the same way: reported, not raised
    assert actions == [{"knob": r["knob"], "restored": False, "reason": "permission denied"}]
    assert snapshot(root) == before


def test_cpus_sharing_a_policy_are_written_once(tmp_path):
    root = fake_tree(tmp_path, cpus=4, shared=True)
    c = Conditions(root)
    records = c.apply({"governor": "performance"})
    assert [r["cpu"] for r in records] == [0]
    assert records[0]["before"] == "schedutil"
    c.restore()
    assert (root / "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor").read_text() == "schedutil"


def test_only_given_cpus(tmp_path):
    root = fake_tree(tmp_path, cpus=4)
    records = Conditions(root).apply({"governor": "performance"}, cpus=[1, 2])
    assert [r["cpu"] for r in records] == [1, 2]
    assert (root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip() == "schedutil"


# ---------------------------------------------------------------- killed runs


def test_restore_from_bundle_after_a_kill(tmp_path, monkeypatch):
    """The state is saved before each write: a run killed between two writes is fully restorable."""
    root = fake_tree(tmp_path / "root", cpus=2)
    before = snapshot(root)
    bundle = tmp_path / "bundle"
    real, calls = objects._write, []

    def dies_on_fourth(path, value):
        calls.append(path)
        if len(calls) == 4:
            real(path, value)
            raise SystemExit("SIGKILL")  # killed right after the write, before the record update
        real(path, value)

    monkeypatch.setattr(objects, "_write", dies_on_fourth)
    c = Conditions(root, state_path=bundle / "host/changes.json")
    with pytest.raises(SystemExit):
        c.apply({"governor": "performance", "frequency_khz": 800000})
    monkeypatch.setattr(objects, "_write", real)
    state = json.loads((bundle / "host/changes.json").read_text())
    assert state["schema_version"] == 1 and state["pid"] == os.getpid()
    assert len(state["changes"]) == 4
    assert snapshot(root) != before

    (bundle / "manifest.json").write_text('{"schema_version": 1, "status": "running", "checksums": {}}')  # cut
    actions = restore_from_bundle(bundle, root=root)
    assert len(actions) == 4 and all(a["restored"] for a in actions)
    assert snapshot(root) == before
    assert all(r["restored"] for r in json.loads((bundle / "host/changes.json").read_text())["changes"])
    assert restore_from_bundle(bundle, root=root) == []  # a second restore changes nothing


def test_restore_from_records_skips_what_never_changed(tmp_path):
    knob = tmp_path / "gov"
    knob.write_text("performance")
    records = [
        {"knob": str(knob), "kind": "file", "applied": False, "reason": "no cpufreq on this host"},
        {"knob": str(knob), "kind": "file", "before": "schedutil", "after": "performance", "applied": True},
        {"knob": "cpuset", "kind": "cpuset", "applied": False, "reason": "no cpuset"},
    ]
    actions = restore_from_records(records)
    assert actions == [{"knob": str(knob), "action": "wrote", "value": "schedutil", "restored": True}]
    assert knob.read_text() == "schedutil"


def test_restore_from_bundle_errors(tmp_path):
    with pytest.raises(RtqError, match="no such bundle"):
        restore_from_bundle(tmp_path / "missing")
    assert restore_from_bundle(tmp_path) == []  # nothing recorded, nothing to do
    (tmp_path / "host").mkdir()
    (tmp_path / "host/changes.json").write_text("{not json")
    (tmp_path / "manifest.json").write_text('{"schema_version": 1, "status": "running"}')
    with pytest.raises(RtqError, match="not JSON"):
        restore_from_bundle(tmp_path)


def test_find_cpuset_mount(tmp_path):
    v1 = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\ncgroup /x/cpuset cgroup rw,cpuset 0 0\n"
    assert find_cpuset_mount(v1) == (Path("/x/cpuset"), 1)
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    v2 = f"cgroup2 {tmp_path} cgroup2 rw,nosuid 0 0\n"
    assert find_cpuset_mount(v2) == (tmp_path, 2)
    (tmp_path / "cgroup.controllers").write_text("hugetlb\n")  # hybrid: cpuset is on v1
    assert find_cpuset_mount(v2 + v1) == (Path("/x/cpuset"), 1)
    assert find_cpuset_mount("proc /proc proc rw 0 0\n") is None


def test_v2_controller_enabled_and_restored(tmp_path):
    knob = tmp_path / "cgroup.subtree_control"
    knob.write_text("memory pids\n")
    record = enable_cpuset_controller(tmp_path)
    assert record["kind"] == "controller" and record["before"] == "-cpuset" and knob.read_text() == "+cpuset"
    knob.write_text("cpuset memory pids\n")
    assert enable_cpuset_controller(tmp_path) is None  # already on: nothing changed, nothing to restore
    assert restore_from_records([record])[0]["value"] == "-cpuset" and knob.read_text() == "-cpuset"


def test_make_cpuset_checks_the_parent(tmp_path):
    (tmp_path / "cpuset.cpus.effective").write_text("0-1\n")
    with pytest.raises(RtqError, match=r"CPU 2-3 not in the parent cpuset \(0-1\)"):
        make_cpuset("rtqual-x", [1, 2, 3], (tmp_path, 2))
    with pytest.raises(RtqError, match="empty CPU list"):
        make_cpuset("rtqual-x", [], (tmp_path, 2))
    assert not (tmp_path / "rtqual-x").exists()


def test_no_cpuset_hierarchy_is_marked(tmp_path, monkeypatch):
    monkeypatch.setattr(applier, "cpuset_mount", lambda: (_ for _ in ()).throw(RtqError("cpuset: none")))
    records = Conditions(tmp_path).apply({"cpuset": {"probe": [1], "loads": "0"}})
    assert [(r["condition"], r["applied"], r["reason"]) for r in records] == [
        ("cpuset.probe", False, "cpuset: none"),
        ("cpuset.loads", False, "cpuset: none"),
    ]
    assert restore_from_records(records) == []


# ---------------------------------------------------------------- cgroup cpusets, for real


def _cpuset_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroup cpusets"
    try:
        root, _ = cpuset_mount()
    except RtqError as e:
        return str(e)
    if not os.access(root, os.W_OK):
        return f"{root} is not writable"
    return None


needs_cpuset = pytest.mark.skipif(_cpuset_skip_reason() is not None, reason=str(_cpuset_skip_reason()))


def _allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no Cpus_allowed_list")


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    proc.kill()
    proc.wait()


@needs_cpuset
def test_real_cpuset_add_and_remove(sleeper):
    cpu = os.sched_getaffinity(0).copy().pop()
    cs = make_cpuset(f"rtqual-{os.getpid()}-test", [cpu])
    try:
        assert cs.path.is_dir() and cs.cpus() == [cpu]
        cs.add_pid(sleeper.pid)
        assert cs.pids() == [sleeper.pid]
        assert _allowed(sleeper.pid) == str(cpu)
    finally:
        cs.remove()
    assert not cs.path.exists()
    assert sleeper.poll() is None  # moved back to the parent, still running
    cs.remove()  # idempotent
    with pytest.raises(RtqError, match="cannot add pid"):
        cs.add_pid(sleeper.pid)


@needs_cpuset
def test_real_cpuset_rejects_cpus_outside_parent():
    with pytest.raises(RtqError, match="not in the parent cpuset"):
        make_cpuset(f"rtqual-{os.getpid()}-bad", [4095])
    assert not (cpuset_mount()[0] / f"rtqual-{os.getpid()}-bad").exists()


@needs_cpuset
def test_conditions_cpusets_and_restore_after_kill(tmp_path, sleeper):
    cpus = sorted(os.sched_getaffinity(0))
    state = tmp_path / "host/changes.json"
    c = Conditions(state_path=state)
    try:
        records = c.apply({"cpuset": {"probe": [cpus[-1]], "loads": [cpus[0]]}})
        assert [r["condition"] for r in records if r["kind"] == "cpuset"] == ["cpuset.probe", "cpuset.loads"]
        assert all(r["applied"] for r in records), records
        c.cpusets["loads"].add_pid(sleeper.pid)
        assert _allowed(sleeper.pid) == str(cpus[0])
        paths = [c.cpusets[n].path for n in ("probe", "loads")]
        assert all(p.is_dir() for p in paths)
        # rtqual killed here: the bundle's records remove the leftovers
        (tmp_path / "manifest.json").write_text('{"schema_version": 1, "status": "running"}')
        actions = restore_from_bundle(tmp_path)
        assert [a["action"] for a in actions if a["knob"] in map(str, paths)] == ["removed", "removed"]
        assert all(a["restored"] for a in actions)
        assert not any(p.exists() for p in paths)
        assert sleeper.poll() is None
    finally:
        c.restore()
        for name in ("probe", "loads"):
            Cpuset(cpuset_mount()[0] / f"rtqual-{os.getpid()}-{name}", 0).remove()


@needs_cpuset
def test_conditions_restore_removes_cpusets(sleeper):
    c = Conditions()
    records = c.apply({"cpuset": {"probe": "0"}})
    path = c.cpusets["probe"].path
    try:
        assert records[-1]["applied"] and path.is_dir()
        c.cpusets["probe"].add_pid(sleeper.pid)
    finally:
        t0 = time.monotonic()
        actions = c.restore()
    assert time.monotonic() - t0 < 1.0
    assert actions[-1]["restored"] and not path.exists()
    assert c.restore() == [] and c.cpusets == {}

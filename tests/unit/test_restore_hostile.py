"""`rtqual restore` given someone else's bundle (issue 21 item 1): a crafted journal cannot make it write,
delete or unmount anything but what rtqual itself makes, on this host in this boot. Each hostile journal
below is generated here: exit 1, one line on stderr, no traceback, the canary files unchanged, within
seconds; the normal path (a cut run's journal) still restores, and --dry-run changes nothing.
Real network objects with foreign names: tests/system/test_restore_hostile.py."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rtqual import cli
from rtqual.measure.conditions import applier, journal
from rtqual.measure.conditions.applier import Conditions
from rtqual.measure.conditions.journal import CHANGES_FILE, host_identity, refusal
from rtqual.measure.conditions.restore import restore_from_bundle
from rtqual.measure.run.driver import run
from rtqual.results import bundle as bundle_mod
from rtqual.scenario.single import single_run

CUT = {"schema_version": 1, "status": "running", "checksums": {}}  # the manifest of a run a SIGKILL cut


@pytest.fixture
def temp_dir(tmp_path, monkeypatch) -> Path:
    """The temp folder restore looks in (TMPDIR), inside the test's folder."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.fixture
def canary(tmp_path) -> dict[Path, str]:
    """Files outside any bundle that restore must never change: path -> content."""
    d = tmp_path / "canary-dir"
    d.mkdir()
    files = {tmp_path / "canary.txt": "untouched\n", d / "inside.txt": "also untouched\n"}
    for f, text in files.items():
        f.write_text(text)
    return files


def unchanged(canary: dict[Path, str]) -> bool:
    return all(f.is_file() and f.read_text() == text for f, text in canary.items())


def make_bundle(path: Path, records: list, manifest: dict | None = None, **state) -> Path:
    """A bundle folder with a manifest and a journal host/changes.json holding records (state: keys of the
    journal replaced: boot_id, hostname, ...; None drops one)."""
    (path / "host").mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps(CUT if manifest is None else manifest))
    body = {"schema_version": 1, "pid": 4242, **host_identity(), "changes": records, **state}
    (path / CHANGES_FILE).write_text(json.dumps({k: v for k, v in body.items() if v is not None}))
    return path


def refused(capsys, bundle, says: str, *more: str) -> str:
    """`rtqual restore BUNDLE`: exit 1, one line saying `says`, no traceback, within seconds; that line."""
    t0 = time.monotonic()
    code = cli.main(["restore", str(bundle), *more])
    out = capsys.readouterr()
    assert time.monotonic() - t0 < 5
    assert code == 1, (out.out, out.err)
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual: error: ") and says in lines[0], out.err
    assert "Traceback" not in out.err and out.out == ""
    return lines[0]


def tempdir_record(path: Path) -> dict:
    return {"knob": str(path), "kind": "tempdir", "scope": "run", "applied": True}


# ---------------------------------------------------------------- records naming what rtqual never changes


def test_file_record_outside_the_allow_list(tmp_path, capsys, canary):
    knob = tmp_path / "canary.txt"
    rec = {"knob": str(knob), "kind": "file", "before": "owned", "after": "x", "applied": True}
    refused(capsys, make_bundle(tmp_path / "b", [rec]), "is not a cpufreq file rtqual sets")
    assert unchanged(canary)


def test_a_journal_is_checked_whole_before_anything_is_done(tmp_path, capsys, canary, temp_dir):
    """A good record first, a bad one last (undone first): nothing at all is done."""
    ours = temp_dir / "rtqual-ioc-4242-good"
    ours.mkdir()
    bad = {"knob": str(tmp_path / "canary.txt"), "kind": "file", "before": "owned", "applied": True}
    refused(capsys, make_bundle(tmp_path / "b", [bad, tempdir_record(ours)]), "canary.txt")
    assert ours.is_dir() and unchanged(canary)


@pytest.mark.parametrize(
    "name,before,says",
    [
        ("scaling_governor", "a b", "not a value rtqual writes back"),
        ("scaling_max_freq", "fast", "not a value rtqual writes back"),
        ("scaling_setspeed", "1000", "not a cpufreq file"),  # written without a before: never written back
        ("../../../../canary", "x", "not a plain absolute path"),
    ],
)
def test_cpufreq_records_only_with_rtqual_values(tmp_path, capsys, name, before, says):
    root = tmp_path / "root"
    knob = root / "sys/devices/system/cpu/cpu0/cpufreq" / name
    rec = {"knob": os.path.join(root, "sys/devices/system/cpu/cpu0/cpufreq", name), "kind": "file",
           "before": before, "applied": True}  # fmt: skip
    b = make_bundle(tmp_path / "b", [rec])
    with pytest.raises(applier.RtqError, match=says):
        restore_from_bundle(b, root=root)
    assert not knob.exists()


def test_tempdir_record_on_a_canary_folder(tmp_path, capsys, canary, temp_dir):
    refused(capsys, make_bundle(tmp_path / "b", [tempdir_record(tmp_path / "canary-dir")]), "not named as rtqual")
    rtqual_named_elsewhere = tmp_path / "rtqual-ioc-4242-x"
    rtqual_named_elsewhere.mkdir()
    refused(capsys, make_bundle(tmp_path / "c", [tempdir_record(rtqual_named_elsewhere)]), "not in the temp folder")
    assert rtqual_named_elsewhere.is_dir() and unchanged(canary)


def test_tempdir_record_naming_a_symlink_is_refused_not_reported_removed(tmp_path, capsys, canary, temp_dir):
    link = temp_dir / "rtqual-ioc-4242-link"
    link.symlink_to(tmp_path / "canary-dir")
    refused(capsys, make_bundle(tmp_path / "b", [tempdir_record(link)]), "is a symbolic link")
    assert link.is_symlink() and unchanged(canary)
    # and a run's own restore says so instead of "removed"
    [action] = journal.restore_from_records([tempdir_record(link)])
    assert action["restored"] is False and "symbolic link" in action["reason"] and unchanged(canary)


@pytest.mark.parametrize(
    "rec,says",
    [
        ({"kind": "veth", "knob": "eth0"}, "veth 'eth0' is not one rtqual makes"),
        ({"kind": "veth", "knob": "rtqual-1n2"}, "is not one rtqual makes"),  # a netns name is no veth name
        ({"kind": "netns", "knob": "canary"}, "netns 'canary' is not one rtqual makes"),
        ({"kind": "netns", "knob": "rtqual-1n2; reboot"}, "is not one rtqual makes"),
        ({"kind": "cpuset", "knob": "/sys/fs/cgroup/user.slice"}, "not named as rtqual"),
        ({"kind": "cpuset", "knob": "/tmp/rtqual-1-probe"}, "not right below a cgroup cpuset hierarchy"),
        ({"kind": "trace-instance", "knob": "/sys/kernel/tracing/instances/foo"}, "not named as rtqual"),
        ({"kind": "trace-instance", "knob": "/tmp/instances/rtqual-1-1"}, "not in a tracefs"),
        ({"kind": "mount", "knob": "/mnt"}, "not named as rtqual"),
        ({"kind": "mount", "knob": "/home/rtqual-tracefs-abc"}, "not in the temp folder"),
        ({"kind": "controller", "knob": "/tmp/x/cgroup.subtree_control", "before": "-cpuset"}, "not the cgroup v2"),
        ({"kind": "controller", "knob": "/sys/fs/cgroup/cgroup.subtree_control", "before": "-memory"}, "not the"),
        ({"kind": "sysctl", "knob": "/proc/sys/kernel/panic", "before": "1"}, "unknown kind 'sysctl'"),
        ({"kind": "file", "knob": "/proc/sys/kernel/sched_rt_runtime_us", "before": "-1"}, "not a cpufreq file"),
    ],
)
def test_records_of_foreign_objects_are_refused(tmp_path, capsys, temp_dir, rec, says):
    rec = {"applied": True, "before": None, **rec}
    refused(capsys, make_bundle(tmp_path / "b", [rec]), says)


# ---------------------------------------------------------------- the journal itself


def test_symlinked_journal_is_refused(tmp_path, capsys, temp_dir):
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    elsewhere = make_bundle(tmp_path / "elsewhere", [tempdir_record(ours)])  # a journal that would be obeyed
    b = tmp_path / "b"
    (b / "host").mkdir(parents=True)
    (b / "manifest.json").write_text(json.dumps(CUT))
    (b / CHANGES_FILE).symlink_to(elsewhere / CHANGES_FILE)
    refused(capsys, b, "changes.json: a symbolic link")
    assert ours.is_dir()


def test_symlinked_host_folder_is_refused_and_nothing_written_there(tmp_path, capsys, temp_dir):
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    elsewhere = make_bundle(tmp_path / "elsewhere", [tempdir_record(ours)])
    before = (elsewhere / CHANGES_FILE).read_bytes()
    b = tmp_path / "b"
    b.mkdir()
    (b / "manifest.json").write_text(json.dumps(CUT))
    (b / "host").symlink_to(elsewhere / "host")
    refused(capsys, b, "host: a symbolic link")
    assert ours.is_dir() and (elsewhere / CHANGES_FILE).read_bytes() == before
    assert sorted(os.listdir(elsewhere / "host")) == ["changes.json"]


def test_a_planted_temp_file_link_cannot_redirect_the_write_back(tmp_path, temp_dir, canary):
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    b = make_bundle(tmp_path / "b", [tempdir_record(ours)])
    (b / "host/.changes.json.tmp").symlink_to(tmp_path / "canary.txt")
    assert [a["restored"] for a in restore_from_bundle(b)] == [True]
    assert not ours.exists() and unchanged(canary)
    assert json.loads((b / CHANGES_FILE).read_text())["changes"][0]["restored"] is True


@pytest.mark.parametrize(
    "state,says",
    [
        ({"boot_id": "00000000-0000-0000-0000-000000000000"}, "written in another boot"),
        ({"hostname": "elsewhere.example"}, "written on host 'elsewhere.example'"),
        ({"hostname": "evil\nrtqual: all good"}, "written on host"),  # still one line
        ({"boot_id": None}, "no boot id or host name (written by an older rtqual)"),
        ({"hostname": None}, "no boot id or host name"),
    ],
)
def test_journal_of_another_boot_or_host_is_refused(tmp_path, capsys, temp_dir, state, says):
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    refused(capsys, make_bundle(tmp_path / "b", [tempdir_record(ours)], **state), says)
    assert ours.is_dir()


@pytest.mark.parametrize(
    "changes,says",
    [
        ([{"kind": "tempdir", "applied": True}], "record 1: no 'knob' string"),
        ([{"knob": 7, "kind": "file"}], "no 'knob' string"),
        ([["knob", "/tmp"]], "record 1: a JSON list, not a record"),
        (["/etc/passwd"], "a JSON str, not a record"),
        ([None], "a JSON NoneType, not a record"),
        ([{"knob": "/x", "kind": "file", "before": 12}], "'before' is not a string"),
        ([{"knob": "/x", "kind": ["file"]}], "unknown kind"),
        ([{"knob": "/x", "kind": "file", "applied": "yes", "before": "1"}], "'applied' is not true or false"),
        ({"knob": "/x"}, "no 'changes' list"),
        ("changes", "no 'changes' list"),
    ],
)
def test_records_of_the_wrong_shape_are_refused(tmp_path, capsys, changes, says):
    refused(capsys, make_bundle(tmp_path / "b", changes), says)


@pytest.mark.parametrize(
    "text,says",
    [
        ('{"changes": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 8"),
        ('{"changes": [{"knob": "' + "[" * 50 + '", "kind": "netns", "applied": true}]}', "is not one rtqual"),
        ("{not json", "not JSON"),
        ("\xff\xfe", "not JSON"),
        ("[]", "no 'changes' list"),
    ],
)
def test_malformed_journal_text(tmp_path, capsys, text, says):
    b = make_bundle(tmp_path / "b", [])
    (b / CHANGES_FILE).write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    if "knob" in text:  # brackets inside strings do not count as nesting
        (b / CHANGES_FILE).write_text(json.dumps({**host_identity(), **json.loads(text)}))
    refused(capsys, b, says)


def test_oversized_journal_is_refused_without_reading_it_all(tmp_path, capsys):
    b = make_bundle(tmp_path / "b", [])
    with open(b / CHANGES_FILE, "wb") as f:
        f.truncate(journal.JOURNAL_MAX_BYTES + 1)  # sparse
    refused(capsys, b, "larger than 16 MiB")


def _cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """The installed CLI in its own process: a hang is a timeout, not a stuck test run."""
    return subprocess.run([sys.executable, "-m", "rtqual", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("special", ["fifo", "dev-zero-link", "dev-zero-arg", "not-a-folder"])
def test_special_files_neither_hang_nor_exhaust_memory(tmp_path, special):
    b = make_bundle(tmp_path / "b", [])
    (b / CHANGES_FILE).unlink()
    target = str(b)
    if special == "fifo":
        os.mkfifo(b / CHANGES_FILE)
    elif special == "dev-zero-link":
        (b / CHANGES_FILE).symlink_to("/dev/zero")
    elif special == "dev-zero-arg":
        target = "/dev/zero"
    else:
        target = str(b / "manifest.json")
    t0 = time.monotonic()
    out = _cli("restore", target)
    assert time.monotonic() - t0 < 10
    says = {"fifo": "not a regular file", "dev-zero-link": "a symbolic link"}.get(special, "not a bundle folder")
    assert out.returncode == 1 and out.stdout == "", out
    assert len(out.stderr.splitlines()) == 1 and says in out.stderr and "Traceback" not in out.stderr, out.stderr


# ---------------------------------------------------------------- the bundle's checksums


def test_unsealed_journal_only_when_the_run_was_cut(tmp_path, capsys, temp_dir):
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    done = {**CUT, "status": "complete"}
    refused(capsys, make_bundle(tmp_path / "b", [tempdir_record(ours)], manifest=done), "no checksum although")
    c = make_bundle(tmp_path / "c", [tempdir_record(ours)])
    (c / "manifest.json").unlink()
    refused(capsys, c, "no manifest.json")
    d = make_bundle(tmp_path / "d", [tempdir_record(ours)])
    (d / "manifest.json").write_text("[" * 10_000 + "]" * 10_000)
    refused(capsys, d, "manifest.json: nested deeper")
    assert ours.is_dir()


def test_a_finished_run_seals_its_journal_and_an_edit_is_damage(tmp_path, capsys, temp_dir):
    """A real run (fake probe, a governor no host has: its record is journalled, nothing changed) seals
    host/changes.json; verify and restore accept it, and call an edited one damaged."""
    script = tmp_path / "s.txt"
    script.write_text("".join(f"sample 0 {5_000 + i} 0\n" for i in range(50)))
    a = cli.build_parser().parse_args(["run", "fake", "--script", str(script)])
    cases, _ = single_run(a, ["rtqual", "run", "fake"])
    cases[0].setdefault("conditions", {})["governor"] = "rtqual-test-no-such-governor"
    b = run(cases, ["rtqual", "run", "fake"], output=str(tmp_path / "b"), quiet=True).path
    manifest = json.loads((b / "manifest.json").read_text())
    assert manifest["status"] == "complete" and CHANGES_FILE in manifest["checksums"]
    assert cli.main(["verify", str(b)]) == 0
    assert cli.main(["restore", str(b)]) == 0 and "nothing to restore" in capsys.readouterr().out
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    state = json.loads((b / CHANGES_FILE).read_text())
    state["changes"].append(tempdir_record(ours))  # a record slipped into a shared bundle
    (b / CHANGES_FILE).write_text(json.dumps(state))
    assert cli.main(["verify", str(b)]) == 1
    assert "host/changes.json: damaged" in capsys.readouterr().out
    refused(capsys, b, "host/changes.json: damaged (sha256 differs")
    assert ours.is_dir()


def test_restoring_a_sealed_journal_keeps_the_bundle_intact(tmp_path, temp_dir):
    """A finished run whose own restore failed: `rtqual restore` retries and the new journal is sealed again."""
    ours = temp_dir / "rtqual-ioc-4242-x"
    ours.mkdir()
    b = bundle_mod.Bundle(tmp_path / "b", ["rtqual"], "test")
    Conditions(state_path=b.path / CHANGES_FILE).note_temp(ours)
    b.manifest["checksums"][CHANGES_FILE] = bundle_mod.sha256_file(b.path / CHANGES_FILE)  # as run.py does
    b.finish("complete", "pass")
    b.close()
    assert [a["action"] for a in restore_from_bundle(b.path)] == ["removed"] and not ours.exists()
    assert bundle_mod.verify(b.path)[0] == []
    assert restore_from_bundle(b.path) == []


# ---------------------------------------------------------------- the normal path


def test_dry_run_says_what_it_would_do_and_changes_nothing(tmp_path, capsys, temp_dir):
    ours = temp_dir / f"rtqual-ioc-{os.getpid()}-x"  # its maker runs: no orphan, the journal's alone
    ours.mkdir()
    orphan = temp_dir / "rtqual-monitor-999999999-y"  # a killed monitor's (no such pid)
    orphan.mkdir()
    b = make_bundle(tmp_path / "b", [tempdir_record(ours)])
    journal = (b / CHANGES_FILE).read_bytes()
    assert cli.main(["restore", "--dry-run", str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x) for x in lines[:-1]] == [
        {"knob": str(ours), "action": "would remove tempdir"},
        {"knob": str(orphan), "action": "would remove"},
    ]
    assert "dry run: nothing changed" in lines[-1]
    assert ours.is_dir() and orphan.is_dir() and (b / CHANGES_FILE).read_bytes() == journal
    assert cli.main(["restore", str(b)]) == 0
    assert not ours.exists() and not orphan.exists()
    assert cli.main(["restore", str(b)]) == 0 and "nothing to restore" in capsys.readouterr().out.splitlines()[-1]


def test_every_record_conditions_writes_passes_the_allow_list(tmp_path):
    """The allow-list is what the writers make: each record Conditions journals on a cpufreq tree passes."""
    from test_conditions import fake_tree

    root = fake_tree(tmp_path / "root", cpus=2)
    c = Conditions(root)
    records = c.apply({"governor": "performance", "frequency_khz": 800000})
    todo = [r for r in records if journal._needs_undo(r)]
    assert len(todo) >= 4 and [refusal(r, root) for r in todo] == [None] * len(todo)
    ident = host_identity()
    assert ident["hostname"] == socket.gethostname() and len(ident["boot_id"] or "") == 36

"""Damaged bundles (issue 14 item 2): checksums in the manifest, `rtqual verify`, and `show`/`compare`/`report`
warning about damage instead of printing it as data; the cut case of a killed run; the IOC's temp folder in the
change journal."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from rtqual import cli
from rtqual.measure.conditions.applier import Conditions
from rtqual.measure.conditions.journal import CHANGES_FILE
from rtqual.measure.conditions.restore import restore_from_bundle
from rtqual.publish import htmlreport
from rtqual.results import bundle as bundle_mod

FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"


def sealed_copy(src: Path, dst: Path) -> Path:
    """A frozen bundle copied and given checksums of every file, as rtqual writes them today."""
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m[bundle_mod.CHECKSUMS] = {
        f.relative_to(dst).as_posix(): bundle_mod.sha256_file(f)
        for f in sorted(dst.rglob("*"))
        if f.is_file() and f.relative_to(dst).as_posix() not in bundle_mod.UNSEALED
    }
    (dst / "manifest.json").write_text(json.dumps(m, indent=1))
    return dst


@pytest.fixture
def sealed(tmp_path):
    return sealed_copy(FROZEN / "scenario", tmp_path / "b")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_bundle_records_a_checksum_of_every_file_as_written(tmp_path):
    b = bundle_mod.Bundle(tmp_path / "b", ["rtqual"], "test")
    bundle_mod.write_json(b.path / "plan.json", {"cases": []})
    d = b.case_dir("001-x")
    (d / "stream.jsonl").write_text("streamed\n")  # streamed files: sealed when the case ends
    assert "cases/001-x/stream.jsonl" not in b.manifest["checksums"]
    bundle_mod.write_json(d / "result.json", {"id": "001-x"})
    b.add_case({"id": "001-x", "label": "x", "probe": "timer", "verdict": "pass"})
    b.finish("complete", "pass")
    b.close()
    m = json.loads((b.path / "manifest.json").read_text())
    assert set(m["checksums"]) == {"plan.json", "cases/001-x/stream.jsonl", "cases/001-x/result.json"}
    assert bundle_mod.verify(b.path) == ([], [])


def test_verify_names_each_damaged_missing_and_unexpected_file(sealed, capsys):
    assert run_cli(capsys, "verify", sealed)[0] == 0
    (sealed / "cases" / "001-timer-idle" / "stream.jsonl").write_bytes(b"\xff\xfe garbage")
    (sealed / "host" / "facts-before.json").unlink()
    (sealed / "cases" / "stray.txt").write_text("?")
    code, out, err = run_cli(capsys, "verify", sealed)
    assert code == 1 and "3 damaged, missing or unexpected" in err
    assert "cases/001-timer-idle/stream.jsonl: damaged" in out
    assert "host/facts-before.json: missing" in out and "cases/stray.txt: unexpected" in out


def test_old_bundles_verify_with_a_note(capsys):
    for name in ("timer-raw", "ioc", "scenario"):
        code, out, _ = run_cli(capsys, "verify", FROZEN / name)
        assert code == 0 and "no checksums recorded" in out


def test_show_warns_about_a_damaged_file_and_leaves_its_case_out(sealed, capsys):
    result = sealed / "cases" / "001-timer-idle" / "result.json"
    r = json.loads(result.read_text())
    r["stats"]["count"] = 12345678  # parses fine: only the checksum tells
    result.write_text(json.dumps(r))
    code, out, err = run_cli(capsys, "show", sealed)
    assert code == 1 and "12345678" not in out and "12,345,678" not in out
    assert "cases/001-timer-idle/result.json: damaged" in err and "case 002-timer-hackbench" in out
    code, out, err = run_cli(capsys, "show", "--json", sealed)
    doc = json.loads(out)
    assert code == 1 and "001-timer-idle" not in [c["id"] for c in doc["cases"]] and doc["damage"]
    code, out, err = run_cli(capsys, "compare", sealed, FROZEN / "scenario")
    assert code == 1 and "result.json: damaged" in err


@pytest.mark.parametrize(
    "manifest",
    [[], None, "x", 3, {"schema_version": 1, "cases": "x"}, {"schema_version": 1, "cases": [1]}],
    ids=["list", "null", "string", "number", "cases-string", "case-number"],
)
def test_a_manifest_of_the_wrong_shape_is_one_line(tmp_path, capsys, manifest):
    b = shutil.copytree(FROZEN / "scenario", tmp_path / "b")
    (b / "manifest.json").write_text(json.dumps(manifest))
    for argv in (["show", b], ["show", "--json", b], ["compare", b, b], ["verify", b], ["report", b]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 1 and err.count("\n") == 1 and ("manifest.json" in err or "schema" in err), (argv, err)


@pytest.mark.parametrize(
    "change",
    [
        lambda r: [],
        lambda r: None,
        lambda r: {k: v for k, v in r.items() if k != "stats"},
        lambda r: {**r, "stats": "fast"},
        lambda r: {**r, "per_cpu": {"0": "x"}},
        lambda r: {**r, "stats": {**r["stats"], "count": -5}},
        lambda r: {**r, "stats": {**r["stats"], "max_ns": "big"}},
        lambda r: {**r, "verdict": "great"},
        lambda r: {**r, "warnings": "oops"},
    ],
    ids=["list", "null", "no-stats", "string-stats", "string-cpu", "negative-count", "string-max", "verdict", "warn"],
)
def test_a_result_of_the_wrong_shape_is_named_not_printed(tmp_path, capsys, change):
    b = shutil.copytree(FROZEN / "scenario", tmp_path / "b")
    f = b / "cases" / "001-timer-idle" / "result.json"
    f.write_text(json.dumps(change(json.loads(f.read_text()))))
    for argv in (["show", b], ["show", "--json", b], ["compare", b, FROZEN / "scenario"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 1 and "cases/001-timer-idle/result.json: damaged" in err, (argv, err)
        if argv[1] == "--json":
            assert "001-timer-idle" not in [c["id"] for c in json.loads(out)["cases"]]
        elif argv[0] == "show":
            assert "case 001-timer-idle" not in out
    html = htmlreport.render([htmlreport.load_bundle(b)])
    assert "cases/001-timer-idle/result.json" in html


def test_files_are_recorded_by_any_name_and_a_running_case_is_sealed_when_it_ends(tmp_path, monkeypatch):
    """The bundle's files are matched by name (as given, relative or absolute) and through a symlink; a running
    case's files go into the manifest when the case ends (one save, not one per file), and a kill before that
    leaves them as the cut case's (notes, not damage)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    b = bundle_mod.Bundle(Path("link/b"), ["rtqual"], "test")
    bundle_mod.write_json(Path("link/b/plan.json"), {"cases": []})  # relative, through the link
    bundle_mod.write_text(tmp_path / "real" / "b" / "host" / "facts.txt", "x\n")  # absolute, the real name
    b.start_case("001-x")
    for i in range(3):
        bundle_mod.write_text(b.case_dir("001-x") / f"spike-{i}.txt", f"{i}\n")
    on_disk = json.loads((tmp_path / "real" / "b" / "manifest.json").read_text())
    assert set(on_disk["checksums"]) == {"plan.json", "host/facts.txt"}  # the running case's: not yet
    assert bundle_mod.verify(b.path)[0] == []  # a kill now: the cut case's files are notes
    b.add_case({"id": "001-x", "label": "x", "probe": "timer", "verdict": "pass"})
    b.finish("complete", "pass")
    b.close()
    on_disk = json.loads((tmp_path / "real" / "b" / "manifest.json").read_text())
    assert set(on_disk["checksums"]) == {"plan.json", "host/facts.txt"} | {
        f"cases/001-x/spike-{i}.txt" for i in range(3)
    }
    assert bundle_mod.verify(tmp_path / "link" / "b") == ([], [])


def test_show_names_the_cut_case(tmp_path, capsys):
    b = shutil.copytree(FROZEN / "scenario", tmp_path / "b")
    m = json.loads((b / "manifest.json").read_text())
    m.update(status="running", cases=m["cases"][:1], running_case=m["cases"][1]["id"])
    (b / "manifest.json").write_text(json.dumps(m))
    cut = m["running_case"]
    code, out, err = run_cli(capsys, "show", b)
    assert code == 0 and f"cut: case {cut} was running" in out and cut in err
    code, out, _ = run_cli(capsys, "show", "--json", b)
    assert json.loads(out)["cut"] == cut
    del m["running_case"]  # a run killed between cases: the first planned case not finished
    (b / "manifest.json").write_text(json.dumps(m))
    assert bundle_mod.load(b)["cut"] == cut


def test_restore_removes_a_journalled_temp_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run's temp folder (TMPDIR)
    temp = Path(tempfile.mkdtemp(prefix="rtqual-ioc-4242-"))  # as epics/ioc.py names it
    (temp / "in.fifo").write_text("")
    b = tmp_path / "b"
    b.mkdir()
    (b / "manifest.json").write_text('{"schema_version": 1, "status": "running"}')  # the run was cut
    cond = Conditions(state_path=b / CHANGES_FILE)
    cond.note_temp(temp)
    assert cond.restore() == [] and temp.is_dir()  # a case's restore keeps the run's temp folders
    # rtqual killed here (SIGKILL): the journal remains, `rtqual restore` removes the folder
    actions = restore_from_bundle(b)
    assert actions == [{"knob": str(temp), "action": "removed", "restored": True}] and not temp.exists()
    assert restore_from_bundle(b) == []


@pytest.mark.parametrize(
    "argv,says",
    [
        (["run", "timer", "--duration", "-5s"], "-5s"),
        (["run", "timer", "--loops", "-3"], "-3"),
        (["run", "timer", "--loops", "0"], "0"),
        (["run", "timer", "--raw-max-mb", "0"], "--raw-max-mb"),
        (["run", "timer", "--settle", "-1s", "--load", "hackbench"], "-1s"),
        (["run", "ioc", "--baseline", "-2s"], "-2s"),
        (["plan", "/dev/null"], "not a regular file"),
        (["plan", "/tmp"], "not a regular file"),
        (["report", str(FROZEN / "scenario"), "-o", "/tmp"], "not a regular file"),
        (["compare", str(FROZEN / "scenario"), str(FROZEN / "scenario"), "--report", "/tmp"], "not a regular"),
        (["import", "cyclictest", "/dev/null"], "not a regular file"),
    ],
)
def test_options_are_range_checked_before_anything_starts(capsys, argv, says):
    code, out, err = run_cli(capsys, *argv)
    assert code == 1 and err.count("\n") == 1 and says in err, err

"""A bundle is a confined tree (issue 21 items 2 and 6): a table of hostile bundles, made here from a frozen one,
times every command that reads a bundle. Each ends within seconds with exit 1, a line or two on stderr, no
traceback, never prints what lies outside the bundle (a canary file) and changes nothing outside it.
Writing a report or a comparison beside another bundle never changes that bundle."""

import json
import os
import shutil
import time
from pathlib import Path

import hostile_fields
import pytest

FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"
CANARY = "CANARY-7f3e-outside-the-bundle"
CASE = "cases/001-timer"


seal = hostile_fields.seal  # checksums of every regular file, as rtqual writes them (one helper)


def replace(f: Path, make) -> None:
    f.unlink()
    make(f)


def with_key(key):
    """The manifest's checksums name `key` (a path leading out of the bundle)."""

    def change(b: Path, outside: Path) -> None:
        m = json.loads((b / "manifest.json").read_text())
        m["checksums"][key(outside) if callable(key) else key] = "0" * 64
        (b / "manifest.json").write_text(json.dumps(m))

    return change


def case_out(b: Path, outside: Path) -> None:
    """cases/001-timer is a symlink to a folder outside whose result.json carries the canary as its label."""
    shutil.copytree(b / CASE, outside / "case")
    r = json.loads((outside / "case" / "result.json").read_text())
    (outside / "case" / "result.json").write_text(json.dumps({**r, "label": CANARY}))
    shutil.rmtree(b / CASE)
    (b / CASE).symlink_to(outside / "case")


def rewrite(rel: str, data: bytes | None = None, size: int = 0, reseal: bool = True):
    """The file's content replaced (a sparse file of `size` bytes when no data); checksums redone, so only
    reading it can tell."""

    def change(b: Path, outside: Path) -> None:
        with open(b / rel, "wb") as f:
            f.write(data or b"")
            if size:
                f.truncate(size)
        if reseal:
            seal(b)

    return change


DEEP = b"[" * 100_000 + b"]" * 100_000
HOSTILE = {
    "fifo-result": lambda b, o: replace(b / CASE / "result.json", os.mkfifo),
    "fifo-plan": lambda b, o: replace(b / "plan.json", os.mkfifo),
    "fifo-manifest": lambda b, o: replace(b / "manifest.json", os.mkfifo),
    "fifo-stream": lambda b, o: replace(b / CASE / "stream.jsonl", os.mkfifo),
    "zero-result": lambda b, o: replace(b / CASE / "result.json", lambda f: f.symlink_to("/dev/zero")),
    "zero-plan": lambda b, o: replace(b / "plan.json", lambda f: f.symlink_to("/dev/zero")),
    "zero-raw": lambda b, o: replace(b / CASE / "raw.bin", lambda f: f.symlink_to("/dev/zero")),
    "canary-hist": lambda b, o: replace(b / CASE / "hist.json", lambda f: f.symlink_to(o / "canary.txt")),
    "climbing-key": with_key(lambda o: "../outside/canary.txt"),
    "absolute-key": with_key(lambda o: str(o / "canary.txt")),
    "kcore-key": with_key("/proc/kcore"),
    "newline-key": with_key("x\nnext-line"),
    "case-out": case_out,
    "deep-manifest": rewrite("manifest.json", DEEP, reseal=False),
    "deep-plan": rewrite("plan.json", DEEP),
    "deep-result": rewrite(f"{CASE}/result.json", DEEP),
    "huge-result": rewrite(f"{CASE}/result.json", size=65 << 20),
    "damaged-raw": rewrite(f"{CASE}/raw.bin", b"RTQRAW1\0" + b"\x01" * 200, reseal=False),
}
RESEALED = {"deep-plan", "deep-result", "huge-result"}
COMMANDS = {
    "show": lambda b, good, out: ["show", b],
    "show-json": lambda b, good, out: ["show", "--json", b],
    "verify": lambda b, good, out: ["verify", b],
    "report": lambda b, good, out: ["report", b, "-o", out / "r.html"],
    "compare": lambda b, good, out: ["compare", b, good],
    "export-raw": lambda b, good, out: ["export", "raw", b],
    "history-add": lambda b, good, out: ["history", "add", b],
    "check": lambda b, good, out: ["check", b],
    "table": lambda b, good, out: ["table", "kek", b, good],
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Every hostile bundle (name -> path), a good one, and the outside folder with its canary."""
    root = tmp_path_factory.mktemp("hostile")
    outside = root / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text(CANARY + "\n")
    good = seal(shutil.copytree(FROZEN / "timer-raw", root / "good"))
    made = {}
    for name, make in HOSTILE.items():
        b = shutil.copytree(good, root / name, symlinks=True)
        make(b, outside)
        made[name] = b
    return made, good, outside


def snapshot(folder: Path) -> dict:
    """Every entry below folder: its content (regular files) and mtime, without following symlinks."""
    out = {}
    for f in sorted(folder.rglob("*")):
        st = f.lstat()
        out[f.relative_to(folder).as_posix()] = (st.st_mtime_ns, f.read_bytes() if f.is_file() else None)
    return out


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_bundle_is_one_line_exit_1_and_never_read_outside(hostile, rtqual_cmd, tmp_path, name, command):
    made, good, outside = hostile
    before = snapshot(outside)
    (tmp_path / "out").mkdir()
    argv = COMMANDS[command](made[name], good, tmp_path / "out")
    out = rtqual_cmd(*argv, timeout=30, cwd=tmp_path, env={**os.environ, "RTQUAL_STORE": str(tmp_path / "h.sqlite")})
    lines = out.stderr.splitlines()
    if command == "verify" and name in RESEALED:  # the files are what the checksums say: only reading tells
        assert out.returncode == 0 and "intact" in out.stdout and not lines, out
    else:
        assert out.returncode == 1 and "Traceback" not in out.stderr and 1 <= len(lines) <= 2, out
    assert all(x.startswith("rtqual: ") for x in lines), out.stderr
    assert CANARY not in out.stdout and CANARY not in out.stderr
    assert snapshot(outside) == before


def test_a_report_or_comparison_beside_another_bundle_leaves_it_alone(hostile, rtqual_cmd, tmp_path):
    _, good, _ = hostile
    other = seal(shutil.copytree(FROZEN / "scenario", tmp_path / "other"))
    manifest = (other / "manifest.json").read_bytes()
    assert rtqual_cmd("report", good, "-o", other / "r.html").returncode == 0
    assert rtqual_cmd("compare", good, good, "--report", other / "c.html").returncode == 0
    assert (other / "manifest.json").read_bytes() == manifest
    verify = rtqual_cmd("verify", other)
    assert verify.returncode == 1 and "r.html: unexpected" in verify.stdout and "c.html: unexpected" in verify.stdout


def test_a_bundles_own_report_is_recorded_in_its_own_manifest(rtqual_cmd, tmp_path):
    b = seal(shutil.copytree(FROZEN / "scenario", tmp_path / "b"))
    assert rtqual_cmd("report", b).returncode == 0
    assert "report.html" in json.loads((b / "manifest.json").read_text())["checksums"]
    assert rtqual_cmd("verify", b).returncode == 0


def test_verify_names_an_escaping_entry_not_what_it_points_to(hostile, rtqual_cmd):
    made, _, outside = hostile
    out = rtqual_cmd("verify", made["climbing-key"])
    assert "../outside/canary.txt: climbs out of the bundle (not read)" in out.stdout
    out = rtqual_cmd("verify", made["case-out"])
    assert f"{CASE}: a symlink" in out.stdout and CANARY not in out.stdout
    out = rtqual_cmd("verify", made["newline-key"])
    assert "x\\n" in out.stdout  # one line: the control character shown escaped


# --- issue 34: one door for every field (classes 2, 3 and tail inputs), class x field x command, in-process ---

FIELD_ROWS = [(cls, i) for cls, rows in hostile_fields.CLASSES.items() for i in range(len(rows))]


@pytest.fixture(scope="module")
def field_bundles(tmp_path_factory):
    """A good bundle, and a folder to make each hostile one in."""
    root = tmp_path_factory.mktemp("fields")
    return hostile_fields.good_copy("timer-raw", root / "good"), root


@pytest.mark.parametrize("cls,i", FIELD_ROWS, ids=[f"{c}-{i}" for c, i in FIELD_ROWS])
def test_a_field_of_the_wrong_type_or_size_is_damage_named_in_one_line(field_bundles, cls, i):
    good, root = field_bundles
    rel, dotted, value = hostile_fields.CLASSES[cls][i]
    b = hostile_fields.hostile_copy(rel, dotted, value, root / f"{cls}-{i}")
    (root / f"out-{cls}-{i}").mkdir()
    for name, argv in hostile_fields.commands(b, good, root / f"out-{cls}-{i}").items():
        t0 = time.monotonic()
        code, out, err = hostile_fields.call(argv)
        assert code != "hang" and hostile_fields.sound(code, err), (name, rel, dotted, code, err)
        assert time.monotonic() - t0 < hostile_fields.CALL_S
        if cls != "tail" and name in ("show", "verify", "report") and (name != "show" or rel != hostile_fields.H):
            # the door names the file and the field (hist.json: when read, by the report, and by verify)
            said = out if name == "verify" else err
            assert code == 1 and rel in said and "read as unknown" in said, (name, said)
        if cls == "tail" and name == "tail":  # the record is left out, and said
            assert code == 1 and "stream.jsonl: damaged (1 record(s) of the wrong shape" in err, err
    assert "1\n[script]" not in hostile_fields.call(["advise", "--bundle", str(b), "--emit", "tuned"])[1]

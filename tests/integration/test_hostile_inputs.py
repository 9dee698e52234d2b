"""Every input is untrusted (issue 21 item 3), through the CLI as a user would type it: each hostile input is
exit 1, exactly one line on stderr, no traceback, and nothing made or changed where it should not be. Classes:
store URLs and store files, --listen hosts, imported numbers and labels, output paths in kernel trees, the
scenario case cap, and a file named like a probe. HOSTILE counts the inputs tried (the issue's note)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA
from rtqual.commands import run as run_command
from rtqual.errors import RtqError
from rtqual.publish.store import WindowSink, open_store, writer_lock
from rtqual.scenario.model import MAX_CASES, MAX_SCENARIO_BYTES

BUNDLE = DATA / "bundles" / "ioc"
CT = DATA / "imports" / "cyclictest"


def one_line_error(out: subprocess.CompletedProcess, *fragments: str) -> str:
    """Assert exit 1, one stderr line "rtqual: error: ..." holding every fragment, no traceback; the line."""
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith("rtqual: error:") and all(f in lines[0] for f in fragments), lines[0]
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- stores: scheme, foreign and newer databases, read-only, locked -------------------------------------------

SCHEMES = ["mysql://u@h/db", "http://example.org/x", "HTTPS://h/x", "redis://h:1", "sqlite://", "ftp://a/b"]


@pytest.mark.parametrize("url", SCHEMES)
@pytest.mark.parametrize("command", [["history"], ["baseline", "list"], ["check", str(BUNDLE)]])
def test_unsupported_store_scheme_is_refused_and_creates_nothing(rtqual_cmd, tmp_path, url, command):
    out = rtqual_cmd(*command, "--store", url, cwd=tmp_path)
    one_line_error(out, "history store")
    assert list(tmp_path.iterdir()) == []  # no ./mysql:/u@h/db file


def test_unsupported_store_scheme_is_refused_before_a_run_or_import(rtqual_cmd, tmp_path):
    script = tmp_path / "fake.txt"
    script.write_text("sample 0 1000\n")
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / "b", "-q", "--store", "mysql://u@h/db")
    one_line_error(out, "unsupported scheme 'mysql://'")
    assert not (tmp_path / "b").exists()
    out = rtqual_cmd("import", "cyclictest", CT / "cyclictest-h400.json", "-o", tmp_path / "i", "--store", "http://x")
    one_line_error(out, "unsupported scheme 'http://'")
    assert not (tmp_path / "i").exists()
    out = rtqual_cmd("monitor", "--probe", "fake", "--script", script, "--listen", "off", "--store", "mysql://h/d")
    one_line_error(out, "unsupported scheme")


def foreign_stores(folder: Path) -> dict[str, Path]:
    """SQLite files rtqual did not write: another program's tables, a schema_version of another shape, a newer
    rtqual's schema, and a file that is not a database."""
    made = {}
    for name, sql in {
        "notes": ["CREATE TABLE notes (id INTEGER, text TEXT)", "INSERT INTO notes VALUES (1, 'mine')"],
        "hosts": ["CREATE TABLE hosts (x TEXT)"],
        "version-shape": ["CREATE TABLE schema_version (a, b)"],
        "version-text": [
            "CREATE TABLE schema_version (version, applied_unix_s)",
            "INSERT INTO schema_version VALUES ('one', 0)",
        ],  # fmt: skip
        "newer": [
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_unix_s DOUBLE PRECISION)",
            "INSERT INTO schema_version VALUES (99, 0)",
        ],  # fmt: skip
    }.items():
        path = folder / f"{name}.sqlite"
        with sqlite3.connect(path) as db:
            for statement in sql:
                db.execute(statement)
        db.close()
        made[name] = path
    made["junk"] = folder / "junk.sqlite"
    made["junk"].write_bytes(b"not a database " * 100)
    return made


WHY = {
    "notes": "not an rtqual history store",
    "hosts": "not an rtqual history store",
    "version-shape": "not an rtqual history store",
    "version-text": "not an rtqual history store",
    "newer": "written by a newer rtqual (schema 99",
    "junk": "not an SQLite database",
}


@pytest.mark.parametrize("kind", sorted(WHY))
@pytest.mark.parametrize(
    "command",
    [["history"], ["history", "add", str(BUNDLE)], ["baseline", "list"], ["check", str(BUNDLE), "--baseline", "b"]],
)
def test_foreign_or_newer_store_is_refused_and_left_as_it_was(rtqual_cmd, tmp_path, kind, command):
    path = foreign_stores(tmp_path)[kind]
    before = digest(path)
    one_line_error(rtqual_cmd(*command, "--store", path), WHY[kind])
    assert digest(path) == before  # no rtqual tables added to someone else's database


@pytest.fixture
def read_only_store(tmp_path):
    """A valid store on a read-only mount (root: a read-only bind mount) or, without root, in a read-only
    folder; yields (store path, how)."""
    src = tmp_path / "src"
    src.mkdir()
    with open_store(str(src / "h.sqlite")) as s:
        s.add_run(BUNDLE)
    mnt = tmp_path / "ro"
    mnt.mkdir()
    mounted = False
    if os.geteuid() == 0:
        ok = subprocess.run(["mount", "--bind", src, mnt], capture_output=True).returncode == 0
        mounted = ok and subprocess.run(["mount", "-o", "remount,bind,ro", mnt], capture_output=True).returncode == 0
        if ok and not mounted:
            subprocess.run(["umount", mnt])
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("cannot bind-mount read-only here (no mount namespace rights)")
        mnt.rmdir()
        src.rename(mnt)
        (mnt / "h.sqlite").chmod(0o444)
        mnt.chmod(0o555)
    try:
        yield mnt / "h.sqlite"
    finally:
        if mounted:
            subprocess.run(["umount", mnt])
        else:
            mnt.chmod(0o755)


def test_a_store_on_a_read_only_mount_is_read_and_writing_says_read_only(rtqual_cmd, read_only_store):
    out = rtqual_cmd("history", "--store", read_only_store, "--json")
    assert out.returncode == 0, out.stderr
    assert [r["label"] for r in json.loads(out.stdout)["runs"]] != []
    assert rtqual_cmd("baseline", "list", "--store", read_only_store).returncode == 0
    one_line_error(rtqual_cmd("history", "add", BUNDLE, "--store", read_only_store), "read-only")
    one_line_error(rtqual_cmd("baseline", "set", BUNDLE, "--name", "x", "--store", read_only_store), "read-only")


def test_a_locked_store_is_said_locked_not_a_full_buffer(tmp_path):
    path = tmp_path / "h.sqlite"
    open_store(str(path)).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer's transaction, held
    try:
        assert "locked by another writer" in (writer_lock(str(path)) or "")
        sink = WindowSink(str(path))
        sink.put({"host": "h", "probe": "p", "cpu": 0, "start_unix_s": 1.0, "duration_s": 1.0, "samples": 1,
                  "over_threshold": 0, "overruns": 0})  # fmt: skip
        left = sink.close(timeout_s=1)
        assert left == 1 and "locked by another writer" in sink.reason() and "buffer" not in sink.reason()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert writer_lock(str(path)) is None


def test_the_monitor_says_a_locked_store_is_locked(tmp_path):
    from monitoring import MonitorProc

    path = tmp_path / "h.sqlite"
    open_store(str(path)).close()
    script = tmp_path / "fake.txt"
    script.write_text("repeat 100000\nsample 0 20000\nsleep 20\nprogress\nend\n")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        mon = MonitorProc(["monitor", "--probe", "fake", "--script", str(script), "--window", "1s", "--json",
                           "--listen", "off", "--store", str(path)])  # fmt: skip
        mon.wait_windows(2)
        code, err = mon.stop()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 0, err
    said = [line for line in err.splitlines() if "window(s) not written" in line]
    assert len(said) == 1 and "locked by another writer" in said[0] and "buffer was full" not in said[0], err


# --- --listen host names -------------------------------------------------------------------------------------

LISTEN = [
    "a..b:9000",
    "a" * 64 + ":9000",
    ("a" * 63 + ".") * 4 + "com:9000",  # 256 characters
    "a\nb:9000",
    "a\tb:9000",
    "a\x1b[2Jb:9000",
    "-a.example:9000",
    "a-.example:9000",
    "a b:9000",
    "bücher.example:9000",
    "[zz::1]:9000",
    "[127.0.0.1]:9000",
    "a_b:9000",
    ".:9000",
    "127.0.0.1:٩٠٠٠",
]


@pytest.mark.parametrize("listen", LISTEN)
def test_listen_hosts_that_are_not_names_are_one_line(rtqual_cmd, listen):
    one_line_error(rtqual_cmd("monitor", "--store", "off", "--listen", listen, timeout=60), "--listen")


# --- imports: numbers range-checked, labels without control characters ---------------------------------------


def cyclictest_json(**thread) -> str:
    t = {"cycles": 10, "min": 1, "max": 9, "avg": 4.0, "cpu": 0, "histogram": {"4": 10}} | thread
    return json.dumps({"cmdline:": "cyclictest -a -h 400 -p 80 -m", "thread": {"0": t}})


IMPORTS = {
    "cpu -1": ("cyclictest", "in.json", cyclictest_json(cpu=-1), "cpu -1"),
    "cpu 2^40": ("cyclictest", "in.json", cyclictest_json(cpu=2**40), "not a CPU number"),
    "cpu 8192": ("cyclictest", "in.json", cyclictest_json(cpu=8192), "not a CPU number"),
    "thread number as huge CPU": (
        "cyclictest",
        "in.json",
        json.dumps({"thread": {"999999999999": {"cycles": 1, "min": 1, "max": 1, "avg": 1}}}),
        "not a CPU number",
    ),
    "cycles 2^62": ("cyclictest", "in.json", cyclictest_json(cycles=2**62), "too large"),
    "max beyond a minute": ("cyclictest", "in.json", cyclictest_json(max=10**12), "out of range"),
    "avg beyond a minute": ("cyclictest", "in.json", cyclictest_json(avg=1e12), "out of range"),
    "priority -5": (
        "cyclictest",
        "in.json",
        cyclictest_json().replace("-p 80", "-p -5"),
        "priority -5 out of range",
    ),
    "priority 1000": ("cyclictest", "in.json", cyclictest_json().replace("-p 80", "-p 1000"), "priority 1000"),
    "loops -3": ("cyclictest", "in.json", cyclictest_json().replace("-m", "-m -l -3"), "loops -3"),
    "version with a newline": (
        "cyclictest",
        "in.json",
        json.dumps({**json.loads(cyclictest_json()), "rt_test_version:": "2.6\nFORGED: pass"}),
        "version holds a control character",
    ),
    "host name with a newline": (
        "cyclictest",
        "in.json",
        json.dumps({**json.loads(cyclictest_json()), "sysinfo": {"nodename": "vm\nFORGED"}}),
        "hostname holds a control character",
    ),
    "label with a newline (file name)": (
        "cyclictest",
        "run\nFORGED.txt",
        "# Histogram\n000004 000010\n# Total: 000000010\n# Min Latencies: 00001\n# Avg Latencies: 00004\n"
        "# Max Latencies: 00009\n# Histogram Overflows: 00000\n",
        "label holds a control character",
    ),
    "text thread count beyond the CPUs": (
        "cyclictest",
        "wide.txt",
        "# Histogram\n000004 "
        + " ".join(["000001"] * 9000)
        + "\n# Min Latencies: "
        + " ".join(["00001"] * 9000)
        + "\n# Avg Latencies: "
        + " ".join(["00004"] * 9000)
        + "\n# Max Latencies: "
        + " ".join(["00004"] * 9000)
        + "\n# Histogram Overflows: "
        + " ".join(["00000"] * 9000)
        + "\n",
        "not a CPU number",
    ),
    "jitterdebugger host name with an escape": (
        "jitterdebugger",
        "results.json",
        json.dumps({"cpu": {"0": {"count": 5, "min": 1, "max": 9, "avg": 4}}, "sysinfo": {"nodename": "a\x1b[31m"}}),
        "hostname holds a control character",
    ),
    "jitterdebugger CPU 99999": (
        "jitterdebugger",
        "results.json",
        json.dumps({"cpu": {"99999": {"count": 5, "min": 1, "max": 9, "avg": 4}}}),
        "not a CPU number",
    ),
}


@pytest.mark.parametrize("case", sorted(IMPORTS))
def test_imports_range_checked_and_labels_one_line(rtqual_cmd, tmp_path, case):
    tool, name, content, says = IMPORTS[case]
    src = tmp_path / name
    src.write_text(content)
    one_line_error(rtqual_cmd("import", tool, src, "-o", tmp_path / "out"), says)
    assert not (tmp_path / "out").exists()  # nothing written when an input is bad


# --- outputs under /proc, /sys, /dev -------------------------------------------------------------------------


def outputs(tmp_path: Path) -> dict[str, list]:
    """Every output option with a path in a kernel or device tree (directly or through a symlink)."""
    (tmp_path / "to-proc").symlink_to("/proc/self")
    script = tmp_path / "fake.txt"
    script.write_text("sample 0 1000\n")
    scen = tmp_path / "s.toml"
    scen.write_text('[run]\noutput = "/proc/rtqual-x"\n[[case]]\nprobe = "timer"\n')
    plain = tmp_path / "plain.toml"
    plain.write_text('[[case]]\nprobe = "timer"\n')
    return {
        "report -o": ["report", BUNDLE, "-o", "/proc/rtqual.html"],
        "report --png": ["report", BUNDLE, "--png", "/sys/rtqual-png"],
        "report -o via symlink": ["report", BUNDLE, "-o", tmp_path / "to-proc" / "x.html"],
        "compare --report": ["compare", BUNDLE, BUNDLE, "--report", "/dev/rtqual.html"],
        "import --output": ["import", "cyclictest", CT / "cyclictest-h400.json", "--output", "/proc/rtqual-imp"],
        "run -o": ["run", "fake", "--script", script, "-q", "-o", "/dev/shm/rtqual-run"],
        "scenario run -o": ["run", plain, "-q", "-o", "/sys/rtqual-run"],
        "scenario output": ["run", scen, "-q"],
        "scenario plan": ["plan", scen],
        "selftest -o": ["selftest", "--quick", "-o", "/proc/rtqual-st"],
        "monitor --textfile": ["monitor", "--store", "off", "--listen", "off", "--textfile", "/proc"],
        "--store": ["history", "--store", "/proc/self/rtqual.sqlite"],
    }


@pytest.mark.parametrize(
    "option",
    ["report -o", "report --png", "report -o via symlink", "compare --report", "import --output", "run -o",
     "scenario run -o", "scenario output", "scenario plan", "selftest -o", "monitor --textfile", "--store"],
)  # fmt: skip
def test_outputs_in_kernel_trees_are_refused(rtqual_cmd, tmp_path, option):
    line = one_line_error(rtqual_cmd(*outputs(tmp_path)[option], timeout=60))
    assert any(f"in {t}" in line for t in ("/proc", "/sys", "/dev")), line


# --- the scenario case cap -----------------------------------------------------------------------------------


def matrix(*lengths: int) -> str:
    axes = [("interval", lambda i: f'"{i + 1}ms"'), ("duration", lambda i: f'"{i + 1}s"'),
            ("priority", lambda i: str(i % 99 + 1))]  # fmt: skip
    rows = [f"{name} = [{', '.join(fmt(i) for i in range(n))}]" for (name, fmt), n in zip(axes, lengths)]
    return "[matrix]\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("lengths", [(100, 100, 99), (MAX_CASES + 1,), (101, 100)])
@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_matrix_beyond_the_cap_is_refused_before_it_is_expanded(rtqual_cmd, tmp_path, lengths, command):
    scen = tmp_path / "big.toml"
    scen.write_text(matrix(*lengths))
    started = time.monotonic()
    out = rtqual_cmd(command, scen, timeout=60)
    one_line_error(out, f"cap of {MAX_CASES} cases")
    assert time.monotonic() - started < 15  # refused, not expanded (10^6 cases took > 20 s)


def test_a_matrix_at_the_cap_is_planned(rtqual_cmd, tmp_path):
    scen = tmp_path / "ok.toml"
    scen.write_text(matrix(100, 2))
    out = rtqual_cmd("plan", scen, "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["cases"]) == 200


# --- a file named like a probe -------------------------------------------------------------------------------


def test_a_file_named_like_a_probe_does_not_hide_the_probe(rtqual_cmd, tmp_path, monkeypatch):
    (tmp_path / "timer").write_text("not a scenario\n")
    (tmp_path / "mine").write_text("[[case]]\n")
    monkeypatch.chdir(tmp_path)
    assert not run_command.is_scenario_target(["run", "timer", "--duration", "1s"])
    assert run_command.is_scenario_target(["run", "./timer"]) and run_command.is_scenario_target(["run", "mine"])
    assert run_command.is_scenario_target(["run", "x.toml"]) and not run_command.is_scenario_target(["run", "nothing"])
    out = subprocess.run([sys.executable, "-m", "rtqual", "run", "timer", "--duration", "-5s"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    line = one_line_error(out, "--duration")
    assert "unrecognized arguments" not in line and "scenario" not in line


# hostile inputs tried above (for the note): schemes x 3 commands, 3 before a run/import/monitor,
# foreign stores x 4 commands, read-only 2 writes, locked 2, --listen, imports, 12 outputs, 3 caps x 2, 1 probe file
HOSTILE = len(SCHEMES) * 3 + 3 + len(WHY) * 4 + 2 + 2 + len(LISTEN) + len(IMPORTS) + 12 + 3 * 2 + 1


def hostile_scenarios(folder: Path) -> dict[str, Path]:
    """Scenario files that are not text of a scenario's size: nesting too deep, a FIFO (would block a plain
    read), /dev/zero behind a link (would fill memory), a file over the size cap."""
    deep, fifo, zero, big = (folder / f"{n}.toml" for n in ("deep", "fifo", "zero", "big"))
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    big.write_text("# " + "x" * MAX_SCENARIO_BYTES + "\n")
    return {"deep": deep, "fifo": fifo, "zero": zero, "big": big}


@pytest.mark.parametrize("kind", ["deep", "fifo", "zero", "big"])
@pytest.mark.parametrize("command", ["plan", "run"])
def test_hostile_scenario_files_are_one_line_and_never_block(rtqual_cmd, tmp_path, kind, command):
    path = hostile_scenarios(tmp_path)[kind]
    one_line_error(rtqual_cmd(command, path, timeout=30), str(path.name))


def test_the_scenario_reader_itself_never_blocks_on_a_fifo(tmp_path):
    """scenario.load is safe without the command line's checks before it (another caller, a test)."""
    from rtqual.scenario import model

    with pytest.raises(RtqError, match="not a regular file"):
        model.load(hostile_scenarios(tmp_path)["fifo"])


# --- issue 34 class 10: a recorded host tree is a confined tree -------------------------------------------------

TREE_CANARY = "CANARY-34-outside-the-tree"


def hostile_trees(folder: Path) -> dict[str, Path]:
    """Trees for `advise --root`: a symlink leading out (to a canary), a FIFO, /dev/zero, a symlinked folder."""
    (folder / "canary").write_text(TREE_CANARY + "\n")
    made = {}
    for name, make in {
        "symlink-out": lambda t: (t / "proc/sys/kernel/version").symlink_to(folder / "canary"),
        "fifo": lambda t: os.mkfifo(t / "proc/cmdline"),
        "dev-zero": lambda t: (t / "proc/interrupts").symlink_to("/dev/zero"),
        "folder-out": lambda t: (t / "proc/sys/kernel").rmdir() or (t / "proc/sys/kernel").symlink_to(folder),
    }.items():
        t = folder / name
        (t / "proc/sys/kernel").mkdir(parents=True)
        (t / "sys/devices/system/cpu").mkdir(parents=True)
        (t / "sys/devices/system/cpu/online").write_text("0-1\n")
        make(t)
        made[name] = t
    return made


@pytest.mark.parametrize("kind", ["symlink-out", "fifo", "dev-zero", "folder-out"])
@pytest.mark.parametrize("argv", [["advise", "--root"], ["advise", "--json", "--root"]])
def test_a_hostile_host_tree_is_read_inside_only(rtqual_cmd, tmp_path, kind, argv):
    tree = hostile_trees(tmp_path)[kind]
    t0 = time.monotonic()
    out = rtqual_cmd(*argv, tree, timeout=60)
    assert time.monotonic() - t0 < 60 and "Traceback" not in out.stderr, out.stderr
    assert out.returncode in (0, 1) and TREE_CANARY not in out.stdout + out.stderr


def test_the_tree_reader_refuses_what_is_not_a_regular_file_inside(tmp_path):
    from rtqual.results import tree

    t = hostile_trees(tmp_path)
    assert tree.read_text(t["symlink-out"], t["symlink-out"] / "proc/sys/kernel/version")[0] is None
    assert "not a regular file" in tree.read_text(t["fifo"], t["fifo"] / "proc/cmdline")[1]
    assert tree.read_text(t["dev-zero"], t["dev-zero"] / "proc/interrupts")[0] is None
    assert tree.read_text(t["fifo"], t["fifo"] / "sys/devices/system/cpu/online") == ("0-1", "")


# --- issue 34 item 1: a folder that is no bundle is said to be none by every command --------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["restore"],
        ["restore", "--dry-run"],
        ["show"],
        ["verify"],
        ["report"],
        ["tail"],
        ["table", "kek"],
        ["fleet"],
        ["advise", "--bundle"],
        ["export", "raw"],
    ],
)
def test_a_folder_that_is_no_bundle_is_said_none(rtqual_cmd, tmp_path, argv):
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    one_line_error(rtqual_cmd(*argv, folder), "not an rtqual bundle" if argv[0] != "fleet" else str(folder))


# --- issue 34 class 9: writes never go through a planted symlink nor onto an input bundle ----------------------


def test_tail_svg_never_writes_through_a_planted_symlink(rtqual_cmd, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    svg = tmp_path / "svg"
    svg.mkdir()
    b = tmp_path / "b"
    shutil.copytree(DATA / "bundles" / "timer-raw", b)
    random.seed(34)
    with open(b / "cases/001-timer/stream.jsonl", "a") as f:  # 20 minutes of 1 s blocks: a tail to draw
        for i in range(1200):
            row = {"cpu": 0, "count": 10 * i, "min_ns": 9000, "max_ns": 90000}
            f.write(
                json.dumps(
                    {"type": "progress", "cpus": [{**row, "window_max_ns": int(20000 + random.expovariate(1 / 3000))}]}
                )
                + "\n"
            )
    seal_copy(b, b)
    (svg / "tail-01-cpu0.svg").symlink_to(victim)
    out = rtqual_cmd("tail", b, "--svg", svg, timeout=300)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    assert victim.read_text() == "mine\n" and not (svg / "tail-01-cpu0.svg").is_symlink()
    assert (svg / "tail-01-cpu0.svg").read_text().startswith("<svg")


def test_fleet_report_never_follows_a_planted_temp_symlink(rtqual_cmd, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (tmp_path / ".f.html.tmp").symlink_to(victim)
    b = seal_copy(BUNDLE, tmp_path / "b")
    out = rtqual_cmd("fleet", b, "--report", tmp_path / "f.html", timeout=120)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    assert victim.read_text() == "mine\n" and (tmp_path / "f.html").is_file()


@pytest.mark.parametrize(
    "argv",
    [
        lambda b, g: ["fleet", b, "--report", b / "cases/002-ioc/result.json"],
        lambda b, g: ["compare", b, g, "--report", b / "plan.json"],
        lambda b, g: ["report", b, g, "-o", g / "manifest.json"],
        lambda b, g: ["tail", b, "--svg", b / "cases"],
    ],
)
def test_an_output_onto_an_input_bundle_is_refused(rtqual_cmd, tmp_path, argv):
    b, g = seal_copy(BUNDLE, tmp_path / "b"), seal_copy(BUNDLE, tmp_path / "g")
    before = {p: digest(p) for p in [*b.rglob("*"), *g.rglob("*")] if p.is_file()}
    one_line_error(rtqual_cmd(*argv(b, g), timeout=120), "inside the bundle")
    assert {p: digest(p) for p in [*b.rglob("*"), *g.rglob("*")] if p.is_file()} == before


def seal_copy(src: Path, dst: Path) -> Path:
    """A copy of a bundle (src itself when dst is src) with checksums of every file."""
    from rtqual.results import bundle as bundle_mod

    if src != dst:
        shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m["checksums"] = {
        f.relative_to(dst).as_posix(): bundle_mod.sha256_file(f)
        for f in sorted(dst.rglob("*"))
        if f.is_file() and f.relative_to(dst).as_posix() not in bundle_mod.UNSEALED
    }
    (dst / "manifest.json").write_text(json.dumps(m, indent=1))
    return dst

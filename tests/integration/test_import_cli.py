"""`rtqual import TOOL FILE... --output BUNDLE` as a user runs it: the bundle it writes is read by
today's `rtqual show`, `show --json` and `compare` unchanged; an imported cyclictest run pairs with
rtqual's timer run of the same settings; bad input is one line and exit 1."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
IMP = DATA / "imports"
INPUTS = {
    "cyclictest": [IMP / "cyclictest" / f for f in ("cyclictest-h3000.json", "cyclictest-h400.txt")],
    "rtla": [IMP / "rtla" / "timerlat-hist.txt"],
    "jitterdebugger": [IMP / "jitterdebugger" / "run"],
    "rteval": [IMP / "rteval" / "summary.xml"],
}


def imports(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "rtqual", "import", *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd
    )


@pytest.mark.parametrize("tool", sorted(INPUTS))
def test_imported_bundle_is_read_by_show_and_compare(tmp_path, rtqual_cmd, tool):
    out = tmp_path / "b"
    r = imports(tool, *INPUTS[tool], "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["status"] == "complete"
    assert manifest["source"]["tool"] == tool and manifest["source"]["files"]
    shown = rtqual_cmd("show", out, "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert [c["id"] for c in doc["cases"]] == [c["id"] for c in manifest["cases"]]
    for c in doc["cases"]:
        assert c["per_cpu"] and c["stats"]["count"] == sum(s["count"] for s in c["per_cpu"].values())
        assert c["warnings"]  # what the source lacks is said
    for args in (("show", out), ("compare", out, out), ("compare", out, out, "--json")):
        r = rtqual_cmd(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    hist = json.loads((out / "cases" / manifest["cases"][0]["id"] / "hist.json").read_text())
    assert (
        hist["layout"] == "hdr"
        and hist["per_cpu"]
        and (out / "cases" / manifest["cases"][0]["id"] / "hist-all.hdr").is_file()
    )


def test_cyclictest_import_pairs_with_rtquals_timer_run(tmp_path, rtqual_cmd):
    """The frozen timer-raw bundle is `rtqual run timer --cpus 0 --interval 1ms --loops 500` (priority 80);
    cyclictest-cpu0.json is `cyclictest -m -p 80 -i 1000 -l 500 -t 1 -a 0 -h 1000`: same id, same label."""
    out = tmp_path / "ct"
    assert imports("cyclictest", IMP / "cyclictest" / "cyclictest-cpu0.json", "-o", out).returncode == 0
    r = rtqual_cmd("compare", out, DATA / "bundles" / "timer-raw", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (pair,) = doc["pairs"]
    assert pair["id"] == pair["id_b"] == "001-timer" and pair["label_a"] == pair["label_b"]
    assert pair["a"]["count"] == 500 == pair["b"]["count"] and doc["only_a"] == doc["only_b"] == []
    text = rtqual_cmd("compare", out, DATA / "bundles" / "timer-raw")
    assert "case 001-timer: timer fifo:80 1ms cpus 0 " in text.stdout


def test_default_output_name(tmp_path):
    r = imports("rtla", IMP / "rtla" / "timerlat-hist.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("rtqual-import-rtla-") and (tmp_path / r.stdout.strip() / "manifest.json").is_file()


def _bad(tmp_path, name: str, content: bytes) -> Path:
    f = tmp_path / name
    f.write_bytes(content)
    return f


@pytest.mark.parametrize(
    "tool,maker",
    [
        ("cyclictest", lambda t: _bad(t, "cut.json", (IMP / "cyclictest" / "cyclictest-h400.json").read_bytes()[:900])),
        ("cyclictest", lambda t: _bad(t, "shape.json", b'{"thread": {"0": ["cycles", 5]}}')),
        ("cyclictest", lambda t: _bad(t, "garbage.txt", b"\x00\x01 garbage \xff")),
        ("rtla", lambda t: _bad(t, "cut.txt", (IMP / "rtla" / "timerlat-hist.txt").read_bytes()[:500])),
        ("rtla", lambda t: _bad(t, "text.txt", b"just some text\n")),
        ("jitterdebugger", lambda t: _bad(t, "results.json", b'{"cpu": null}')),
        ("cyclictest", lambda t: t / "missing.json"),
        ("rtla", lambda t: t),
        ("oslat", lambda t: _bad(t, "x.txt", b"x")),
    ],
)
def test_bad_input_is_one_line_and_exit_1(tmp_path, tool, maker):
    r = imports(tool, maker(tmp_path), "-o", tmp_path / "out")
    assert r.returncode == 1
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("rtqual: error: ")
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


def test_existing_output_and_no_arguments(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("")
    r = imports("rtla", IMP / "rtla" / "timerlat-hist.txt", "-o", tmp_path / "out")
    assert r.returncode == 1 and "exists" in r.stderr and len(r.stderr.splitlines()) == 1
    r = imports()
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1

"""A real cyclictest run, imported, set beside rtqual's timer run of the same settings (root, ~1 s
each): `rtqual compare` pairs the two cases by id and label. Invariants only, never latencies."""

import json
import subprocess

from conftest import needs_cyclictest, needs_probe, needs_root

pytestmark = [needs_probe, needs_root, needs_cyclictest]


def test_imported_cyclictest_compares_with_rtqual_timer(tmp_path, rtqual_cmd):
    ct = tmp_path / "ct.json"
    subprocess.run(
        ["cyclictest", "-m", "-p", "80", "-i", "1000", "-l", "300", "-t", "1", "-a", "0", "-h", "20000", "-q"]
        + [f"--json={ct}"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    imp = rtqual_cmd("import", "cyclictest", ct, "--output", tmp_path / "imported", timeout=60)
    assert imp.returncode == 0, imp.stderr
    timer = ["--cpus", "0", "--interval", "1ms", "--loops", "300", "--priority", "80"]  # cyclictest's settings
    run = rtqual_cmd("run", "timer", *timer, "-o", tmp_path / "rt", "-q")
    assert run.returncode in (0, 4), run.stderr
    out = rtqual_cmd("compare", tmp_path / "imported", tmp_path / "rt", "--json")
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads(out.stdout)["pairs"]
    assert pair["id"] == pair["id_b"] == "001-timer"
    assert pair["label_a"] == pair["label_b"] == "timer fifo:80 1ms cpus 0"
    assert pair["a"]["count"] == 300
    a = pair["a"]
    if a["p50_ns"] is not None:  # nothing over 20 ms: cyclictest's percentiles are known
        assert a["min_ns"] <= a["p50_ns"] <= a["max_ns"]

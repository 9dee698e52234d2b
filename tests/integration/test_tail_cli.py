"""rtqual tail and return(PERIOD) requirements through the whole pipeline: the fake probe replays a synthetic
stream with a known tail (one block maximum per progress record), the bundle keeps it, `rtqual tail` reads it."""

import json

import tail_synth
from conftest import needs_probe

pytestmark = needs_probe


def script(path, seconds=1200):
    """Two CPUs; per block a small sample, the block's maximum, then a progress record (compressed time)."""
    lines = []
    for cpu_series in zip(tail_synth.stream(11, -0.2, seconds=seconds), tail_synth.stream(12, -0.2, seconds=seconds)):
        for cpu, top in enumerate(cpu_series):
            lines += [f"sample {cpu} 1000", f"sample {cpu} {top}"]
        lines.append("progress")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_tail_of_a_fake_run_and_its_requirements(tmp_path, rtqual_cmd):
    s = script(tmp_path / "s.txt")
    b = tmp_path / "b"
    req = ["--require", "return(1h) <= 60s", "--require", "return(1d) <= 1us"]
    out = rtqual_cmd("run", "fake", "--script", s, "-o", b, "-q", "--threshold", "1s", *req)
    assert out.returncode in (2, 4), out.stderr  # 1us for a day cannot pass
    shown = json.loads(rtqual_cmd("show", b, "--json").stdout)["cases"][0]
    judged = {r["requirement"]: r for r in shown["requirements_judged"]}

    res = rtqual_cmd("tail", b, "--json", "--period", "7d")
    assert res.returncode == 0, res.stderr
    cases = json.loads(res.stdout)["cases"]
    assert [c["cpu"] for c in cases] == ["0", "1", "all"]
    for c in cases:
        assert c["label"] == shown["label"] and c["blocks"] in (
            1200,
            1201,
        )  # the end may add a last (empty) progress record
        assert [r["period_s"] for r in c["return_levels"]] == [3600.0, 86400.0, 7 * 86400.0, 365 * 86400.0]
        assert c["verdict"] in ("bounded", "light", "heavy", "unfit")
        assert {"independence", "stationarity", "fit"} <= set(c["checks"]) and "levels" in c["backtest"]
        assert c["verdict"] != "heavy" or c["end_point_ns"] is None
    every = cases[-1]
    if every["verdict"] in ("bounded", "light"):
        assert judged["return(1h) <= 60s"]["verdict"] == "pass"
        assert judged["return(1d) <= 1us"]["verdict"] == "fail" and out.returncode == 2
        assert "once a day: ≤" in judged["return(1d) <= 1us"]["note"]
    else:
        assert {r["verdict"] for r in judged.values()} == {"inconclusive"}

    text = rtqual_cmd("tail", b, "--case", shown["label"], "--svg", tmp_path / "svg").stdout
    assert "cpu all:" in text and "cannot predict conditions the run never met" in text
    svgs = sorted((tmp_path / "svg").glob("*.svg"))
    assert len(svgs) == sum(c["verdict"] != "insufficient" for c in cases)
    assert all("return period (s)" in p.read_text() for p in svgs)
    bad = rtqual_cmd("tail", b, "--case", "no such case")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "no case labelled" in bad.stderr

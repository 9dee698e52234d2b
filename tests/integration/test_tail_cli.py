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


def test_a_tail_fit_that_fails_inside_a_run_keeps_the_case(tmp_path, rtqual_cmd):
    """One 1 s block among 1,800 of 20-100 us (the data that made scipy raise inside `rtqual run ... --require
    'return(1d) <= 2ms'`, ending the run "interrupted" with no case result): the run completes, the case is
    kept, the requirement is inconclusive with why, and the bundle verifies."""
    import random

    rng = random.Random(1)
    lines = []
    for i in range(1800):
        lines += [f"sample 0 {1_000_000_000 if i == 900 else rng.randint(20_000, 100_000)}", "progress"]
    s = tmp_path / "s.txt"
    s.write_text("\n".join(lines) + "\n")
    b = tmp_path / "b"
    out = rtqual_cmd(
        "run", "fake", "--script", s, "-o", b, "-q", "--threshold", "10s", "--require", "return(1d) <= 2ms"
    )
    assert out.returncode in (2, 4), out.stderr
    assert "Traceback" not in out.stderr
    shown = json.loads(rtqual_cmd("show", b, "--json").stdout)
    (case,) = shown["cases"]
    assert case["stats"]["count"] == 1800
    (judged,) = case["requirements_judged"]
    assert judged["verdict"] in ("inconclusive", "fail", "pass")
    if judged["verdict"] == "inconclusive":
        assert judged["note"]
    assert rtqual_cmd("verify", b).returncode == 0
    res = rtqual_cmd("tail", b, "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["cases"]


def test_tail_of_a_stream_with_nan_block_maxima_is_one_line(tmp_path, rtqual_cmd):
    """A bundle whose stream.jsonl carries NaN as a block's maximum, re-sealed: `rtqual tail` says so in one line."""
    from rtqual.results import bundle as bundle_mod

    s = script(tmp_path / "s.txt", seconds=30)
    b = tmp_path / "b"
    rtqual_cmd("run", "fake", "--script", s, "-o", b, "-q", "--threshold", "1s")
    (stream,) = b.glob("cases/*/stream.jsonl")
    stream.write_text(stream.read_text().replace('"window_max_ns":', '"window_max_ns":NaN,"was":', 1))
    m = json.loads((b / "manifest.json").read_text())
    rel = stream.relative_to(b).as_posix()
    m["checksums"][rel] = bundle_mod.sha256_file(stream)
    (b / "manifest.json").write_text(json.dumps(m, indent=1))
    res = rtqual_cmd("tail", b)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and "'window_max_ns' of cpu 0 is no whole number" in res.stderr  # the door

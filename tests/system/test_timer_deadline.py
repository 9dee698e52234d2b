"""The timer under SCHED_DEADLINE (root): it runs, and admission refusals are one line, exit 1."""

import os

from conftest import needs_probe, needs_root, probe_records, rtqual_run, show_json

pytestmark = [needs_probe, needs_root]


def run_deadline(bundle, cpus: str, *opts: str):
    """`rtqual run timer --policy deadline` on `cpus` for 1 s into `bundle`."""
    args = ["--cpus", cpus, "--policy", "deadline", *opts, "--duration", "1s", "-o", bundle, "-q"]
    return rtqual_run("run", "timer", *args, timeout=60)


def test_deadline_runs(tmp_path):
    out = run_deadline(tmp_path / "b", "0", "--runtime", "100us", "--deadline", "500us", "--period", "1ms")
    assert out.returncode == 0, out.stderr + out.stdout
    case = show_json(tmp_path / "b")["cases"][0]
    assert "deadline" in case["label"]
    s = case["stats"]
    assert s["count"] > 0 and abs(s["count"] + s["overruns"] - 1000) <= 2
    _, recs = probe_records("timer", "--cpus", "0", "--policy", "deadline", "--runtime", "50us", "--loops", "50")
    header = recs[0]
    assert header["rt"]["policy"] == "deadline"
    dl = header["params"]["deadline"]
    assert (dl["runtime_ns"], dl["deadline_ns"], dl["period_ns"]) == (50_000, 1_000_000, 1_000_000)
    assert isinstance(dl["pinned"], bool)


def test_refused_admission_one_line(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    out = run_deadline(tmp_path / "b", ",".join(map(str, cpus)), "--runtime", "990us", "--period", "1ms")
    assert out.returncode == 1, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "deadline bandwidth not available" in line and f"{len(cpus)} thread(s)" in line


def test_bad_parameters_one_line():
    out, recs = probe_records("timer", "--check", "--policy", "deadline", "--runtime", "900us", "--deadline", "500us")
    assert out.returncode == 1 and not recs
    assert out.stderr == "rtqual-probe: error: --policy deadline: runtime 900us over deadline 500us\n"

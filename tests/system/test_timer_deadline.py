"""The timer under SCHED_DEADLINE (root): it runs, and admission refusals are one line, exit 1."""

import os

from conftest import needs_probe, needs_root, probe_records, rtqual_run, show_json

pytestmark = [needs_probe, needs_root]


def test_deadline_runs(tmp_path):
    out = rtqual_run(
        "run",
        "timer",
        "--cpus",
        "0",
        "--policy",
        "deadline",
        "--runtime",
        "100us",
        "--deadline",
        "500us",
        "--period",
        "1ms",
        "--duration",
        "1s",
        "-o",
        tmp_path / "b",
        "-q",
        timeout=60,
    )
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
    n = len(os.sched_getaffinity(0))
    cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    out = rtqual_run(
        "run",
        "timer",
        "--cpus",
        cpus,
        "--policy",
        "deadline",
        "--runtime",
        "990us",
        "--period",
        "1ms",
        "--duration",
        "1s",
        "-o",
        tmp_path / "b",
        "-q",
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "deadline bandwidth not available" in line and f"{n} thread(s)" in line


def test_bad_parameters_one_line():
    out, recs = probe_records("timer", "--check", "--policy", "deadline", "--runtime", "900us", "--deadline", "500us")
    assert out.returncode == 1 and not recs
    assert out.stderr == "rtqual-probe: error: --policy deadline: runtime 900us over deadline 500us\n"

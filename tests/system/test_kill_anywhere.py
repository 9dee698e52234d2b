"""Kill-anywhere (issue 14 item 3), the CI-sized part: three runs of benchmarks/kill_anywhere.py's scenario (timer
idle, timer under hackbench in a cpuset, rtqual's EPICS IOC), killed once by each of SIGKILL, SIGTERM and SIGINT at
moments that fall inside a case; every invariant of the campaign must hold (finished cases readable and intact,
the cut case named, host changes and temp folders undone, no process left, exit within 10 s of INT/TERM).
Longer campaigns: `python benchmarks/kill_anywhere.py --runs 50`."""

import importlib.util
from pathlib import Path

import pytest

from conftest import epics_missing, needs_probe

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kill_anywhere.py"
spec = importlib.util.spec_from_file_location("kill_anywhere", SCRIPT)
assert spec and spec.loader
kill_anywhere = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kill_anywhere)

pytestmark = [
    pytest.mark.slow,
    needs_probe,
    pytest.mark.skipif(bool(epics_missing()), reason=f"the scenario has an IOC case: {epics_missing()}"),
]


@pytest.fixture(scope="module")
def full_run_s(tmp_path_factory) -> float:
    """How long an uninterrupted run takes here (and that it meets every invariant)."""
    full = kill_anywhere.one_run(tmp_path_factory.mktemp("full"), "INT", 600)
    assert kill_anywhere.problems(full) == [] and full["status"] == "complete", full
    return full["run_s"]


@pytest.mark.parametrize(
    "signame,fraction",
    [("KILL", 0.8), ("TERM", 0.45), ("INT", 0.15)],
    ids=["kill-in-ioc-case", "term-in-hackbench-case", "int-in-first-case"],
)
def test_killed_run_keeps_finished_cases_and_leaves_nothing(tmp_path, full_run_s, signame, fraction):
    r = kill_anywhere.one_run(tmp_path / "killed", signame, full_run_s * fraction)
    assert kill_anywhere.problems(r) == [], r
    assert r["killed"] and r["exists"], r
    if signame == "KILL":
        assert r["status"] == "running" and r["cut"], r  # show names the cut case
    else:
        assert r["status"] == "interrupted" and r["exit_code"] == 4 and r["exit_s"] < kill_anywhere.EXIT_WITHIN_S

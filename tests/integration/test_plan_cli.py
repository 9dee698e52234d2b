"""`rtqual plan` as a user runs it: expected samples and decidable statistics (--json keys and text), the
command line's --profile/--require on every case, per-case `require`/`profile`, and bad input in one line."""

import json

import pytest

SCENARIO = """
[defaults.timer]
cpus = "0"
interval = "1ms"
duration = "15s"

[[case]]
label = "plain"

[[case]]
label = "kek"
profile = "kek-50hz"

[[case]]
label = "own"
require = ["p99.9 <= 1ms"]
"""


def plan(rtqual_cmd, tmp_path, *args, text=SCENARIO):
    f = tmp_path / "s.toml"
    f.write_text(text)
    return rtqual_cmd("plan", f, *args)


def one_line_error(out, fragment):
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual: error:") and fragment in lines[0], out.stderr
    assert out.stdout == ""


def test_plan_json_gives_samples_and_decidable_statistics(rtqual_cmd, tmp_path):
    out = plan(rtqual_cmd, tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    cases = {c["label"]: c for c in json.loads(out.stdout)["cases"]}
    assert {c["expected_samples"] for c in cases.values()} == {15_000}
    assert all(c["decidable"] == ["p50", "p99", "p99.9"] for c in cases.values())
    assert "decidable_requirements" not in cases["plain"]
    kek = {r["requirement"]: r for r in cases["kek"]["decidable_requirements"]}
    assert kek["p99.99 <= 2ms"]["decidable"] is False and kek["p99.99 <= 2ms"]["samples_needed"] == 100_000
    assert kek["p99.99 <= 2ms"]["duration_needed_ns"] == 110 * 10**9
    assert kek["max < 20ms"]["decidable"] is True
    assert [r["decidable"] for r in cases["own"]["decidable_requirements"]] == [True]


def test_plan_profile_and_require_apply_to_every_case(rtqual_cmd, tmp_path):
    out = plan(rtqual_cmd, tmp_path, "--json", "--profile", "1khz-loop", "--require", "p99 <= 50us")
    assert out.returncode == 0, out.stderr
    cases = {c["label"]: c for c in json.loads(out.stdout)["cases"]}
    given = ["max <= 500us", "p99.99 <= 100us", "overruns == 0", "p99 <= 50us"]
    assert [r["requirement"] for r in cases["plain"]["decidable_requirements"]] == given
    assert [r["requirement"] for r in cases["own"]["decidable_requirements"]] == ["p99.9 <= 1ms", *given]
    kek = [r["requirement"] for r in cases["kek"]["decidable_requirements"]]
    assert kek == ["max < 20ms", "p99.99 <= 2ms", "overruns == 0", "max <= 500us", "p99.99 <= 100us", "p99 <= 50us"]


def test_plan_text_says_it_per_case(rtqual_cmd, tmp_path):
    out = plan(rtqual_cmd, tmp_path, "--require", "p99.99 <= 1ms")
    assert out.returncode == 0, out.stderr
    headers = [line.split() for line in out.stdout.splitlines() if line.startswith("id ")]
    assert headers[1] == ["id", "samples", "decides", "requirements", "decidable"]
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("00") and ":" not in line]
    ends = [" ".join(row[1:]) for row in rows[3:]]
    assert ends == ["15,000 p50 p99 p99.9 0 of 1", "15,000 p50 p99 p99.9 2 of 4", "15,000 p50 p99 p99.9 1 of 2"]
    assert "003-own: cannot decide p99.99 <= 1ms: needs 110,000 samples" in out.stdout
    assert "about 1m50s at 1,000/s" in out.stdout


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--profile", "nosuch"], "--profile"),
        (["--require", "p98 <= 1ms"], "--require 'p98 <= 1ms': unknown statistic"),
        (["--require", "p99 <= 1"], "--require 'p99 <= 1'"),
    ],
)
def test_plan_bad_options_one_line(rtqual_cmd, tmp_path, args, fragment):
    one_line_error(plan(rtqual_cmd, tmp_path, *args), fragment)


@pytest.mark.parametrize(
    "case,fragment",
    [
        ('require = ["p98 <= 1ms"]', "case[1].require[1] 'p98 <= 1ms': unknown statistic"),
        ('requirements = ["ok", "p99 <= 1ms"]', "case[1].requirements[1] 'ok'"),
        ('require = "p99 <= 1ms"', "case[1].require"),
        ('profile = "kek"', "case[1].profile"),
        ('require = ["max < 1s"]\nrequirements = ["max < 1s"]', "case[1]: 'require' and 'requirements'"),
    ],
)
def test_scenario_require_and_profile_checked_at_load(rtqual_cmd, tmp_path, case, fragment):
    text = f'[[case]]\nlabel = "a"\n{case}\n'
    one_line_error(plan(rtqual_cmd, tmp_path, text=text), fragment)


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--profile", "nosuch"], "--profile"),
        (["--require", "p99 <<= 1ms"], "--require"),
    ],
)
def test_scenario_run_refuses_bad_requirements_before_running(rtqual_cmd, tmp_path, args, fragment):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    one_line_error(rtqual_cmd("run", f, "-o", tmp_path / "b", *args), fragment)
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["timer", "--duration", "auto:"], "auto:CAP"),
        (["timer", "--duration", "autox"], "auto or auto:CAP"),
        (["timer", "--duration", "auto:100ms"], "the cap must be at least"),
        (["switch", "--duration", "auto"], "back to back"),
        (["timer", "--duration", "auto", "--loops", "5"], "not allowed"),
        (["fake", "--duration", "auto"], "--duration"),  # the fake probe replays a script: no duration
    ],
)
def test_duration_auto_bad_input_one_line(rtqual_cmd, tmp_path, args, fragment):
    one_line_error(rtqual_cmd("run", *args, "-o", tmp_path / "b"), fragment)

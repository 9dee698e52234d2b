"""Requirements on the command line and in scenario files, the verdicts they give (exit codes 0/2/4), the
capability summary and report.html every run leaves in its bundle (fake probe: known samples, no root)."""

import json

import pytest

from conftest import needs_probe, show_json
from rtqual.answers.verdict import summarize
from rtqual.results.hist import Histogram
from rtqual.results.stream import read_stream

pytestmark = needs_probe


def script(tmp_path, values_ns, name="s"):
    path = tmp_path / f"{name}.script"
    path.write_text("".join(f"sample 0 {v}\n" for v in values_ns))
    return path


def run_fake(rtqual_cmd, tmp_path, values_ns, *extra, out="b"):
    return rtqual_cmd("run", "fake", "--script", script(tmp_path, values_ns), "-o", tmp_path / out, "-q", *extra)


@pytest.mark.parametrize(
    "require,code,verdict",
    [
        (["max <= 1ms", "overruns == 0"], 0, "pass"),
        (["p99 <= 5us"], 2, "fail"),  # 2000 samples: p99 is 10us
        (["p99.99 <= 1ms"], 4, "inconclusive"),  # needs 100 000 samples
        (["count >= 2000", "over(9us) <= 100%"], 0, "pass"),
    ],
)
def test_require_gives_the_verdict_and_exit_code(tmp_path, rtqual_cmd, require, code, verdict):
    args = [x for r in require for x in ("--require", r)]
    out = run_fake(rtqual_cmd, tmp_path, [10_000] * 2000, *args)
    assert out.returncode == code, out.stderr
    shown = show_json(tmp_path / "b")
    (case,) = shown["cases"]
    assert case["verdict"] == verdict == shown["verdict"]
    assert [v["requirement"] for v in case["requirements_judged"]] == require
    assert "requirement " in out.stdout


def test_profile_and_a_bad_requirement(tmp_path, rtqual_cmd):
    out = run_fake(rtqual_cmd, tmp_path, [10_000] * 50, "--profile", "kek-50hz")
    assert out.returncode == 4  # p99.99 of 50 samples: undecided
    judged = show_json(tmp_path / "b")["cases"][0]["requirements_judged"]
    assert [v["verdict"] for v in judged] == ["pass", "inconclusive", "pass"]
    for bad in (["--require", "p98 < 1ms"], ["--require", "max < 10"], ["--profile", "nope"]):
        out = run_fake(rtqual_cmd, tmp_path, [1], *bad, out="c")
        assert out.returncode == 1 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
        assert not (tmp_path / "c").exists()  # said before anything runs


def test_scenario_requirements_defaults_and_case(tmp_path, rtqual_cmd):
    (tmp_path / "sc.toml").write_text(
        '[defaults]\nrequirements = ["max <= 1ms"]\n[defaults.timer]\nduration = "1s"\n'
        '[[case]]\nlabel = "a"\n[[case]]\nlabel = "b"\nrequirements = ["p50 < 5us"]\n'
        '[[case]]\nlabel = "c"\nprofile = "1khz-loop"\nrequirements = []\n'
    )
    out = rtqual_cmd("plan", tmp_path / "sc.toml", "--json")
    assert out.returncode == 0, out.stderr
    cases = json.loads(out.stdout)["cases"]
    assert [c.get("require") for c in cases] == [
        ["max <= 1ms"],
        ["p50 < 5us"],  # a case's list replaces the defaults'
        ["max <= 500us", "p99.99 <= 100us", "overruns == 0"],
    ]
    (tmp_path / "bad.toml").write_text('[defaults]\nrequirements = ["p99 <= lots"]\n[[case]]\nlabel = "a"\n')
    out = rtqual_cmd("plan", tmp_path / "bad.toml")
    assert out.returncode == 1 and "case 1: requirement 'p99 <= lots'" in out.stderr and out.stderr.count("\n") == 1


def test_every_run_leaves_its_answer_in_the_bundle(tmp_path, rtqual_cmd):
    out = run_fake(rtqual_cmd, tmp_path, [10_000, 20_000, 30_000])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == str(tmp_path / "b") and lines[-2] == f"report: {tmp_path / 'b' / 'report.html'}"
    assert "capability (from the numbers above):" in out.stdout
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["capability"] and manifest["capability"][0].startswith("fake s.script: worst 30us in 3")
    html = (tmp_path / "b" / "report.html").read_text()
    assert "<svg" in html and "Capability summary" in html
    shown = rtqual_cmd("show", tmp_path / "b").stdout
    assert "capability (from the numbers above):" in shown


def test_report_command_errors_are_one_line(tmp_path, rtqual_cmd):
    out = rtqual_cmd("report", tmp_path / "nosuch")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "not an rtqual bundle" in out.stderr


def test_a_degraded_run_says_so_in_its_verdict():
    h = Histogram()
    h.record(10_000)
    recs = [
        {
            "type": "header",
            "probe": "timer",
            "params": {},
            "rt": {"degraded": True, "policy": "other", "mlockall": False, "dma_latency": True},
        },
        {"type": "hist", "cpu": 0, **h.to_record()},
        {"type": "summary", "cpus": [{"cpu": 0, "overruns": 0, "over_threshold": 0}]},
        {"type": "end", "status": 0, "reason": "completed"},
    ]
    case = {"id": "001-timer", "label": "t", "probe": "timer", "args": [], "params": {}, "requirements": {}}
    r = summarize(case, read_stream(json.dumps(x) + "\n" for x in recs), 0, "")
    assert r["verdict"] == "completed"  # nothing judged
    assert r["reason"] == "completed, DEGRADED: ran without SCHED_FIFO/RR, mlockall; not a real-time result"


def test_an_unjudged_run_is_completed_and_the_answer_comes_first(tmp_path, rtqual_cmd):
    """No requirement: exit 0, verdict completed (never pass), shown as COMPLETED — not judged; `show` opens
    with the answer lines and `show --json` has them under "answer"; a requirement then judges it."""
    out = run_fake(rtqual_cmd, tmp_path, [10_000] * 2000)
    assert out.returncode == 0, out.stderr
    shown = show_json(tmp_path / "b")
    assert shown["verdict"] == shown["cases"][0]["verdict"] == "completed"
    assert shown["answer"] == []  # the fake probe has no period and nothing was judged: no question
    text = rtqual_cmd("show", tmp_path / "b").stdout
    assert "verdict: COMPLETED — not judged (add --profile or --require)" in text and "PASS" not in text
    out = run_fake(rtqual_cmd, tmp_path, [10_000] * 2000, "--profile", "kek-50hz", "--require", "p99 <= 5us", out="c")
    assert out.returncode == 2, out.stderr
    shown = show_json(tmp_path / "c")
    answer = {a["question"]: a for a in shown["answer"]}
    assert set(answer) == {"50 Hz KEK cycle, 20ms (profile kek-50hz)", "p99 ≤ 5us"}
    kek = answer["50 Hz KEK cycle, 20ms (profile kek-50hz)"]
    assert kek["answer"] == "undecided"  # p99.99: 100,000 samples needed; the fake probe has no rate to say when
    assert kek["evidence"] == "needs 100,000 samples (fake s.script: 2,000)" and kek["needs_s"] is None
    assert answer["p99 ≤ 5us"]["answer"] == "no" and answer["p99 ≤ 5us"]["needs_s"] is None
    text = rtqual_cmd("show", tmp_path / "c").stdout.splitlines()
    assert text[0] == "answer:" and text[1].startswith("  50 Hz KEK cycle, 20ms (profile kek-50hz): undecided — ")

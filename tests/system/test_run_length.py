"""Run lengths on real timer cases: --duration auto chooses, says and runs the duration its requirement needs,
a run gets every period it planned, and a scenario run judges the command line's requirements on every case."""

from conftest import needs_probe, needs_root, show_json

pytestmark = [needs_probe, needs_root]
S = 1_000_000_000


def test_duration_auto_is_said_and_used(tmp_path, rtqual_cmd):
    # p99 needs 1,000 samples; with the 10 % margin 1,100 at 1 kHz on one CPU: 2 s in whole seconds
    out = rtqual_cmd(
        "run", "timer", "--cpus", "0", "--interval", "1ms", "--duration", "auto", "--require", "p99 <= 1s",
        "-o", tmp_path / "b", "-q",
    )  # fmt: skip
    assert out.returncode in (0, 2, 4), out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("001-timer: --duration auto: 2s of measurement for p99 <= 1s"), out.stdout
    (case,) = show_json(tmp_path / "b")["cases"]
    assert case["params"]["duration_ns"] == 2 * S
    assert case["stats"]["count"] + case["stats"]["overruns"] == 2000  # every planned period, none lost


def test_scenario_run_takes_require_for_every_case(tmp_path, rtqual_cmd):
    (tmp_path / "sc.toml").write_text(
        '[defaults.timer]\nduration = "1s"\ncpus = "0"\n'
        '[[case]]\nlabel = "a"\nrequire = ["count >= 100"]\n[[case]]\nlabel = "b"\n'
    )
    out = rtqual_cmd("run", tmp_path / "sc.toml", "--require", "min > 1h", "-o", tmp_path / "b", "-q")
    assert out.returncode == 2, out.stderr
    cases = show_json(tmp_path / "b")["cases"]
    judged = [[r["requirement"] for r in c["requirements_judged"]] for c in cases]
    assert judged == [["count >= 100", "min > 1h"], ["min > 1h"]]
    assert [c["verdict"] for c in cases] == ["fail", "fail"]

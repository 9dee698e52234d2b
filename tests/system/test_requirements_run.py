"""A scenario's requirements judged on real timer cases (invariants only: a count that must be met and a
minimum no host reaches)."""

from conftest import needs_probe, needs_root, show_json

pytestmark = [needs_probe, needs_root]


def test_scenario_requirements_pass_and_fail(tmp_path, rtqual_cmd):
    (tmp_path / "sc.toml").write_text(
        '[defaults]\nrequirements = ["count >= 100"]\n[defaults.timer]\nduration = "1s"\ncpus = "0"\n'
        '[[case]]\nlabel = "a"\n[[case]]\nlabel = "b"\nrequirements = ["min > 1h"]\n'
    )
    out = rtqual_cmd("run", tmp_path / "sc.toml", "-o", tmp_path / "b", "-q")
    assert out.returncode == 2, out.stderr
    cases = show_json(tmp_path / "b")["cases"]
    assert [(c["label"], c["verdict"]) for c in cases] == [("a", "pass"), ("b", "fail")]
    assert cases[1]["reason"].startswith("requirement not met: min > 1h: fail")

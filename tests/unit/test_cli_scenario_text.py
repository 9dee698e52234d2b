"""Every single `rtqual run PROBE` writes a scenario.toml that plans back to the same cases."""

import pytest

from rtqual import cli, scenario
from rtqual.scenario import single

KEYS = ("probe", "run_as", "args", "params", "requirements")


def shape(c):
    """What must match (a case without loads: none, and no settle time)."""
    return {
        **{k: c.get(k) for k in KEYS},
        "loads": c.get("loads") or [],
        "settle": (c.get("conditions") or {}).get("settle_ns", 0),
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "timer", "--cpus", "0", "--interval", "2ms", "--loops", "50", "--max-latency", "1ms"],
        ["run", "timer", "--duration", "3s", "--max-events", "7", "--no-tracemark"],
        ["run", "timer", "--duration", "3s", "--load", "hackbench,groups=2", "--load", "cpu-hog,cpus=0"],
        ["run", "switch", "--cpus", "0", "--ipc", "futex", "--mode", "process", "--duration", "2s"],
        ["run", "rhealstone", "--component", "deadlock-break", "--pi", "off", "--loops", "500"],
        ["run", "msg", "--transport", "udp", "--chain", "--settle", "1s", "--load", "pi_stress,rr"],
        ["run", "ioc", "--rate", "25", "--preset", "aps", "--records", "10", "--baseline", "0"],
        ["run", "ioc", "--duration", "5s", "--baseline", "2s", "--load", "hackbench"],
        ["run", "ioc", "--duration", "auto", "--require", "p99 <= 5ms"],  # the default baseline, --duration auto
        ["run", "timer", "--cpus", "0", "--duration", "auto:30s", "--profile", "kek-50hz"],
        ["run", "ca-rtt", "--put", "X:put", "--monitor", "X:echo", "--p99-latency", "1ms"],
    ],
)
def test_the_scenario_plans_back_to_the_same_cases(argv):
    cases, text = single.single_run(cli.build_parser().parse_args(argv), ["rtqual", *argv])
    assert text is not None and text.startswith("# rtqual run ")
    again = scenario.expand(scenario.loads(text, "scenario.toml"))
    assert [shape(c) for c in again] == [shape(c) for c in cases]
    assert [c["label"] for c in again] == [c["label"] for c in cases]


def test_the_hidden_probe_writes_none(tmp_path):
    (tmp_path / "s").write_text("sample 0 1 0\n")
    argv = ["run", "fake", "--script", str(tmp_path / "s")]
    assert single.single_run(cli.build_parser().parse_args(argv), argv)[1] is None

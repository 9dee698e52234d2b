"""SCHED_DEADLINE in the timer's scenario cases: parameters as the probe resolves them, labels, refusals."""

import pytest

from rtqual import scenario
from rtqual.errors import RtqError

US, MS = 1_000, 1_000_000


def expand(text: str) -> list[dict]:
    return scenario.expand(scenario.loads(text, "x.toml"), cpus=[0, 1])


def test_policy_matrix_with_deadline():
    text = '[[matrix]]\npolicy = ["fifo", "deadline"]\n[[matrix]]\npolicy = ["deadline"]\nruntime = ["100us"]\n'
    cases = expand(text)
    fifo, dl_default, dl = cases
    assert [c["label"] for c in cases] == ["fifo", "deadline", "deadline 100us"]
    assert dl_default["params"]["runtime_ns"] == 100 * US  # a tenth of the 1 ms deadline
    assert "--runtime" not in " ".join(fifo["args"])
    assert dl["params"]["policy"] == "deadline"
    assert (dl["params"]["runtime_ns"], dl["params"]["deadline_ns"], dl["params"]["period_ns"]) == (100 * US, MS, MS)
    assert {"--runtime=100000ns", "--deadline=1000000ns", "--period=1000000ns"} <= set(dl["args"])


def test_deadline_defaults_and_period_is_the_interval():
    (c,) = expand('[[matrix]]\npolicy = ["deadline"]\nbase.params.period = "2ms"\n')
    p = c["params"]
    assert p["interval_ns"] == p["period_ns"] == p["deadline_ns"] == 2 * MS and p["runtime_ns"] == 200 * US


@pytest.mark.parametrize(
    "params",
    [
        'policy = ["fifo"]\nbase.params.runtime = "100us"',
        'policy = ["deadline"]\nbase.params.period = "2ms"\nbase.params.interval = "5ms"',
    ],
)
def test_refusals_are_one_line(params):
    with pytest.raises(RtqError) as e:
        expand(f"[[matrix]]\n{params}\n")
    assert "\n" not in str(e.value)

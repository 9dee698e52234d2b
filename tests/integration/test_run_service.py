"""A service from the registry runs around its case's probe (the fake probe and a dummy service: no EPICS)."""

import json
from contextlib import contextmanager

from conftest import needs_probe
from rtqual import services
from rtqual.fields import Field

EVENTS = []


class Dummy:
    """A service: fills no option, yields what it was given, records its lifecycle."""

    key = "dummy"
    env = None

    def __init__(self, spec):
        self.spec = spec
        EVENTS.append("made")

    def fill(self, fixed):
        return {}

    def __call__(self, case_dir):
        @contextmanager
        def running():
            EVENTS.append("started")
            yield {"spec": self.spec, "case_dir": str(case_dir)}
            EVENTS.append("stopped")

        return running()

    def discard(self):
        EVENTS.append("discarded")


services.register(
    services.ServiceKind(
        name="dummy",
        params={"level": Field("int", "how much", lo=0, hi=9, default=1)},
        spec=lambda p: {"type": "dummy", "level": p.get("level")},
        label=lambda run_as: lambda c: run_as,
        help=lambda run_as, summary: summary,
        factory=f"{__name__}:Dummy",
    )
)


@needs_probe
def test_a_registered_service_runs_around_its_case(tmp_path):
    from rtqual.measure.run.driver import run
    from rtqual.probes.catalog import probe_case
    from rtqual.results import bundle

    script = tmp_path / "s.txt"
    script.write_text("sample 0 5000 0\n")
    case = probe_case("fake", {"script": str(script)}, [0], "001-with-dummy")
    case["service"] = {"type": "dummy", "level": 3}
    EVENTS.clear()
    path = run([case], ["test"], output=str(tmp_path / "b"), quiet=True).path
    assert EVENTS == ["made", "started", "stopped", "discarded"]
    (result,) = bundle.load(path)["cases"]
    assert result["verdict"] == "completed" and result["dummy"]["spec"] == {"type": "dummy", "level": 3}
    plan = json.loads((path / "plan.json").read_text())
    assert plan["cases"][0]["service"] == {"type": "dummy", "level": 3}

"""`rtqual capacity` end to end with the fake probe (no root, a few seconds): a sweep of one dimension whose steps
are cases of ONE bundle, decided one after the other (the driver's `more` hook), the answer bracketing the load
where the requirement breaks, capacity.json sealed and shown by `show --json`, the figure in report.html; and a
sweep stopped by a signal keeps every finished step."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace

from conftest import needs_probe
from rtqual import cli
from rtqual.answers.requirements import gather
from rtqual.capacity import run as cap_run
from rtqual.capacity import spec
from rtqual.capacity.sweep import Range

BREAK_US = 40  # the fake host's latency is the load in us: 'max <= 40us' breaks above a load of 40


class FakeSweep(spec.Sweep):
    """The fake probe replaying, at load V, samples of V us (and a few below): the knee is known."""

    def case(self, value: float, index: int) -> dict:
        script = self.folder / f"load-{int(value)}.script"
        lat_ns = int(value) * 1000
        script.write_text("".join(f"sample {i % 2} {lat_ns // (1 + i % 3)}\n" for i in range(30)) + "progress\n")
        return spec.Sweep.case(replace(self, params={"script": str(script)}), value, index)


def fake_sweep(tmp_path, **kw) -> FakeSweep:
    sw = FakeSweep("fake", "fake", {"script": "x"}, [], spec.Dimension("max_events", "us", 1, 64),
                   Range(1, 64, 2.0), gather([f"max <= {BREAK_US}us"], None), spec.S, spec.S, **kw)  # fmt: skip
    object.__setattr__(sw, "folder", tmp_path)
    return sw


@needs_probe
def test_fake_sweep_finds_the_knee_in_one_bundle(tmp_path, capsys):
    out = tmp_path / "b"
    model = cap_run.measure(fake_sweep(tmp_path), ["rtqual", "capacity", "fake"], str(out), True, "off")
    doc = json.loads((out / "capacity.json").read_text())
    assert doc["carries"] <= BREAK_US < doc["breaks_at"]
    assert doc["breaks_at"] <= doc["carries"] * 1.1 or doc["breaks_at"] - doc["carries"] <= 1
    assert doc["cause"].startswith("requirement not met: max <= 40us")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "capacity.json" in manifest["checksums"]
    assert [c["id"] for c in manifest["cases"]] == [f"{i + 1:03d}-max_events-{v}" for i, v in enumerate(doc["order"])]
    plan = json.loads((out / "plan.json").read_text())
    assert [c["id"] for c in plan["cases"]] == [c["id"] for c in manifest["cases"]]  # each step added as it ran
    for step in doc["steps"]:  # the evidence of each step is its case's, judged as the sweep says
        result = json.loads((out / "cases" / step["case"] / "result.json").read_text())
        assert step["stats"]["max_ns"] == result["stats"]["max_ns"] == step["value"] * 1000
        assert step["verdict"] == ("pass" if step["value"] <= BREAK_US else "fail")
    assert model.capacity == doc
    capsys.readouterr()
    assert cli.main(["verify", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["show", "--json", str(out)]) in (0, 2)
    shown = json.loads(capsys.readouterr().out)
    keys = ("dimension", "carries", "breaks_at", "cause")
    assert {k: shown["capacity"][k] for k in keys} == {k: doc[k] for k in keys} and doc["dimension"] == "max_events"
    assert set(shown["capacity"]["steps"][0]) >= {"value", "stats", "queues", "cpu", "verdict"}
    cli.main(["show", str(out)])
    assert f"breaks at {doc['breaks_at']} us because requirement not met" in capsys.readouterr().out
    html = (out / "report.html").read_text()
    assert 'id="capacity-figures"' in html and "breaks " in html


@needs_probe
def test_a_stopped_sweep_keeps_every_finished_step(tmp_path):
    class Stopping(FakeSweep):
        def case(self, value: float, index: int) -> dict:
            if index == 3:  # a Ctrl-C while the third step starts
                os.kill(os.getpid(), signal.SIGINT)
            return super().case(value, index)

    sw = Stopping(**{f: getattr(fake_sweep(tmp_path), f) for f in spec.Sweep.__dataclass_fields__})
    object.__setattr__(sw, "folder", tmp_path)
    out = tmp_path / "b"
    cap_run.measure(sw, ["rtqual", "capacity", "fake"], str(out), True, "off")
    doc = json.loads((out / "capacity.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert [s["value"] for s in doc["steps"][:2]] == [1, 2] and doc["carries"] == 2
    assert doc["stopped"] and doc["breaks_at"] is None
    assert all(s["verdict"] == "pass" for s in doc["steps"][:2])
    assert cli.main(["verify", str(out)]) == 0

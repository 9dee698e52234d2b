"""`rtqual advise --bundle` of a real traced IOC run on this VM (issue 25 item 4): the IOC's threads against
the interrupt threads on their CPUs, and where the traced responses' time went. Invariants only (never
absolute latencies): the attributed parts of each response add up to no more than it, the IOC's threads named."""

import json

import pytest
from helpers import case_result, rtqual, run_args

from rtqual.answers.advice import iocpath


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("iocpath") / "bundle"
    p = rtqual(*run_args("ioc", out, "--duration", "3s", "--threshold", "50us", "--trace"))
    return p, out


def test_a_traced_ioc_run_explains_its_path(traced):
    p, out = traced
    assert p.returncode == 0, p.stdout + p.stderr
    result = case_result(out)
    if "trace" not in result:
        pytest.skip("tracing cannot run here: " + "; ".join(w for w in result["warnings"] if "--trace" in w))
    a = rtqual("advise", "--bundle", str(out), "--json")
    assert a.returncode == 0, a.stderr
    (f,) = [f for f in json.loads(a.stdout)["findings"] if f["id"] == "ioc-threads"]
    evidence = "\n".join(f["evidence"])
    assert "reader threads: rtqIn0 (FIFO" in evidence and "cbHigh (FIFO" in evidence
    spikes = [s for s in result["spikes"] if s.get("trace_file")]
    if not spikes:
        pytest.skip("no response above 50 us was traced")
    path = f["path"]
    assert path["responses"] == len(spikes) and 0 < path["attributed_ns"] <= path["response_ns"]
    assert path["response_ns"] == sum(s["latency_ns"] for s in spikes)
    assert any(p["thread"].startswith(("rtqIn0", "cbHigh")) for p in path["parts"])  # the IOC is on the path
    for s in spikes:
        lines = (out / "cases" / result["id"] / s["trace_file"]).read_text().splitlines()
        parts = iocpath.attribute(lines, s["cpu"], s["time_ns"] - s["latency_ns"], s["time_ns"])
        assert all(p["duration_ns"] > 0 for p in parts) and sum(p["duration_ns"] for p in parts) <= s["latency_ns"]

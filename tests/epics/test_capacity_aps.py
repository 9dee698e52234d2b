"""`rtqual capacity aps` on rtqual's real IOC at a small scale: each step a case of one bundle with the IOC's own
evidence (callback queue high-water marks and overflows per priority, the IOC's CPU per thread), the answer
consistent with the steps, nothing left running. No latency is asserted: the host decides where the knee is."""

import json

import pytest
from helpers import processes_naming, rtqual


@pytest.mark.slow
def test_aps_sweep_at_a_small_scale(tmp_path):
    out = tmp_path / "b"
    p = rtqual("capacity", "aps", "--scale", "0.1", "--start", "100", "--ceiling", "400", "--require", "p99 <= 2ms",
               "--store", "off", "-o", out, "-q", timeout=600)  # fmt: skip
    assert p.returncode in (0, 4), p.stderr
    doc = json.loads((out / "capacity.json").read_text())
    assert doc["dimension"] == "records" and doc["steps"] and doc["requirements"] == ["p99 <= 2ms"]
    for step in doc["steps"]:
        assert 100 <= step["value"] <= 400 and step["stats"]["count"] > 0
        q = step["queues"]
        assert q["size"] > 0 and all(0 <= q[p]["high_water"] <= q["size"] for p in ("low", "medium", "high"))
        assert step["cpu"]["ioc_pct"] is not None and step["cpu"]["ioc_threads_s"]
        assert step["ca_load"]["records"] == step["value"]
        cas = step["ca_server"]  # the put and the monitor client, each connected to every record at least
        assert cas["samples"] >= 1 and cas["clients_max"] >= 2 and cas["channels_max"] >= 2 * step["value"]
        result = json.loads((out / "cases" / step["case"] / "result.json").read_text())
        assert processes_naming(result["ioc"]["prefix"]) == []
    passed = [s["value"] for s in doc["steps"] if s["verdict"] == "pass"]
    broke = [s["value"] for s in doc["steps"] if s["verdict"] in ("fail", "not held")]
    assert doc["breaks_at"] == (min(broke) if broke else None)
    assert doc["carries"] == max((v for v in passed if not broke or v < min(broke)), default=None)
    assert doc["answer"].split(" (the last")[0] in p.stdout
    assert 'id="capacity-figures"' in (out / "report.html").read_text()

"""`rtqual fleet` over real bundles of the fake probe laid out as Ansible fetches them (DIR/HOST/BUNDLE)."""

import json

from conftest import needs_probe

pytestmark = needs_probe


def fake_bundle(rtqual_cmd, tmp_path, host: str, max_ns: int):
    """A bundle of 200 samples of 1-8 us plus one of max_ns, in tmp_path/results/HOST/."""
    script = tmp_path / host / "samples.txt"  # one name: one case label ("fake samples.txt") on every host
    script.parent.mkdir()
    script.write_text("".join(f"sample 0 {1000 + 37 * i} 0\n" for i in range(200)) + f"sample 0 {max_ns} 0\n")
    bundle = tmp_path / "results" / host / f"rtqual-{host}-1"
    out = rtqual_cmd("run", "fake", "--script", script, "-o", bundle, "-q", "--store", "off")
    assert out.returncode == 0, out.stderr
    return bundle


def test_fleet_names_hosts_by_folder_sorts_worst_first_and_finds_the_outlier(rtqual_cmd, tmp_path):
    maxima = {"ioc-a": 9_000, "ioc-b": 10_000, "ioc-c": 11_000, "ioc-d": 9_500, "ioc-e": 900_000}
    bundles = {h: fake_bundle(rtqual_cmd, tmp_path, h, m) for h, m in maxima.items()}
    out = rtqual_cmd("fleet", tmp_path / "results", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [h["host"] for h in doc["hosts"]][0] == "ioc-e"  # same verdicts: the outlier, then the largest max
    assert {h["host"]: h["bundles"] for h in doc["hosts"]} == {h: [str(b)] for h, b in bundles.items()}
    outliers = {h["host"]: h["outlier"] for h in doc["hosts"] if h["outlier"]}
    assert list(outliers) == ["ioc-e"] and {o["stat"] for o in outliers["ioc-e"]} >= {"max_ns"}
    assert all(o["value_ns"] > o["fence_ns"] for o in outliers["ioc-e"])
    assert doc["groups"] == []  # one machine made them all: no fact differs
    assert len({json.dumps(h["blockers"]) for h in doc["hosts"]}) == 1  # advise on one machine's facts: one answer
    report = tmp_path / "fleet.html"
    out = rtqual_cmd("fleet", tmp_path / "results", "--report", report)
    assert out.returncode == 0 and f"report: {report}" in out.stdout, out.stderr
    page = report.read_text()
    for h, b in bundles.items():  # each host's own report one click away
        assert f'<a href="results/{h}/{b.name}/report.html">{h}</a>' in page
    assert page.count("outlier") >= 1 and "rgb(255,0,0)" in page  # the far host's cell at full red
    text = rtqual_cmd("fleet", *bundles.values()).stdout  # bundles named one by one: hosts from the manifests
    assert "fleet: 1 host, 5 bundles" in text


def test_fleet_of_nothing_is_a_one_line_error(rtqual_cmd, tmp_path):
    out = rtqual_cmd("fleet", tmp_path)
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0 and "no bundle" in out.stderr


def test_fleet_profile_judges_every_host_again_and_a_host_over_the_cycle_fails(rtqual_cmd, tmp_path):
    bundles = {h: fake_bundle(rtqual_cmd, tmp_path, h, m) for h, m in {"ok": 9_000, "late": 25_000_000}.items()}
    out = rtqual_cmd("fleet", tmp_path / "results", "--profile", "kek-50hz", "--json")
    assert out.returncode == 0, out.stderr
    hosts = {h["host"]: h for h in json.loads(out.stdout)["hosts"]}
    assert set(hosts) == set(bundles)
    assert [h for h in json.loads(out.stdout)["hosts"]][0]["host"] == "late"  # worst first
    assert hosts["late"]["verdict"] == "fail"  # max < 20ms broken by a 25 ms sample, however short the run
    assert hosts["ok"]["verdict"] == "inconclusive"  # 201 samples cannot carry p99.99: said, not passed
    assert all("kek-50hz" in h["answer"][0]["question"] for h in hosts.values())
    plain = {
        h["host"]: h["verdict"] for h in json.loads(rtqual_cmd("fleet", tmp_path / "results", "--json").stdout)["hosts"]
    }
    assert plain == {"ok": "completed", "late": "completed"}  # without --profile: the runs' own verdicts

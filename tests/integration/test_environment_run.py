"""A run states its environment: the fake probe through the whole pipeline (runner, sampler, bundle, show,
report) gives each case an environment record and `show --json` an `environment` naming this host's
hypervisor as its facts name it."""

import json
import shutil
import subprocess

from conftest import needs_probe, show_json
from rtqual.answers import environment as env
from rtqual.results.bundle import names

pytestmark = needs_probe


def test_fake_run_states_its_environment(tmp_path, rtqual_cmd):
    script = tmp_path / "s.txt"
    script.write_text("sample 0 5000 0\nsleep 1500\nsample 0 7000 0\n")  # long enough for a sample or two
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / "b", "-q")
    assert out.returncode == 0, out.stderr
    case_dir = tmp_path / "b" / "cases" / "001-fake"
    record = json.loads((case_dir / names.ENVIRONMENT).read_text())
    assert record["start"] and record["end"] and record["end"]["t_ns"] > record["start"]["t_ns"]
    assert {"all"} | {str(c) for c in record["cpus"]} <= set(record["end"]["cpu_ticks"])
    assert not list(case_dir.glob(".*.tmp"))  # the record's rewrites leave nothing behind
    assert rtqual_cmd("verify", tmp_path / "b").returncode == 0  # the new file is checksummed like the others

    shown = show_json(tmp_path / "b")
    e = shown["environment"]
    facts = json.loads((tmp_path / "b" / names.FACTS_BEFORE).read_text())
    assert (e["hypervisor"], e["container"]) == (env.hypervisor(facts)[0], env.container(facts)[0])
    case = e["cases"][0]
    said = any(env.case_sentences(c) for c in e["cases"])  # an idle case on a quiet host has nothing to add
    assert ("environment (what the numbers include):" in out.stdout) == said  # the end of the run says it too
    assert case["recorded"] is True and case["idle"] is True
    assert set(case["steal_pct"]["cpus"]) == {str(c) for c in record["cpus"]}
    assert all(0 <= v <= 100 for v in case["steal_pct"]["cpus"].values())
    assert case["others_running"] is not None and case["others_running"]["min"] >= 0
    text = rtqual_cmd("show", tmp_path / "b").stdout
    assert all(s in text for s in env.sentences(e))  # the host sentences with the answer, the cases' below
    html = (tmp_path / "b" / names.REPORT).read_text()
    assert '<h2>Environment</h2><ul id="environment">' in html

    virt = shutil.which("systemd-detect-virt")
    if virt:  # the live answer, where the host has the program: this VM is a KVM guest
        live = subprocess.run([virt, "--vm"], capture_output=True, text=True).stdout.strip()
        if live == "kvm":
            assert e["hypervisor"] == "kvm" and e["virtualized"] is True
            assert "measured in a KVM guest: maxima include the hypervisor's" in text

"""deploy/ansible with real parts: ansible-core from PyPI drives Debian's openssh-server in three network
namespaces (fleethosts.py). install.yml builds the wheels once and installs them on every host, qualify.yml
runs a 2 s timer scenario on each host detached (setsid here: systemd is not PID 1 in this machine), one host
after the other (serial 1: the "hosts" share this machine's CPUs), fetches, verifies and stores the bundles;
monitor.yml installs the unit and renders the file_sd targets a real Prometheus reads."""

import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from fleethosts import PLAYBOOKS, Fleet, missing, syntax_check

from conftest import rtqual_run

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
RTQUAL = Path(sys.executable).parent / "rtqual"
SCENARIO = """[run]
name = "fleet-tiny"
description = "a 2 s timer case per host (the fleet tests)"

[[case]]
label = "timer idle"
probe = "timer"
params = { interval = "1ms", duration = "2s" }
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    with Fleet(tmp_path_factory.mktemp("fleet"), 3) as f:
        yield f


def recap(out) -> dict[str, dict[str, int]]:
    """PLAY RECAP counters per host (the last recap of the output)."""
    hosts = {}
    for m in re.finditer(r"^(\S+)\s+:\s+(.*)$", out.stdout.split("PLAY RECAP")[-1], re.M):
        hosts[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return hosts


def test_syntax_of_every_playbook():
    for playbook in sorted(PLAYBOOKS.glob("*.yml")):
        out = syntax_check(playbook)
        assert out.returncode == 0, out.stdout + out.stderr


def test_qualify_installs_runs_detached_fetches_verifies_and_stores_on_three_hosts(fleet, tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SCENARIO)
    results, store = tmp_path / "results", tmp_path / "fleet.sqlite"
    started = time.monotonic()
    out = fleet.playbook(
        "qualify.yml", fleet.inventory(rtqual_host_store="off"),
        f"rtqual_scenario={scenario}", f"rtqual_results={results}", f"rtqual_store={store}",
        f"rtqual_controller_bin={RTQUAL}", "rtqual_serial=1", "rtqual_poll_s=1",
    )  # fmt: skip
    print(f"qualify.yml with install on 3 hosts: {time.monotonic() - started:.0f} s")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr
    counters = recap(out)
    assert set(counters) == {h.name for h in fleet.hosts}
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in counters.values()), counters
    assert out.stdout.count("rtqual exit 0 (setsid)") == 3  # no systemd here: the fallback, said so
    bundles = []
    for h in fleet.hosts:
        assert (h.root / "opt-rtqual" / ".venv" / "bin" / "rtqual").exists()  # installed per host from the wheel
        (bundle,) = (results / h.name).iterdir()  # only the bundle: the archive is removed
        assert bundle.name.startswith(f"rtqual-{h.name}-")
        assert rtqual_run("verify", bundle).returncode == 0
        manifest = json.loads((bundle / "manifest.json").read_text())
        assert manifest["hostname"] == h.name  # measured on that host (its own UTS name), not on the controller
        shown = json.loads(rtqual_run("show", bundle, "--json").stdout)
        assert shown["cases"][0]["stats"]["count"] > 0
        assert (h.root / "work" / bundle.name / "manifest.json").exists()  # kept on the host too
        bundles.append(bundle)
    history = json.loads(rtqual_run("history", "--json", "--store", store).stdout)["runs"]
    assert sorted((r["host"], r["bundle"]) for r in history) == sorted((b.parent.name, str(b)) for b in bundles)
    # serial 1: the hosts were measured one after the other, never at once
    spans = sorted(run_span(b) for b in bundles)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans


def run_span(bundle: Path) -> tuple[float, float]:
    """(start, end) unix seconds of the bundle's run, from its manifest."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    return tuple(datetime.strptime(manifest[k], "%Y-%m-%dT%H:%M:%S%z").timestamp() for k in ("start", "end"))


def test_monitor_installs_the_unit_and_writes_file_sd_targets(fleet, tmp_path):
    targets = tmp_path / "targets.json"
    out = fleet.playbook(
        "monitor.yml", fleet.inventory(), "rtqual_install=false", f"rtqual_file_sd={targets}",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr
    assert out.stdout.count("systemd is not PID 1 here") == 3
    groups = json.loads(targets.read_text())
    assert sorted(g["targets"] for g in groups) == sorted([[f"{h.address}:9841"] for h in fleet.hosts])
    assert sorted(g["labels"]["host"] for g in groups) == sorted(h.name for h in fleet.hosts)
    for h in fleet.hosts:
        unit = (h.root / "systemd" / "rtqual-monitor.service").read_text()
        assert unit == (PLAYBOOKS.parent / "systemd" / "rtqual-monitor.service").read_text()
        dropin = (h.root / "systemd" / "rtqual-monitor.service.d" / "ansible.conf").read_text()
        assert f"ExecStart={h.root / 'opt-rtqual' / '.venv' / 'bin' / 'rtqual'} monitor" in dropin

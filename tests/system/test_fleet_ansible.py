"""deploy/ansible with real parts: ansible-core from PyPI drives Debian's openssh-server in three network
namespaces (fleethosts.py). install.yml builds the wheels once and installs them on every host, qualify.yml
runs a 2 s timer scenario on each host detached (setsid here: systemd is not PID 1 in this machine), one host
after the other (serial 1: the "hosts" share this machine's CPUs), fetches, verifies and stores the bundles;
monitor.yml installs the unit and renders the file_sd targets a real Prometheus reads."""

import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from fleethosts import PLAYBOOKS, Fleet, missing, syntax_check

from conftest import rtqual_run
from monitoring import PROMETHEUS, Server, free_port, http_get, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]
RTQUAL = Path(sys.executable).parent / "rtqual"
ANSIBLE_LINT = Path(sys.executable).parent / "ansible-lint"
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


@pytest.mark.skipif(not ANSIBLE_LINT.exists(), reason="ansible-lint not installed in the venv (pip install '.[test]')")
def test_ansible_lint_passes_the_production_profile():
    out = subprocess.run(
        [str(ANSIBLE_LINT), "--offline", "--nocolor", "--profile", "production", "install.yml", "qualify.yml",
         "monitor.yml", "roles/rtqual"],
        cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def installed(fleet):
    """install.yml on the three hosts: wheels built once on the controller, installed offline on each."""
    started = time.monotonic()
    out = fleet.playbook("install.yml", fleet.inventory())
    print(f"install.yml on 3 hosts (the wheel build included): {time.monotonic() - started:.0f} s")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr
    assert out.stdout.count("Build the wheels") == 1 and "Build the wheels (pip" in out.stdout  # once, not per host
    for h in fleet.hosts:
        assert (h.root / "opt-rtqual" / ".venv" / "bin" / "rtqual").exists()  # installed per host from the wheel
    return fleet


def qualify(fleet, tmp_path, *extra: str, store: str | Path | None = None) -> tuple[list[Path], Path]:
    """qualify.yml on the installed hosts with extra -e values, into `store` (a PostgreSQL URL, or by default
    an SQLite file); (the fetched bundles in host order, results folder)."""
    results, store = tmp_path / "results", store or tmp_path / "fleet.sqlite"
    started = time.monotonic()
    out = fleet.playbook(
        "qualify.yml", fleet.inventory(rtqual_host_store="off"), "rtqual_install=false",
        f"rtqual_results={results}", f"rtqual_store={store}", f"rtqual_controller_bin={RTQUAL}", "rtqual_poll_s=1",
        *extra,
    )  # fmt: skip
    print(f"qualify.yml on 3 hosts ({' '.join(extra)}): {time.monotonic() - started:.0f} s")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr
    counters = recap(out)
    assert set(counters) == {h.name for h in fleet.hosts}
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in counters.values()), counters
    assert out.stdout.count("rtqual exit 0 (setsid)") == 3  # no systemd here: the fallback, said so
    bundles = []
    for h in fleet.hosts:
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
    return bundles, results


def test_qualify_runs_detached_fetches_verifies_stores_and_fleet_reports_three_hosts(installed, pg_server, tmp_path):
    """Into a central PostgreSQL store (the facility's; the timer test below stores into SQLite)."""
    script = tmp_path / "samples.txt"  # the fake probe (no measurement): the hosts share this file system
    script.write_text("".join(f"sample {i % 2} {1000 + 37 * i} 0\n" for i in range(200)))
    args = ("rtqual_probe=fake", json.dumps({"rtqual_run_args": ["--script", str(script)]}))
    bundles, results = qualify(installed, tmp_path, *args, store=pg_server.new_database())
    fleet_doc = json.loads(rtqual_run("fleet", results, "--json").stdout)
    assert sorted(h["host"] for h in fleet_doc["hosts"]) == sorted(h.name for h in installed.hosts)
    assert all(h["verdict"] in ("pass", "completed") and h["bundles"] == [str(b)] for h, b in
               zip(sorted(fleet_doc["hosts"], key=lambda h: h["host"]), bundles))  # fmt: skip


def test_qualify_measures_a_timer_scenario_one_host_after_the_other(fleet, tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SCENARIO)
    # the controller's rtqual, which the hosts see on the shared file system (install.yml is tested above:
    # this test, which measures, holds the latency lock for the measurement and not for a wheel build)
    bundles, _ = qualify(fleet, tmp_path, f"rtqual_scenario={scenario}", "rtqual_serial=1", f"rtqual_bin={RTQUAL}")
    # serial 1: the hosts (sharing this machine's CPUs) were measured one after the other, never at once
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
    if PROMETHEUS is None:
        pytest.skip("Debian prometheus not installed (scripts/setup --test): file_sd not read by a Prometheus")
    prom_dir = tmp_path / "prometheus"
    prom_dir.mkdir()
    (prom_dir / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rtqual\n    file_sd_configs:\n"
        f"      - files: [{json.dumps(str(targets))}]\n"
    )
    port = free_port()
    prometheus = Server(
        [PROMETHEUS, f"--config.file={prom_dir / 'prometheus.yml'}", f"--storage.tsdb.path={prom_dir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        prom_dir / "prometheus.log",
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/-/ready")
        deadline = time.monotonic() + 30
        while True:  # a real Prometheus reads the file: one target per host, labelled with its inventory name
            active = json.loads(http_get(f"http://127.0.0.1:{port}/api/v1/targets"))["data"]["activeTargets"]
            if len(active) == len(fleet.hosts) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sorted((t["labels"]["host"], t["labels"]["instance"]) for t in active) == sorted(
            (h.name, f"{h.address}:9841") for h in fleet.hosts
        )
    finally:
        prometheus.stop()


def test_qualify_with_a_local_inventory_qualifies_this_machine(tmp_path):
    inventory = tmp_path / "local.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n")
    script = tmp_path / "samples.txt"
    script.write_text("sample 0 5000 0\nsample 1 7000 0\n")
    fleet = Fleet(tmp_path, 0)  # no namespace hosts: only its ansible-playbook runner
    out = fleet.playbook(
        "qualify.yml", inventory, "rtqual_install=false", f"rtqual_bin={RTQUAL}", f"rtqual_controller_bin={RTQUAL}",
        f"rtqual_results={tmp_path / 'results'}", f"rtqual_workdir={tmp_path / 'work'}", "rtqual_host_store=off",
        "rtqual_poll_s=1", "rtqual_probe=fake", json.dumps({"rtqual_run_args": ["--script", str(script)]}),
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr
    (bundle,) = (tmp_path / "results" / "localhost").iterdir()
    assert rtqual_run("verify", bundle).returncode == 0

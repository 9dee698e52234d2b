"""The CLI around rtqual's IOC: the APS CA load, `rtqual run ca-rtt`, the IOC presets, and an
independent CA client (pyepics) using the operator PVs while `rtqual run ioc` measures."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers import (
    CaClient,
    needs_pyepics,
    processes_naming,
    results,
    rtqual,
    rtqual_argv,
    run_args,
    run_unknown_pv,
)

from rtqual.measure.epics import env as epics_env

ROOT = Path(__file__).resolve().parents[2]


def test_ioc_with_ca_load_records_achieved_rates_and_leaves_nothing(tmp_path):
    out = tmp_path / "b"
    load = ["--preset", "aps", "--records", 50, "--put-rate", 200, "--scan", ".5 second"]
    p = rtqual(*run_args("ioc", out, *load, "--duration", "2s", "--ioc-prefix", "rtqtest1:"))
    assert p.returncode == 0, p.stderr
    (r,) = results(out)
    load = r["ioc"]["ca_load"]
    assert load["records"] == 50 and load["put"]["requested_rate_hz"] == 200
    assert load["put"]["puts"] > 0 and load["put"]["errors"] == 0 and 0 < load["put"]["rate_hz"] <= 200 * 1.1
    assert load["monitor"]["connected"] == 50 and load["monitor"]["events"] >= load["put"]["puts"] // 2
    assert "CA load: 50 records, put" in p.stdout
    assert "rtqual: IOC rtqtest1: serving CA on 127.0.0.1:" in p.stderr
    assert processes_naming("rtqtest1:") == []


def test_ca_rtt_through_rtquals_ioc(tmp_path):
    out = tmp_path / "b"
    p = rtqual(*run_args("ca-rtt", out, "--loops", 100, "--rate", 100))
    assert p.returncode == 0, p.stderr
    (r,) = results(out)
    assert r["probe"] == "ca-rtt" and r["stats"]["count"] == 100 and r["stats"]["min_ns"] > 0
    assert r["params"]["put"].endswith("rtt:put") and r["params"]["monitor"].endswith("rtt:echo")
    assert processes_naming(r["ioc"]["prefix"]) == []


def test_ca_rtt_unknown_external_pv_is_one_clear_line(tmp_path):
    p = run_unknown_pv("ca-rtt", tmp_path / "b")
    assert p.returncode == 1
    (r,) = results(tmp_path / "b")
    assert r["verdict"] == "error" and "nosuch:pv" in r["reason"] and "\n" not in r["reason"]


def environ_of(pid: int) -> dict:
    return dict(kv.split("=", 1) for kv in open(f"/proc/{pid}/environ").read().split("\0") if "=" in kv)


def roles_naming(text: str) -> dict[int, str]:
    """What each process naming `text` is, from one read of its command line: the IOC, a CA load client
    (`put`, `monitor`, `repeater`), or rtqual itself (also a fork of it on its way to exec something)."""
    roles = {}
    for pid in processes_naming(text):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"rtqual.measure.epics.iocmain" in argv:
            roles[pid] = "ioc"
        elif argv[0].endswith(b"rtqual-ca") and len(argv) > 1:
            roles[pid] = argv[1].decode()
        elif b"rtqual" in argv and b"run" in argv:
            roles[pid] = "rtqual run"
        elif text.encode() in b"\0".join(argv):  # not exec'd into something else meanwhile
            roles[pid] = b" ".join(argv).decode(errors="replace")
    return roles


def without_epics_vars() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("EPICS_")}


@needs_pyepics
def test_pyepics_reads_operator_pvs_and_sets_the_sample_count_during_a_run(tmp_path):
    out, user_db = tmp_path / "b", tmp_path / "user.db"
    user_db.write_text('record(ai, "$(P)user:x") {\n    field(VAL, "42")\n    field(PINI, "YES")\n}\n')
    load = ["--records", "20", "--put-rate", "50", "--ioc-chain", "3"]
    ioc = ["--ioc-db", user_db, "--ioc-prefix", "rtqtest2:"]
    p = subprocess.Popen(
        rtqual_argv(*run_args("ioc", out, "--duration", "30s", "--rate", "200", *load, *ioc)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=without_epics_vars(),
    )
    ca = None
    try:
        info = out / "cases" / "001-ioc" / "ioc.json"
        deadline = time.monotonic() + 30
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        env = epics_env.epics_env(ports=False) | {
            "EPICS_CA_SERVER_PORT": json.loads(info.read_text())["ca_server_port"]
        }
        # the IOC, the repeater and both load clients: loopback set in code, not by our shell
        # (a fork of rtqual itself, on its way to exec something, also names the prefix: not counted)
        ours = {pid: role for pid, role in roles_naming("rtqtest2:").items() if role != "rtqual run"}
        ours |= {
            pid: role
            for pid, role in roles_naming("rtqual-ca\0repeater").items()
            if environ_of(pid).get("EPICS_CA_SERVER_PORT") == env["EPICS_CA_SERVER_PORT"]
        }
        assert sorted(ours.values()) == ["ioc", "monitor", "put", "repeater"], ours
        for pid in ours:
            assert {k: environ_of(pid).get(k) for k in epics_env.LOOPBACK} == epics_env.LOOPBACK, pid
        ca = CaClient(env)
        assert ca.get("rtqtest2:user:x") == 42  # the user's own records, and a 3-record chain
        assert ca.get("rtqtest2:calc3.FLNK") == "rtqtest2:out"
        assert ca.get("rtqtest2:stat:N") == 1000
        deadline = time.monotonic() + 10
        while sum(ca.get("rtqtest2:lat:total:hist") or [0]) < 400 and time.monotonic() < deadline:
            time.sleep(0.2)
        before = sum(ca.get("rtqtest2:lat:total:hist"))
        ca.put("rtqtest2:stat:N", 10)
        count = ca.get("rtqtest2:stat:count")
        while ca.get("rtqtest2:stat:count") < count + 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(ca.get("rtqtest2:lat:total:hist")) < before  # cleared: counting again from 0
        assert ca.get("rtqtest2:stat:N") == 10
        assert ca.get("rtqtest2:lat:total:median.N") == ca.get("rtqtest2:lat:wake:window.N") == 10
        deadline = time.monotonic() + 10
        while (ca.get("rtqtest2:stat:count") or 0) < 50 and time.monotonic() < deadline:
            time.sleep(0.2)
        # one window's statistics: stat:count the same before and after them in one batch of gets
        # (the IOC updates them all in one locked chain, 200 times a second)
        for _ in range(50):
            before, lo, med, hi, after = ca.get_many(
                ["rtqtest2:stat:count"]
                + [f"rtqtest2:lat:total:{k}" for k in ("min", "median", "max")]
                + ["rtqtest2:stat:count"]
            )
            if before == after:
                break
        assert before == after and 0 < lo <= med <= hi
    finally:
        if ca:
            ca.close()
        p.send_signal(2)
        p.communicate(timeout=60)
    assert p.returncode == 4  # interrupted: inconclusive, the part measured kept
    assert processes_naming("rtqtest2:") == []


@pytest.mark.slow
def test_aps_ioc_preset_prints_the_aps_table_with_achieved_load_rates(tmp_path):
    out = tmp_path / "b"
    p = rtqual("run", ROOT / "scenarios/aps-ioc-2010.toml", "--scale", "0.001", "-o", out, "-q", timeout=300)
    assert p.returncode in (0, 2), p.stderr  # pass (or a requirement: none here)
    assert "APS IOCcore on Coldfire" in p.stdout
    for stage in ("wake", "dispatch", "chain", "return", "total"):
        assert f"ioc 1000 records CA load callback: {stage}" in p.stdout
    assert p.stdout.count("CA load: 1000 records, put") == 3  # callback private and public, immediate
    assert "network load public: broadcast" in p.stdout and "network load traffic: udp" in p.stdout
    assert "vs timer baseline (case 001-timer-baseline" in p.stdout
    rs = results(out)
    assert [r["probe"] for r in rs] == ["timer", "iocresp", "iocresp", "iocresp", "iocresp"]
    assert all(processes_naming(r["ioc"]["prefix"]) == [] for r in rs[1:])


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO for the IOC process needs root")
def test_kek_ioc_preset_runs_the_ioc_at_fifo_90_idle_and_under_hackbench(tmp_path):
    out = tmp_path / "b"
    p = rtqual("run", ROOT / "scenarios/kek-rpi-ioc-2020.toml", "--scale", "0.001", "-o", out, "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    rs = results(out)
    assert [r["label"] for r in rs] == [
        "timer baseline idle",
        "timer baseline hackbench",
        "ioc 25 Hz idle",
        "ioc 25 Hz hackbench",
    ]
    for r in rs[2:]:
        assert r["ioc"]["rtprio"] == 90 and r["params"]["rate_hz"] == 25 and r["ioc"]["preset"] == "kek"
    assert rs[3]["loads"] and rs[3]["loads"][0]["type"] == "hackbench"

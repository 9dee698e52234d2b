"""Probes come from the native table alone (a new probe needs no Python edit); services from a registry."""

import subprocess
import sys

import pytest

from rtqual import probes, services
from rtqual.errors import RtqError
from rtqual.probes.catalog import ALL_PROBES, PROBES, native_probe, with_service

NEW = {
    "name": "newprobe",
    "summary": "a probe Python has never heard of",
    "supported": True,
    "why_not": None,
    "binary": "rtqual-probe",
    "label_keys": ["mode"],
    "service": None,
    "sections": [],
    "options": [
        {"name": "--mode", "type": "enum", "choices": ["fast", "slow"], "default": "fast", "help": "how"},
        {"name": "--duration", "type": "duration", "min": 1000000, "max": 10**12, "default": "10s", "help": "time"},
        {"name": "--loops", "type": "int", "min": 1, "max": 10**9, "default": None, "help": "periods"},
        {"name": "--json-fd", "type": "int", "min": 1, "max": 65535, "default": "1", "help": "fd"},
    ],
}


def test_a_new_probe_is_its_table_entry():
    p = native_probe(NEW)
    assert set(p.params) == {"mode", "duration", "loops", "max_latency", "p99_latency"}  # json-fd is rtqual's
    assert p.exclusive == (("duration", "loops"),) and p.label_keys == ("mode",)
    args, params, req = p.build({"mode": "slow", "duration": 2 * 10**9, "max_latency": 5})
    assert args == ["--mode", "slow", "--duration", "2000000000ns"] and req == {"max_ns": 5}
    assert p.label(params) == "newprobe slow" and p.time_ns(params) == 2 * 10**9


def test_a_new_probe_with_a_service_gets_its_parameters():
    entry = dict(NEW, service={"name": "ioc", "run_as": "newrun", "fixed": {"mode": "$(P)x"}, "external": None})
    p = with_service(native_probe(NEW), entry)
    assert p.name == "newrun" and p.native == "newprobe" and p.fixed == {"mode": "$(P)x"}
    assert "mode" not in p.params or p.params["mode"] is services.kind("ioc").params["mode"]
    assert "records" in p.params and p.service is not None


def test_every_table_entry_is_a_probe_and_the_fake_one_is_hidden():
    names = {e["name"] for e in probes.table()}
    assert names <= set(ALL_PROBES) and "fake" not in PROBES and ALL_PROBES["fake"].hidden
    runs = {e["service"]["run_as"]: e["name"] for e in probes.table() if e.get("service")}
    assert runs == {"ioc": "iocresp", "ca-rtt": "ca-rtt", "pva-rtt": "pva-rtt"}
    assert {n: ALL_PROBES[n].native for n in runs} == runs


def test_table_keys_say_binary_and_sections():
    assert probes.binary_of("ca-rtt") == "rtqual-ca" and probes.binary_of("timer") == "rtqual-probe"
    assert probes.has_section("iocresp", "stages") and probes.has_section("timer", "baseline")
    assert not probes.has_section("switch", "baseline")


def test_unknown_service_is_one_line():
    with pytest.raises(RtqError, match="unknown service 'nope'"):
        services.kind("nope")


def test_the_probe_table_imports_no_epics_until_a_case_needs_it():
    code = (
        "import sys, rtqual.probes.catalog, rtqual.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('rtqual.measure.epics') or m.startswith('epics')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['rtqual.measure.epics', 'rtqual.measure.epics.probes']"

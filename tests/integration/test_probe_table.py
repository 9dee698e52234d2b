"""The probe table the Python side uses is the installed binary's own."""

import json

from conftest import needs_probe
from rtqual.errors import RtqError
from rtqual.measure.run import native
from rtqual.probes.catalog import ALL_PROBES, NATIVE_TABLE, PROBES


@needs_probe
def test_native_table_matches_binary():
    table = json.loads(NATIVE_TABLE.read_text())
    for name, path in ((native.CA, native.ca_path), (native.PVA, native.pva_path)):
        try:
            path()
        except RtqError:  # built without EPICS or pvxs: that binary's entries cannot be compared
            table = [e for e in table if e.get("binary") != name]
    assert table == native.probe_list(), "native probe options changed: run scripts/update-probe-table"


def test_ca_probes_run_from_rtqual_ca():
    ca = {e["name"] for e in json.loads(NATIVE_TABLE.read_text()) if e.get("binary") == native.CA}
    assert ca == {"ca-rtt"}
    pva = {e["name"] for e in json.loads(NATIVE_TABLE.read_text()) if e.get("binary") == native.PVA}
    assert pva == {"pva-rtt"}
    assert all(e.get("binary") for e in json.loads(NATIVE_TABLE.read_text()))  # contract: on every entry


def test_every_native_probe_has_a_scenario_entry():
    hidden = {name for name, p in ALL_PROBES.items() if p.hidden}  # the fake probe, the stall injector
    names = {e["name"] for e in json.loads(NATIVE_TABLE.read_text())} - hidden
    assert {"fake", "inject"} <= hidden
    assert names <= set(PROBES)

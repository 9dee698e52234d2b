"""The probe table the Python side uses is the installed binary's own."""
import json

from conftest import needs_probe
from rtqual import _native
from rtqual.scenario.probes import NATIVE_TABLE, PROBES


@needs_probe
def test_native_table_matches_binary():
    assert json.loads(NATIVE_TABLE.read_text()) == _native.probe_list(), \
        "native probe options changed: run scripts/update-probe-table"


def test_every_native_probe_has_a_scenario_entry():
    names = {e["name"] for e in json.loads(NATIVE_TABLE.read_text())} - {"fake"}
    assert names <= set(PROBES)

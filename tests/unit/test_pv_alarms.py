"""The PVs' fields from their one definition: alarm limits from the requirements only (HIHI at the limit, HIGH at
half of it, none without one), EGU/PREC/DESC on every PV, and docs/monitoring.md's PV table current."""

import re
from pathlib import Path

import pytest

from rtqual.answers.requirements import gather, profile, upper_limits_ns
from rtqual.errors import RtqError
from rtqual.measure.epics import ioc
from rtqual.measure.epics.service import max_limit_us
from rtqual.monitor import pvs

ROOT = Path(__file__).resolve().parents[2]
RECORD = re.compile(r'record\((\w+), "([^"]+)"\) \{(.*?)\n\}', re.S)
FIELD = re.compile(r'field\((\w+), "([^"]*)"\)')


def records(db: str) -> dict[str, dict[str, str]]:
    """{record name: {field: value}} of a database text, the record type as "type"."""
    return {name: {"type": t, **dict(FIELD.findall(body))} for t, name, body in RECORD.findall(db)}


def test_upper_limits_take_the_tightest_latency_bound_only():
    texts = ["max < 20ms", "max <= 5ms", "p99 <= 100us", "min >= 1us", "over(100us) <= 1%", "overruns == 0"]
    assert upper_limits_ns(gather(texts, None)) == {"max": 5_000_000, "p99": 100_000}
    assert upper_limits_ns(profile("1khz-loop")) == {"max": 500_000, "p99.99": 100_000}
    assert upper_limits_ns([]) == {}
    with pytest.raises(RtqError):
        gather(["max <= soon"], None)


def test_monitor_alarm_fields_come_from_the_requirement_on_their_statistic():
    db = records(pvs.database("M", [0, 3], upper_limits_ns(gather(["max <= 300us", "p99.99 <= 80us"], None)), 0.0))
    for name in ("M:LAT_MAX", "M:CPU0:LAT_MAX", "M:CPU3:LAT_MAX"):
        f = db[name]
        assert (f["HIHI"], f["HHSV"], f["HIGH"], f["HSV"]) == ("300", "MAJOR", "150", "MINOR")
    assert (db["M:LAT_P9999"]["HIHI"], db["M:LAT_P9999"]["HIGH"]) == ("80", "40")
    for name in ("M:LAT_P99", "M:CPU0:LAT_P99", "M:LAT_P50", "M:SAMPLES", "M:HEARTBEAT", "M:UPTIME"):
        assert not {"HIHI", "HIGH", "HHSV", "HSV"} & set(db[name]), name


def test_no_requirement_no_alarm_fields():
    for text in (pvs.database("M", [0, 1], {}, 0.0), ioc.make_db("aps")):
        assert not re.search(r"field\((HIHI|HIGH|HHSV|HSV|LOW|LOLO)\b", text)


def test_every_pv_has_egu_prec_and_a_desc_that_fits():
    mon = records(pvs.database("M", [0], {}, 0.0))
    assert {f"M:{pv.name}" for pv in pvs.PVS if not pv.per_cpu} | {"M:UPTIME"} <= set(mon)
    for name, f in mon.items():
        if not name.startswith("M:UPTIME:"):  # the uptime's clock records are plumbing
            assert "EGU" in f and "PREC" in f and f.get("DESC"), name
    op = records(ioc.make_db("kek"))
    for name in ioc.OPERATOR_PVS:
        f = op[f"$(P){name}"]
        assert f.get("DESC"), name
        if f["type"] in ("ai", "ao", "calc", "compress"):
            assert "EGU" in f and "PREC" in f, name
    for f in [*mon.values(), *op.values()]:
        assert len(f.get("DESC", "")) <= 40  # dbCommon's DESC holds 40 characters


def test_uptime_counts_from_the_monitor_start_or_the_ioc_init():
    mon = records(pvs.database("M", [0], {}, 631_152_000 + 100.25))  # EPICS epoch + 100.25 s
    assert mon["M:UPTIME:start"]["INP"] == "100.250" and "DTYP" not in mon["M:UPTIME:start"]
    assert mon["M:UPTIME"]["CALC"] == "A-B" and mon["M:UPTIME"]["SCAN"] == "1 second"
    op = records(ioc.make_db("kek"))
    assert op["$(P)UPTIME:start"]["DTYP"] == "Soft Timestamp" and op["$(P)UPTIME:start"]["PINI"] == "YES"
    assert op["$(P)HEARTBEAT"]["SCAN"] == "1 second"


def test_the_1hz_records_can_be_left_out_and_nothing_else_changes():
    """benchmarks/ioc_operator_cost.py --compare clock: the statistics with and without HEARTBEAT and UPTIME."""
    full, bare, clock = (records(db) for db in (ioc.operator_db(), ioc.operator_db(clock=False), ioc.clock_db()))
    assert set(clock) == {"$(P)HEARTBEAT", "$(P)UPTIME", "$(P)UPTIME:start", "$(P)UPTIME:now"}
    assert not set(bare) & set(clock) and full == {**bare, **clock}


def test_ioc_total_latency_alarms_at_the_max_requirement_of_an_ioc_case():
    db = records(ioc.make_db("aps", max_limit_us=250.0))
    total = db["$(P)lat:total"]
    assert (total["HIHI"], total["HHSV"], total["HIGH"], total["HSV"]) == ("250", "MAJOR", "125", "MINOR")
    assert "HIHI" not in db["$(P)lat:wake"] and "HIHI" not in db["$(P)lat:chain"]
    spec = {"run_as": "ioc", "require": gather(["p99 <= 100us", "max <= 2ms", "max < 250us"], None)}
    assert max_limit_us(spec) == 250.0
    assert max_limit_us({**spec, "run_as": "ca-rtt"}) is None  # a CA round trip is not lat:total
    assert max_limit_us({"run_as": "ioc", "require": gather(["p99 <= 100us"], None)}) is None
    assert max_limit_us({}) is None


def test_docs_monitoring_md_pv_table_is_current():
    doc = (ROOT / "docs/monitoring.md").read_text()
    assert pvs.pv_table() in doc, "regenerate: python -m rtqual.monitor.pvs (into docs/monitoring.md)"

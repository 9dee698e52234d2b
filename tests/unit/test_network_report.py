"""The network load's words in reports and the APS table, and its journal kinds: pure, no root."""

from rtqual.measure.conditions import journal, objects
from rtqual.publish import views


def net_load(mode="udp", pps=1980.0, asked=2000, drops=3, arp=0):
    return {
        "name": "traffic",
        "type": "network",
        "network": {
            "mode": mode,
            "asked": {"packets_per_s": asked, "size_bytes": 512, "arp_per_s": arp},
            "achieved": {"packets_per_s": pps, "bytes_per_s": pps * 512, "drops": drops, "arp_per_s": arp or None},
            "path": {"interface": None},
            "receiving_cpu": 1,
            "irq_delta": {"1": {"interrupts": 10, "net_rx": 4000, "net_tx": 0}},
        },
    }


def case(label, loads):
    stats = {"min_ns": 1000, "p50_ns": 2000, "max_ns": 9000, "over_threshold_pct": 0.0}
    return {"label": label, "stats": stats, "loads": loads, "params": {"threshold_ns": 100_000}, "verdict": "pass"}


def test_network_text_gives_achieved_against_asked():
    assert views.network_text(case("x", [net_load()])) == "udp 1980/s of 2000 1.01MB/s 3 drops"
    bcast = views.network_text(case("x", [net_load("broadcast", 200.0, 200, 0, arp=50)]))
    assert bcast.startswith("broadcast 200/s of 200") and "ARP 50/s" in bcast
    assert views.network_text(case("x", [{"name": "hb", "type": "hackbench"}])) is None


def test_aps_table_shows_private_and_public_side_by_side():
    text = views.paper_table([case("interrupt busy", []), case("interrupt busy+public", [net_load()])], "aps")
    lines = text.splitlines()
    assert "network achieved" in lines[1]
    assert "private (none)" in lines[3] and "udp 1980/s of 2000" in lines[4]


def test_aps_table_without_network_loads_is_unchanged():
    text = views.paper_table([case("interrupt busy", [])], "aps")
    assert "network" not in text


def test_network_lines_name_the_receiving_cpu_softirqs():
    (line,) = views.network_lines(case("x", [net_load()]))
    assert "private veth pair" in line and "CPU 1: +10 interrupts, +4000 NET_RX softirqs" in line


def test_a_vanished_namespace_counts_as_restored(monkeypatch):
    monkeypatch.setattr(objects, "net_objects", lambda kind: [])
    records = [
        {"knob": "rtqual-1n2", "kind": "netns", "applied": True},
        {"knob": "rq1n2h", "kind": "veth", "applied": True},
    ]
    actions = journal.restore_from_records(records)
    assert [a["action"] for a in actions] == ["removed", "removed"] and all(r["restored"] for r in records)
    assert journal.restore_from_records(records) == []

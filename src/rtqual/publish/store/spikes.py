"""`rtqual history --spikes`: the captured spikes the store holds (monitor --capture, run --capture), oldest first,
as a table or JSON. Pure functions of the store's rows (rtqual.publish.store.Store.spikes)."""

from __future__ import annotations

import json
import time

from rtqual.answers.evidence.spikes import cause_words
from rtqual.textfmt import format_table
from rtqual.units import format_ns


def _evidence(text: object) -> dict:
    """A row's evidence (JSON text written by rtqual; anything unreadable is an empty object)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def spike_json(row: dict) -> dict:
    """One stored spike as `history --spikes --json` gives it: time, host, probe, cpu, latency, cause, evidence."""
    return {
        "time_unix_s": row["time_unix_s"],
        "host": row["host"],
        "probe": row["probe"],
        "cpu": row["cpu"],
        "latency_ns": row["latency_ns"],
        "cause": {
            "kind": row["kind"],
            "comm": row["comm"],
            "pid": row["pid"],
            "policy": row["policy"],
            "priority": row["priority"],
            "cpu": row["cause_cpu"],
        },
        "evidence": _evidence(row.get("evidence")),
    }


def spikes_json(rows: list[dict]) -> dict:
    return {"spikes": [spike_json(r) for r in rows]}


def spikes_text(rows: list[dict]) -> str:
    """One line per captured spike: when (UTC), host, probe, CPU, latency, and what held the CPU."""
    if not rows:
        return "no captured spikes stored (rtqual monitor --capture OVER; filters: --host, --since)"
    table = [
        [
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["time_unix_s"])),
            str(r["host"]),
            str(r["probe"]),
            str(r["cpu"]),
            format_ns(r["latency_ns"]),
            cause_words(spike_json(r)["cause"]),
        ]
        for r in rows
    ]
    head = ["time (UTC)", "host", "probe", "cpu", "latency", "cause (what held the CPU)"]
    return format_table(head, table, left=3) + f"\n{len(rows)} captured spike(s)"

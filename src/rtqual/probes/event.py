"""The event probe's Python side: how `rtqual selftest` measures it (its options are the C table's)."""

from __future__ import annotations

US = 1_000


def selftest_params(cpu: int, other: int, duration: str) -> dict:
    """`rtqual selftest`: eventfd stimuli at 5 kHz from the other CPU, the responder on the CPU."""
    return {"source": "eventfd", "rate": 5000, "cpu": cpu, "stimulus_cpu": other, "duration": duration}


# rtqual.selftest.run: its place among the probes, its sampling period, its params
SELFTEST = {
    "order": 2,
    "period_ns": 200 * US,
    "params": selftest_params,
    "blind": "the stimulus thread on the other CPU: a stall that begins while its stimulus is late is timed from "
    "that stimulus on",
}

"""The switch probe's Python side: how `rtqual selftest` measures it (its options are the C table's)."""

from __future__ import annotations


def selftest_params(cpu: int, other: int, duration: str) -> dict:
    """`rtqual selftest`: cross-CPU ping-pong, side B on the CPU (its wake-ups wait for the stall; on one CPU the
    ping-pong would rest, blind to it)."""
    return {"cpus": f"{other},{cpu}", "duration": duration}


# rtqual.selftest.run: its place among the probes, its sampling period (0: back to back), its params
SELFTEST = {
    "order": 3,
    "period_ns": 0,
    "params": selftest_params,
    "blind": "while no wake-up of side B (on the CPU) is pending: side A on the other CPU not yet woken or not yet "
    "sending, or side B between its wake-up and its reply's time stamp; a stall beginning there is timed from A's "
    "next send on, one wholly inside such a time is unseen",
}

"""The msg probe's Python side: how `rtqual selftest` measures it (its options are the C table's)."""

from __future__ import annotations


def selftest_params(cpu: int, other: int, duration: str) -> dict:
    """`rtqual selftest`: UDP round trips back to back, the client on the CPU, the server on the other."""
    return {"transport": "udp", "client_cpu": cpu, "server_cpu": other, "duration": duration}


# rtqual.selftest.run: its place among the probes, its sampling period (0: back to back), its params
SELFTEST = {
    "order": 4,
    "period_ns": 0,
    "params": selftest_params,
    "blind": "the client's own work between a reply's time stamp and the next send's (recording the sample): a "
    "stall beginning there delays no round trip and is unseen",
}

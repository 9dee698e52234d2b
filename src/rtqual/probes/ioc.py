"""`rtqual run ioc`'s Python side (iocresp with rtqual's IOC, rtqual.measure.epics): how `rtqual selftest`
measures it (its options are iocresp's and the IOC service's)."""

from __future__ import annotations

MS = 1_000_000


def selftest_params(cpu: int, other: int, duration: str) -> dict:
    """`rtqual selftest`: rtqual's IOC pinned to the CPU, 1 kHz stimuli from the harness on the other."""
    return {"rate": 1000, "cpu": other, "ioc_cpus": str(cpu), "duration": duration}


# rtqual.selftest.run: its place among the probes, its sampling period, its params
SELFTEST = {
    "order": 5,
    "period_ns": MS,
    "params": selftest_params,
    "blind": "the harness on the other CPU: a stall that begins while its 1 kHz stimulus is late is timed from "
    "that stimulus on",
    # its samples sit in the harness CPU's slot, but each times a chain through the IOC on the stalled CPU
    "all_samples_wait_on_cpu": True,
}

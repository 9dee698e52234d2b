"""`rtqual run timerlat`: the kernel's own timer latency (the timerlat tracer, rtla timerlat hist's source) in
rtqual's own tracefs instance, as a probe like every other: per-CPU histograms of the latency a task sees, and
its split into stages (irq: timer expiry -> timer IRQ; thread: -> the timerlat thread running; user: -> back in
user space, where the kernel has timerlat's user-space interface). The probe process is Python
(rtqual.measure.probes.timerlat), not rtqual-probe; this entry is its line of the probe table, in the shape of
`rtqual-probe --list` (docs/protocol.md)."""

from __future__ import annotations

from typing import Any

BINARY = "rtqual-timerlat"  # run by rtqual.measure.run.native as `python -m rtqual.measure.probes.timerlat`
STAGES = ("irq", "thread", "user")
KERNEL_OPTION = "CONFIG_TIMERLAT_TRACER"

ENTRY: dict[str, Any] = {
    "name": "timerlat",
    "summary": "the kernel's timer latency (timerlat tracer): IRQ, thread and user-return stages per CPU",
    "supported": True,
    "why_not": None,
    "binary": BINARY,
    "label_keys": ["interval"],
    "service": None,
    "sections": ["stages"],
    "options": [
        {
            "name": "--cpus",
            "type": "cpulist",
            "default": None,
            "help": "CPUs with a timerlat thread (default: all online)",
        },
        {
            "name": "--interval",
            "type": "duration",
            "unit": "ns",
            "min": 100_000,
            "max": 1_000_000_000,
            "default": "1ms",
            "help": "timer period (timerlat_period_us; whole microseconds)",
        },
        {
            "name": "--duration",
            "type": "duration",
            "unit": "ns",
            "min": 100_000_000,
            "max": 31_536_000_000_000_000,
            "default": "10s",
            "help": "measured time",
        },
        {
            "name": "--threshold",
            "type": "duration",
            "unit": "ns",
            "min": 1,
            "max": 60_000_000_000,
            "default": "100us",
            "help": "samples above it emit event records",
        },
        {
            "name": "--max-events",
            "type": "int",
            "min": 0,
            "max": 1_000_000,
            "default": "100",
            "help": "threshold events per second, all CPUs; the rest counted as suppressed",
        },
        {
            "name": "--user",
            "type": "enum",
            "choices": ["auto", "on", "off"],
            "default": "auto",
            "help": "user-return stage through timerlat's user-space interface (auto: where the kernel has it)",
        },
        {
            "name": "--raw",
            "type": "path",
            "default": None,
            "help": "keep every sample in FILE (protocol.md raw format)",
        },
        {
            "name": "--raw-max-bytes",
            "type": "int",
            "min": 4096,
            "max": 1 << 40,
            "default": "268435456",
            "help": "cap of the raw file; capture stops (flagged) at the cap",
        },
        {"name": "--json-fd", "type": "int", "min": 1, "max": 65535, "default": "1", "help": "fd for JSON Lines"},
        {
            "name": "--progress-ms",
            "type": "int",
            "min": 50,
            "max": 60000,
            "default": "1000",
            "help": "period of progress records, ms",
        },
        {
            "name": "--hist-delta",
            "type": "flag",
            "default": None,
            "help": "after each progress record, one hist_delta record per slot: the buckets filled since the last",
        },
    ],
}

"""inject: K stalls of known length D on one CPU (`rtqual-probe inject`, a bounded SCHED_FIFO busy loop
above the probes' priority, named rtqual-stall), for `rtqual selftest` and for tests of spike analysis.

Its stall records (CLOCK_MONOTONIC, the probes' clock) are kept with the load in the case's result
("stalls"), so what was injected and what the probe measured sit side by side in the bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rtqual.loadspec import TYPES, inject_times_ns
from rtqual.measure.loads.base import Load
from rtqual.measure.run import native
from rtqual.units import online_cpus


class Inject(Load):
    """`rtqual-probe inject` with the stall times in ns, its stall records kept in the load's record."""

    type = "inject"
    rt_inherent = True  # the injector makes itself SCHED_FIFO at stall_priority
    runs_until_stopped = False  # it ends after its stalls
    OPTIONS = TYPES[type].options

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        self.ns = inject_times_ns(self.options, f"load '{self.name}'")
        self._log: Path | None = None

    def stall_cpu(self) -> int:
        cpu = self.options["cpu"]
        return online_cpus()[-1] if cpu is None else cpu

    def instance_cpus(self, index: int) -> list[int]:
        return [self.stall_cpu()]

    def find_tool(self) -> str:
        return str(native.probe_path())

    def argv(self, index: int) -> list[str]:
        ns = self.ns
        argv = [self.exe, "inject", "--cpu", str(self.stall_cpu()), "--stall", f"{ns['stall']}ns"]
        argv += ["--count", str(self.options["count"]), "--gap", f"{ns['gap']}ns"]
        argv += ["--start-delay", f"{ns['start_delay']}ns", "--priority", str(self.options["stall_priority"])]
        return argv + (["--claim", f"{ns['claim']}ns"] if "claim" in ns else [])

    def start(self, log_dir: Path) -> None:
        super().start(log_dir)
        self._log = Path(log_dir) / self._running[0].log if self._running else None

    def collect(self) -> dict:
        """The load's record, with the injector's stall records and its end record."""
        out = super().collect()
        out["stalls"], out["injector_header"], out["injector_end"] = injector_records(self._log)
        return out


def injector_records(log: Path | None) -> tuple[list[dict], dict | None, dict | None]:
    """The stall records, the header's clock and params, and the end record in an injector's log (its
    stderr lines are not JSON)."""
    stalls: list[dict] = []
    header = end = None
    try:
        lines = log.read_text(errors="replace").splitlines() if log else []
    except OSError:
        lines = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("type") == "stall":
            stall = {k: rec.get(k) for k in ("cpu", "start_ns", "end_ns", "claimed_ns", "index")}
            stalls.append(stall | ({"planned_ns": rec["planned_ns"]} if "planned_ns" in rec else {}))
        elif isinstance(rec, dict) and rec.get("type") == "header":
            header = {"clock": rec.get("clock"), "params": rec.get("params"), "rt": rec.get("rt")}
        elif isinstance(rec, dict) and rec.get("type") == "end":
            end = rec
    return stalls, header, end

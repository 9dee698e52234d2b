"""inject: K stalls of known length D on one CPU (`rtqual-probe inject`, a bounded SCHED_FIFO busy loop
above the probes' priority, named rtqual-stall), for `rtqual selftest` and for tests of spike analysis.

Its stall records (CLOCK_MONOTONIC, the probes' clock) are kept with the load in the case's result
("stalls"), so what was injected and what the probe measured sit side by side in the bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rtqual.errors import RtqError
from rtqual.fields import Field
from rtqual.measure.loads.base import Load
from rtqual.measure.run import native
from rtqual.units import online_cpus, parse_duration_ns

MS = 1_000_000
STALL_MIN_NS, STALL_MAX_NS = 100_000, 200 * MS  # the injector's own range (inject.c)


class Inject(Load):
    """K SCHED_FIFO busy loops of length `stall` on CPU `cpu`, `gap` apart, after `start_delay`."""

    type = "inject"
    rt_inherent = True  # the injector makes itself SCHED_FIFO at stall_priority
    runs_until_stopped = False  # it ends after its stalls
    OPTIONS = {
        "cpu": Field("int", "the CPU to stall (default: the last online CPU)", lo=0, hi=8191),
        "stall": Field("str", "length of each stall, e.g. 10ms (at most 200ms)", default="10ms"),
        "count": Field("int", "stalls", lo=1, hi=10_000, default=5),
        "gap": Field("str", "sleep between one stall's end and the next one's start", default="500ms"),
        "start_delay": Field(
            "str",
            "sleep before the first stall: the case's settle time (default 2s) and the probe's start come first",
            default="3s",
        ),
        "stall_priority": Field("int", "SCHED_FIFO priority of the stalls", lo=1, hi=99, default=90),
        "claim": Field("str", "claim this length in the stall records (a lie: the selftest must fail)"),
    }

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        o = self.options
        where = f"load '{self.name}'"
        self.ns = {k: parse_duration_ns(o[k], f"{where}: {k}") for k in ("stall", "gap", "start_delay")}
        if not STALL_MIN_NS <= self.ns["stall"] <= STALL_MAX_NS:
            raise RtqError(f"{where}: stall must be in 100us..200ms (got {o['stall']})")
        if o["claim"] is not None:
            self.ns["claim"] = parse_duration_ns(o["claim"], f"{where}: claim")
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

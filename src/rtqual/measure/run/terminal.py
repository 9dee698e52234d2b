"""Terminal progress: a rich live table on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from rtqual.units import format_hms, format_ns

if TYPE_CHECKING:
    from rich.live import Live
    from rich.table import Table


def progress_line(rec: dict) -> str:
    """One plain line from a `progress` record (pure)."""
    parts = [f"{rec.get('elapsed_ns', 0) / 1e9:7.1f}s"]
    for c in rec.get("cpus", []):
        parts.append(
            f"cpu{c['cpu']} n={c['count']} max={format_ns(c['max_ns'])} "
            f"1s-max={format_ns(c.get('window_max_ns'))} overruns={c['overruns']}"
        )
    return " | ".join(parts)


def case_line(case: dict, cases: list[dict]) -> str:
    """'[2/13] running 002-x: label (about 1h02m left in the run)' (pure)."""
    ids = [c["id"] for c in cases]
    if case["id"] not in ids or len(ids) < 2:
        return f"running {case['id']}: {case['label']}"
    k = ids.index(case["id"])
    left_ns = sum(c.get("estimate_ns", c.get("params", {}).get("duration_ns", 0)) for c in cases[k:])
    return f"[{k + 1}/{len(ids)}] running {case['id']}: {case['label']} (about {format_hms(left_ns)} left in the run)"


class TerminalDisplay:
    """Shows progress records of the running case; quiet=True prints nothing."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, cases: list[dict] | None = None):
        self.out = stream or sys.stdout
        self.cases = cases or []
        self.quiet = quiet
        self.tty = self.out.isatty()
        self.live: Live | None = None
        self.t0 = 0.0
        self.case_total_s = 0.0

    def start_case(self, case: dict) -> None:
        self.t0 = time.monotonic()
        self.case_total_s = case.get("params", {}).get("duration_ns", 0) / 1e9
        if self.quiet:
            return
        print(case_line(case, self.cases), file=self.out, flush=True)
        if self.tty:
            from rich.console import Console
            from rich.live import Live

            live = Live("starting...", console=Console(file=self.out), refresh_per_second=4, transient=True)
            live.start()
            self.live = live

    def record(self, case: dict, rec: dict) -> None:
        if self.quiet:
            return
        if rec["type"] == "progress":
            if self.live:
                self.live.update(self._rich_table(rec))
            else:
                print(progress_line(rec), file=self.out, flush=True)
        elif rec["type"] == "event" and rec.get("kind") == "warning":
            self._print(f"warning: {rec.get('message')}")

    def end_case(self, case: dict, result: dict) -> None:
        if self.live:
            self.live.stop()
            self.live = None

    def _print(self, text: str) -> None:
        (self.live.console.print if self.live else lambda t: print(t, file=self.out, flush=True))(text)

    def _rich_table(self, rec: dict) -> Table:
        from rich.table import Table

        elapsed = rec.get("elapsed_ns", 0) / 1e9
        left = f", {max(self.case_total_s - elapsed, 0):.0f}s left" if self.case_total_s else ""
        t = Table(title=f"{elapsed:.0f}s elapsed{left}", title_justify="left")
        for h in ("cpu", "count", "min", "max", "1s max", "overruns", ">thr"):
            t.add_column(h, justify="right")
        for c in rec.get("cpus", []):
            t.add_row(
                str(c["cpu"]),
                str(c["count"]),
                format_ns(c["min_ns"]),
                format_ns(c["max_ns"]),
                format_ns(c.get("window_max_ns")),
                str(c["overruns"]),
                str(c.get("over_threshold", 0)),
            )
        return t

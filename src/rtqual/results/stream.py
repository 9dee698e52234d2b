"""Reader of the probes' JSON Lines stream (docs/protocol.md).

Tolerant by design: a truncated last line or a corrupt line is reported in
`problems`, never raised, so a probe that crashed still leaves usable data.
Bounded by design: a day-long stream keeps the first EVENTS_KEPT threshold events and
MESSAGES_KEPT messages in memory and counts the rest (the stream file keeps them all).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from rtqual.results.blockmax import BlockMaxima, Damaged
from rtqual.results.hist import COUNTS_LEN
from rtqual.results.hist import record_problem as hist_record_problem
from rtqual.units import MAX_CPUS

KNOWN_TYPES = {"header", "progress", "event", "hist", "hist_delta", "summary", "end"}
EVENTS_KEPT = 1000  # threshold events kept in memory (the first ones); all stay in stream.jsonl
MESSAGES_KEPT = 100  # warnings and problems kept in memory each; the rest are counted
COUNTERS = ("count", "min_ns", "max_ns", "overruns", "over_threshold")  # per-CPU counters in progress/summary
HIST_MAX_BUCKETS = 1 << 16


def _count(x: object) -> bool:
    """A non-negative integer (JSON true/false are not counts)."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _cpu_rows_problem(rows: object) -> str | None:
    """What is wrong with a list of per-CPU objects (each with its CPU number below the kernel's MAX_CPUS,
    non-negative integer counters and window maximum, a minimum when counted), or None."""
    if not isinstance(rows, list):
        return "'cpus' is no list"
    for c in rows:
        if not isinstance(c, dict) or not _count(c.get("cpu")) or c["cpu"] >= MAX_CPUS:
            return "a 'cpus' entry without a CPU number 0..8191"
        bad = next((k for k in (*COUNTERS, "window_max_ns") if not _count(c.get(k, 0))), None)
        if bad is not None:
            return f"'{bad}' of cpu {c['cpu']} is no whole number >= 0"
        if "min_ns" not in c and c.get("count"):
            return f"no 'min_ns' for cpu {c['cpu']}"
    return None


def _hist_ok(rec: dict) -> bool:
    """A hist record rtqual can rebuild (rtqual.results.hist.record_problem: the layout's bucket indices,
    non-negative integer counts, min <= max when counted) of a CPU."""
    return hist_record_problem(rec) is None and _count(rec.get("cpu", 0))


def _delta_ok(rec: dict) -> bool:
    """A hist_delta record (--hist-delta): its CPU, count and sparse [index, count] pairs, count their sum."""
    counts = rec.get("counts")
    if not isinstance(counts, list) or len(counts) > HIST_MAX_BUCKETS or not _count(rec.get("cpu")):
        return False
    if not all(
        isinstance(p, list) and len(p) == 2 and _count(p[0]) and p[0] < COUNTS_LEN and _count(p[1]) for p in counts
    ):
        return False
    return _count(rec.get("count")) and rec["count"] == sum(p[1] for p in counts)


def record_problem(rec: dict) -> str | None:
    """Why a record of a known type has a shape the readers cannot use (then it is ignored), or None."""
    kind = rec["type"]
    if kind == "hist" and not _hist_ok(rec):
        return "hist record of the wrong shape"
    if kind == "hist_delta" and not _delta_ok(rec):
        return "hist_delta record of the wrong shape"
    if kind in ("summary", "progress") and (why := _cpu_rows_problem(rec.get("cpus", []))):
        return f"{kind} record with malformed 'cpus' ({why})"
    if kind == "header" and not all(isinstance(rec.get(k, {}), dict) for k in ("rt", "params")):
        return "header record with malformed 'rt' or 'params'"
    if kind == "header" and not _count(rec.get("params", {}).get("progress_ms", 0)):
        return "header record with malformed 'params.progress_ms'"
    if kind == "event" and not (isinstance(rec.get("kind", ""), str) and _count(rec.get("count", 0))):
        return "event record with malformed 'kind' or 'count'"
    if kind == "end" and not all(isinstance(rec.get(k, ""), str) for k in ("reason", "message")):
        return "end record with malformed 'reason' or 'message'"
    return None


@dataclass
class Stream:
    header: dict | None = None
    last_progress: dict | None = None
    hists: dict[int, dict] = field(default_factory=dict)
    summary: dict | None = None
    end: dict | None = None
    threshold_events: list[dict] = field(default_factory=list)
    suppressed_events: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines: int = 0
    threshold_events_total: int = 0  # all threshold events seen, kept or not
    warnings_total: int = 0
    problems_total: int = 0
    blocks: BlockMaxima = field(default_factory=BlockMaxima)  # per-CPU maxima of each progress period (EVT)

    def feed(self, line: str) -> dict | None:
        """Take one line (with or without its newline); return the record, or None if unusable."""
        self.lines += 1
        text = line.strip()
        if not text:
            return None
        try:
            rec = json.loads(text)
        except ValueError:
            kind = "truncated" if not line.endswith("\n") else "corrupt"
            self._problem(f"line {self.lines}: {kind} JSON record ignored")
            return None
        if not isinstance(rec, dict) or rec.get("type") not in KNOWN_TYPES:
            self._problem(f"line {self.lines}: record without a known type ignored")
            return None
        problem = record_problem(rec)
        if problem:
            self._problem(f"line {self.lines}: {problem} ignored")
            return None
        self._take(rec)
        return rec

    def _take(self, rec: dict) -> None:
        kind = rec["type"]
        if kind == "header":
            self.header = rec
            ms = rec.get("params", {}).get("progress_ms")
            if isinstance(ms, int) and ms > 0 and not self.blocks.per_cpu:
                self.blocks.block_ns = ms * 1_000_000
        elif kind == "progress":
            self.last_progress = rec
            try:
                self.blocks.feed(rec)
            except Damaged as e:  # NaN, Infinity or text as a block's maximum: the block is not kept
                self._problem(f"line {self.lines}: {e}: block ignored")
        elif kind == "hist":
            self.hists[int(rec.get("cpu", 0))] = rec
        elif kind == "summary":
            self.summary = rec
        elif kind == "end":
            self.end = rec
        elif kind == "event":
            ev = rec.get("kind")
            if ev == "threshold":
                self.threshold_events_total += 1
                if len(self.threshold_events) < EVENTS_KEPT:
                    self.threshold_events.append(rec)
            elif ev == "suppressed":
                self.suppressed_events += int(rec.get("count", 0))
            elif ev == "warning":
                self.warnings_total += 1
                if len(self.warnings) < MESSAGES_KEPT:
                    self.warnings.append(str(rec.get("message", "")))

    def _problem(self, text: str) -> None:
        """Note an unusable line; beyond MESSAGES_KEPT only counted (a day of garbage stays small)."""
        self.problems_total += 1
        if len(self.problems) < MESSAGES_KEPT:
            self.problems.append(text)

    def messages(self) -> list[str]:
        """Warnings then problems as kept, with one line saying how many more are only in the stream."""
        more = self.warnings_total - len(self.warnings) + self.problems_total - len(self.problems)
        tail = [f"{more} more warnings and stream problems not listed (all in stream.jsonl)"] if more > 0 else []
        return [*self.warnings, *self.problems, *tail]

    @property
    def complete(self) -> bool:
        """True when the probe reached its `end` record."""
        return self.end is not None


def read_stream(lines: Iterable[str]) -> Stream:
    """Parse an iterable of lines (a file, a list) into a Stream."""
    s = Stream()
    for line in lines:
        s.feed(line)
    return s

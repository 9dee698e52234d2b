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

KNOWN_TYPES = {"header", "progress", "event", "hist", "summary", "end"}
EVENTS_KEPT = 1000  # threshold events kept in memory (the first ones); all stay in stream.jsonl
MESSAGES_KEPT = 100  # warnings and problems kept in memory each; the rest are counted


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
        self._take(rec)
        return rec

    def _take(self, rec: dict) -> None:
        kind = rec["type"]
        if kind == "header":
            self.header = rec
        elif kind == "progress":
            self.last_progress = rec
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

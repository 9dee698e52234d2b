"""Per-window statistics of a monitored probe, from its stream (pure: records in, window dicts out).

The probe runs with --hist-delta (docs/protocol.md): after each `progress` record one `hist_delta`
record per CPU carries the histogram buckets filled since the last one, and the probe emits a last
progress + hist_delta pair before its `hist` records. A window is the sum of the deltas whose
progress time falls in it; its maximum is exact (the progress records' `window_max_ns`), its
percentiles follow rtqual's one definition (rtqual.results.hist). Memory is constant whatever the run's
length: one sparse histogram per CPU for the open window (at most the 27 648 HDR buckets), counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rtqual.results.hist import HIGHEST_NS, Histogram, highest_equivalent, needed_samples


@dataclass
class CpuWindow:
    """One CPU's open window: the buckets filled, its exact maximum, and the cumulative counters at its start."""

    hist: Histogram = field(default_factory=Histogram)
    max_ns: int = 0
    overruns_start: int = 0
    over_threshold_start: int = 0
    overruns: int = 0  # cumulative, from the latest progress record
    over_threshold: int = 0


def add_delta(h: Histogram, counts: list[list[int]], max_ns: int) -> None:
    """Add a hist_delta's sparse buckets to a window histogram. Sum and min come from the buckets
    (highest and lowest equivalent values: within 0.1 %); the max is the exact one the caller knows."""
    for index, n in counts:
        h.counts[index] = h.counts.get(index, 0) + n
        h.count += n
        h.sum_ns += highest_equivalent(index) * n
    if h.counts:  # rtqual's rule for bucketed values: never below the exact one, capped at the max
        h.min_ns = highest_equivalent(min(h.counts))
        h.max_ns = max(h.max_ns, max_ns)


def window_stats(h: Histogram, max_ns: int) -> dict:
    """min/mean/p50/p99/p99.99/max of a window histogram, in ns: None for an empty window, and a percentile
    None where the window's samples cannot carry it (rtqual's 10/(1-p) rule: p99.99 needs 100,000)."""
    if not h.count:
        return {k: None for k in ("min_ns", "mean_ns", "p50_ns", "p99_ns", "p9999_ns", "max_ns")}
    h.max_ns = max_ns or h.max_ns  # percentiles are capped at the exact maximum
    return {
        "min_ns": min(h.min_ns, h.max_ns),
        "mean_ns": round(min(h.sum_ns / h.count, h.max_ns), 1),
        "p50_ns": h.percentile_ns(500_000),
        "p99_ns": h.percentile_ns(990_000) if h.count >= needed_samples(990_000) else None,
        "p9999_ns": h.percentile_ns(999_900) if h.count >= needed_samples(999_900) else None,
        "max_ns": h.max_ns,
    }


@dataclass
class Windows:
    """Turns a probe's records into closed windows of `window_ns` (by the probe's own elapsed time).
    feed(rec) returns the windows it closed: one dict per CPU (the store contract's keys) with the
    window's histogram beside it under "hist" (a Histogram, for the metrics; not stored)."""

    window_ns: int
    identity: dict  # host, probe, run_as, kernel, preempt: copied into every window
    slack_ns: int = 0  # half the progress period: a window closes at the progress record nearest its end
    every_progress: int = 0  # compressed time (tests, benchmarks): close after this many progress records instead
    first_ns: int = 0  # the first window closes after this much (a monitor says something early); 0: window_ns
    threshold_ns: int = 0
    start_unix_s: float = 0.0  # the probe's start (header start_real_ns)
    opened_ns: int = 0  # elapsed time at which the open window began
    cpus: dict[int, CpuWindow] = field(default_factory=dict)
    pending: dict[int, dict] = field(default_factory=dict)  # cpu -> its row of the latest progress record
    closed: int = 0  # windows closed so far (per CPU)
    last_ns: int = 0  # elapsed time of the latest delta
    fresh: bool = False  # a delta arrived since the last close
    next_close_ns: int = 0  # the open window's end on the grid k * window_ns of the probe's elapsed time
    batches: int = 0  # progress records (with their deltas) in the open window

    def feed(self, rec: dict) -> list[dict]:
        """Take one stream record; the windows closed by it (empty list most of the time)."""
        kind = rec.get("type")
        if kind == "header":
            self.start_unix_s = rec.get("start_real_ns", 0) / 1e9
            self.threshold_ns = int((rec.get("params") or {}).get("threshold_ns", 0) or 0)
        elif kind == "progress":
            for row in rec.get("cpus", []):
                self.pending[int(row["cpu"])] = row
        elif kind == "hist_delta":
            return self._delta(rec)
        elif kind in ("hist", "end"):
            return self.close(None)
        return []

    def _delta(self, rec: dict) -> list[dict]:
        """One CPU's delta after a progress record; the window closes once every CPU of that progress
        record has its delta and the window's time is up."""
        cpu = int(rec["cpu"])
        w = self.cpus.setdefault(cpu, CpuWindow())
        row = self.pending.pop(cpu, None)
        if row is not None:
            w.max_ns = max(w.max_ns, int(row.get("window_max_ns", 0)))
            w.overruns, w.over_threshold = int(row.get("overruns", 0)), int(row.get("over_threshold", 0))
        add_delta(w.hist, rec["counts"], w.max_ns)
        elapsed = self.last_ns = max(int(rec.get("elapsed_ns", 0)), self.last_ns)
        self.fresh = True
        if self.pending:  # more CPUs of this progress record to come
            return []
        self.batches += 1
        if self.every_progress and self.batches >= self.every_progress:
            return self.close(elapsed)
        due_ns = self.next_close_ns or self.first_ns or self.window_ns
        if not self.every_progress and elapsed >= due_ns - self.slack_ns:
            return self.close(elapsed)
        return []

    def close(self, elapsed_ns: int | None) -> list[dict]:
        """Close the open window at `elapsed_ns` (None: the stream's end, at the last delta seen) and
        open the next; one dict per CPU, nothing if no delta arrived since the last close."""
        if not self.fresh:
            return []
        end_ns = elapsed_ns if elapsed_ns is not None else self.last_ns
        out = []
        for cpu, w in sorted(self.cpus.items()):
            out.append(
                {
                    **self.identity,
                    "cpu": cpu,
                    "start_unix_s": round(self.start_unix_s + self.opened_ns / 1e9, 6),
                    "duration_s": round(max(end_ns - self.opened_ns, 0) / 1e9, 6),
                    "samples": w.hist.count,
                    **window_stats(w.hist, w.max_ns),
                    "over_threshold": w.over_threshold - w.over_threshold_start,
                    "overruns": w.overruns - w.overruns_start,
                    "threshold_ns": self.threshold_ns,
                    "hist": w.hist,
                }
            )
            self.cpus[cpu] = CpuWindow(
                overruns_start=w.overruns,
                over_threshold_start=w.over_threshold,
                overruns=w.overruns,
                over_threshold=w.over_threshold,
            )
        self.opened_ns, self.fresh, self.batches = end_ns, False, 0
        self.next_close_ns = self.next_close_ns or self.window_ns
        while self.next_close_ns - self.slack_ns <= end_ns:  # the grid, not the close time: no drift
            self.next_close_ns += self.window_ns
        self.closed += 1
        return out


def merged(windows: list[dict]) -> dict:
    """All CPUs of one window as one (the EPICS PVs' and the terminal's "all"): histograms merged,
    maxima and counters over CPUs."""
    h = Histogram.merged(w["hist"] for w in windows)
    top = max((w["max_ns"] or 0 for w in windows), default=0)
    out = {k: windows[0][k] for k in ("start_unix_s", "duration_s", "threshold_ns")} if windows else {}
    out.update(window_stats(h, top))
    out["samples"] = h.count
    out["over_threshold"] = sum(w["over_threshold"] for w in windows)
    out["overruns"] = sum(w["overruns"] for w in windows)
    return out


def public(window: dict) -> dict:
    """A window without its histogram: what the store and JSON output get."""
    return {k: v for k, v in window.items() if k != "hist"}


COARSE_PER_DECADE = 10
"""A stored window's histogram (the store's `hist` column, docs/store.md): bin k counts the samples from
10^(k/10) ns up to 10^((k+1)/10) ns (each bin about 26 % wide; a sample's HDR bucket, within 0.1 %, is placed by
its highest value capped at the window's maximum). A contract of stored rows: never change it."""


COARSE_BINS = math.ceil(COARSE_PER_DECADE * math.log10(HIGHEST_NS)) + 1  # bins 0 (1 ns) .. 60 s: what a bin can be


def coarse_bins(h: Histogram) -> dict[int, int]:
    """A histogram's counts in COARSE_PER_DECADE log bins ({k: count}, empty bins absent)."""
    out: dict[int, int] = {}
    top = h.max_ns or None
    for index, n in h.counts.items():
        v = max(min(highest_equivalent(index), top or highest_equivalent(index)), 1)
        k = math.floor(COARSE_PER_DECADE * math.log10(v) + 1e-9)
        out[k] = out.get(k, 0) + n
    return out


def coarse_text(bins: dict[int, int]) -> str:
    """Coarse bins as the store keeps them: 'k:count' pairs, space-separated, in bin order ('' for none)."""
    return " ".join(f"{k}:{n}" for k, n in sorted(bins.items()) if n)


def parse_coarse(text: str | None) -> dict[int, int]:
    """The store's 'k:count ...' text back as bins; a malformed pair or a bin no latency has (another writer's
    text: beyond 0..COARSE_BINS - 1) is skipped, so a page drawn from it stays bounded."""
    out: dict[int, int] = {}
    for pair in (text or "").split():
        k, _, n = pair.partition(":")
        if k.isdigit() and n.isdigit() and int(k) < COARSE_BINS and len(n) <= 19:
            out[int(k)] = out.get(int(k), 0) + int(n)
    return out


def stored(window: dict) -> dict:
    """A closed window as the store gets it: public(window) with its histogram as coarse bins under "hist"."""
    h = window.get("hist")
    return {**public(window), "hist": coarse_text(coarse_bins(h)) if isinstance(h, Histogram) else None}

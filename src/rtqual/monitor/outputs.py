"""Where the monitor's windows go (rtqual.monitor.loop hands them over; it publishes nothing itself): the terminal
line or JSON line, Prometheus /metrics, the node_exporter textfile, the history store (WindowSink) and the EPICS PVs;
each traced spike's line and its culprits in /metrics."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from rtqual.errors import RtqError
from rtqual.measure.run.session import spike
from rtqual.monitor.loop import STORE_FLUSH_S, Options, check_folder, window_line
from rtqual.publish.metrics import check_listen
from rtqual.results.window import merged, public, stored
from rtqual.textfmt import clean


class Outputs:
    """The outputs `rtqual monitor` was asked for: checked (check), started (start), then given every closed
    window (windows) and spike (spikes), and closed at exit (close: the last textfile, the store's buffer)."""

    def __init__(self, opts: Options):
        self.opts = opts
        self.metrics: Any = None
        self.store: Any = None
        self.store_warned = False
        self.pvs: Any = None
        self.textfile: Path | None = None
        self.actions: Any = None  # --on-spike (rtqual.monitor.actions.Actions)
        self.identity: dict = {}
        self.over_bound_said = -1.0  # when the hour's bound of captures was last said (time.monotonic())

    def check(self) -> None:
        """The outputs' arguments, before anything starts: the metrics address, the textfile folder."""
        if self.opts.listen:
            check_listen(self.opts.listen)
        if self.opts.textfile:
            self.textfile = check_folder(self.opts.textfile, "--textfile")

    def where(self) -> list[str]:
        """Where the windows go, for the monitor's first line."""
        o = self.opts
        out = [f"/metrics at http://{o.listen}/metrics" if o.listen else "no /metrics (--listen off)"]
        out += [f"node_exporter textfile {self.textfile}/rtqual.prom"] if self.textfile else []
        return out + ([f"EPICS PVs {o.pvs}:*"] if o.pvs else [])

    def start(self, identity: dict, work: Path, start_unix_s: float) -> None:
        """Metrics port (a port in use is one line), store, PVs."""
        from rtqual.publish.metrics import Metrics, serve

        self.identity = identity
        labels = ("host", "kernel", "preempt", "machine", "rtqual_version")
        self.metrics = Metrics({k: identity[k] for k in labels if k in identity})
        self.metrics.capturing = bool(self.opts.capture_ns)
        if self.opts.listen:
            try:
                serve(self.metrics, self.opts.listen)
            except OSError as e:
                raise RtqError(f"--listen {self.opts.listen}: {e.strerror or e}") from None
        if self.opts.use_store:
            from rtqual.publish.store import WindowSink

            self.store = WindowSink(self.opts.store)
        if self.opts.pvs:
            from rtqual.monitor.pvs import PvServer

            self.pvs = PvServer(self.opts.pvs, identity["cpus"], self.opts.require, work, start_unix_s)
            self.pvs.start()
            self.pvs.publish_capture(None, 0, "none yet" if self.opts.capture_ns else "capture off (--capture)")
        if self.opts.on_spike is not None:
            from rtqual.monitor.actions import Actions

            self.actions = Actions(self.opts.on_spike)
            self.metrics.actions = self.actions.counts

    def windows(self, windows: list[dict]) -> None:
        """A closed window (every CPU) to every output; a store that cannot be reached is said once."""
        if not windows:
            return
        self.metrics.add_windows(windows)
        for w in windows:
            print(json.dumps(public(w)) if self.opts.json else window_line(w), flush=True)
            if self.store is not None:
                self.store.put(stored(w))  # with its histogram in coarse bins (history --report)
        if self.store is not None and self.store.warning and not self.store_warned:
            print(f"rtqual: warning: --store: {self.store.warning}", file=sys.stderr, flush=True)
            self.store_warned = True
        if self.pvs is not None:
            self.pvs.publish(merged(windows), windows)
        self.write_textfile()

    def write_textfile(self) -> None:
        """The exposition for node_exporter, replaced atomically (a failure is a warning: measuring goes on)."""
        if self.textfile is None:
            return
        from rtqual.publish.metrics import write_textfile

        try:
            write_textfile(self.metrics, self.textfile)
        except OSError as e:
            print(f"rtqual: warning: --textfile {self.textfile}: {e.strerror or e}", file=sys.stderr, flush=True)

    def spikes(self, taken: list[dict], run_as: str) -> None:
        """Each traced spike analysed (answers.evidence.spikes): a line (or JSON line), its culprits in /metrics."""
        from rtqual.answers.evidence import spikes

        for w in sorted(taken, key=lambda w: w["wake_ns"]):
            rec = spike(w)
            if "cause" in rec:
                self.capture(rec, run_as)
                continue
            print(json.dumps({"type": "spike", **rec}) if self.opts.json else spikes.spike_line(rec), flush=True)
            if self.metrics is not None:
                self.metrics.add_spike(run_as, rec)

    def capture(self, rec: dict, run_as: str) -> None:
        """A captured spike (--capture): a line (or JSON line), the store's spikes table, /metrics (count, last
        cause), the PVs, and the --on-spike action."""
        from rtqual.answers.evidence import spikes

        words = spikes.cause_words(rec["cause"])
        if self.opts.json:
            print(json.dumps({"type": "capture", "probe": run_as, **rec}), flush=True)
        else:
            print(clean(f"captured {spikes.spike_line(rec)}; cause: {words}"), flush=True)  # comm: any bytes
        if self.metrics is not None:
            self.metrics.add_spike(run_as, rec)
            self.metrics.add_capture(run_as, rec)
        if self.store is not None:
            self.store.put_spike(spike_row(self.identity, run_as, rec))
        if self.pvs is not None:
            self.pvs.publish_capture(rec, self.metrics.captures_total() if self.metrics else 0, words)
        if self.actions is not None:
            self.actions.fire({"probe": run_as, "host": self.identity.get("host"), **rec})
        self.write_textfile()

    def over_bound(self, count: int) -> None:
        """Spikes over --capture past the hour's bound: in /metrics, and said once an hour on stderr."""
        if self.metrics is not None:
            self.metrics.set_captures_over_bound(count)
        now = time.monotonic()
        if self.over_bound_said < 0 or now - self.over_bound_said >= 3600:
            self.over_bound_said = now
            print(
                f"rtqual: --capture: {self.opts.capture_per_hour} spikes captured in the last hour "
                f"(--capture-per-hour): further spikes are counted, not captured ({count} so far)",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        """At exit: the last textfile, the store's buffer written (or said lost), the PV server stopped."""
        if self.metrics is not None:
            self.write_textfile()
        if self.store is not None:
            left = self.store.close(STORE_FLUSH_S)  # flush, then stop its writer thread
            if left or self.store.dropped:
                print(
                    f"rtqual: warning: --store: {left} window(s) not written, {self.store.dropped} dropped "
                    f"({self.store.reason()})",
                    file=sys.stderr,
                )
        if self.pvs is not None:
            self.pvs.stop()
        if self.actions is not None:
            counts = self.actions.close(timeout_s=self.opts.on_spike.timeout_s)
            print(
                f"rtqual: --on-spike: {', '.join(f'{n} {k}' for k, n in counts.items())}",
                file=sys.stderr,
                flush=True,
            )


def spike_row(identity: dict, run_as: str, rec: dict) -> dict:
    """A captured spike as the store's spikes table keeps it (rtqual.publish.store.SPIKE_KEYS)."""
    c = rec["cause"]
    return {
        "host": identity.get("host"),
        "probe": run_as,
        "cpu": rec["cpu"],
        "time_unix_s": rec.get("time_unix_s") or time.time(),  # a probe without real_ns: when it was captured
        "latency_ns": rec["latency_ns"],
        "kind": c.get("kind"),
        "comm": c.get("comm"),
        "pid": c.get("pid"),
        "policy": c.get("policy"),
        "priority": c.get("priority"),
        "cause_cpu": c.get("cpu"),
        "evidence": json.dumps(rec.get("evidence") or {}),
    }

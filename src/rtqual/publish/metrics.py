"""Prometheus exposition of the monitor's windows (prometheus-client): /metrics on a loopback port
and the same text for node_exporter's textfile collector (docs/monitoring.md).

Everything is updated once per closed window, under one lock: a scrape between two windows sees the
sum of all closed windows, so Prometheus's histogram of one window equals rtqual's. Buckets are
log-spaced, 24 per decade from 1 µs to 1 s (BUCKETS_S): neighbours differ by a factor of
10^(1/24) = 1.1007, so histogram_quantile, which interpolates inside the bucket holding the
quantile, is within 10.07 % of the true value (both lie in the same bucket).
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Iterator
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.results.hist import Histogram, highest_equivalent
from rtqual.util import write_text_atomic

PER_DECADE = 24
BUCKETS_S = tuple(round(1e-6 * 10 ** (k / PER_DECADE), 12) for k in range(6 * PER_DECADE + 1))  # 1 µs .. 1 s
BUCKETS_NS = tuple(round(b * 1e9) for b in BUCKETS_S)
BUCKET_ERROR = 10 ** (1 / PER_DECADE) - 1  # 0.1007: histogram_quantile's worst relative error
TEXTFILE_NAME = "rtqual.prom"


def bucket_of(value_ns: int) -> int:
    """Index of the first bucket whose upper bound holds value_ns (len(BUCKETS_NS): +Inf), by bisection."""
    lo, hi = 0, len(BUCKETS_NS)
    while lo < hi:
        mid = (lo + hi) // 2
        if BUCKETS_NS[mid] >= value_ns:
            hi = mid
        else:
            lo = mid + 1
    return lo


class Series:
    """One (cpu, probe) series: cumulative bucket counts (+Inf last), sum, counters, the last window's max."""

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS_NS) + 1)
        self.sum_s = 0.0
        self.samples = self.overruns = self.over_threshold = 0
        self.window_max_s: float | None = None

    def add(self, window: dict, hist: Histogram) -> None:
        """Add one closed window (its histogram by each HDR bucket's highest value, capped at the max:
        rtqual's conservative rule, within 0.1 %)."""
        top = window["max_ns"] or 0
        for index, n in hist.counts.items():
            self.buckets[bucket_of(min(highest_equivalent(index), top))] += n
        self.sum_s += hist.sum_ns / 1e9
        self.samples += window["samples"]
        self.overruns += window["overruns"]
        self.over_threshold += window["over_threshold"]
        if window["max_ns"] is not None:
            self.window_max_s = window["max_ns"] / 1e9


class Metrics:
    """The monitor's metric state and its prometheus-client collector (registered in its own registry)."""

    def __init__(self, host_info: dict[str, str]) -> None:
        from prometheus_client import CollectorRegistry

        self.host_info = host_info
        self.series: dict[tuple[str, str], Series] = {}
        self.culprit_s: dict[tuple[str, str, str, str], float] = {}  # (cpu, probe, kind, name) -> seconds held
        self.captures: dict[tuple[str, str], int] = {}  # (cpu, probe) -> spikes captured (monitor --capture)
        self.captures_over_bound = 0  # spikes over --capture past the hour's bound: counted, not captured
        self.last_capture: dict | None = None  # the last captured spike's cause, latency and time
        self.capturing = False  # monitor --capture: its families are served from the start (zero counts)
        self.actions: dict[str, int] | None = None  # --on-spike outcomes (rtqual.monitor.actions.Actions.counts)
        self.lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def add_windows(self, windows: list[dict]) -> None:
        """One closed window of every CPU, all at once (a scrape sees none or all of them)."""
        with self.lock:
            for w in windows:
                key = (str(w["cpu"]), str(w["run_as"]))  # the name users give (ioc, not iocresp)
                self.series.setdefault(key, Series()).add(w, w["hist"])

    def add_spike(self, probe: str, spike: dict) -> None:
        """A traced spike (monitor --trace): each culprit's time on the CPU, summed per kind and name."""
        with self.lock:
            for c in spike.get("culprits") or []:
                key = (str(spike["cpu"]), probe, str(c.get("kind")), str(c.get("name")))
                self.culprit_s[key] = self.culprit_s.get(key, 0.0) + int(c.get("duration_ns") or 0) / 1e9

    def add_capture(self, probe: str, spike: dict) -> None:
        """A captured spike (monitor --capture): counted per CPU, and its cause kept as the last one."""
        with self.lock:
            key = (str(spike["cpu"]), probe)
            self.captures[key] = self.captures.get(key, 0) + 1
            self.last_capture = {"probe": probe, **spike}

    def captures_total(self) -> int:
        with self.lock:
            return sum(self.captures.values())

    def set_captures_over_bound(self, count: int) -> None:
        with self.lock:
            self.captures_over_bound = count

    def _capture_families(self) -> Iterator:
        """The families of --capture: captures, those past the hour's bound, the last cause, the --on-spike actions."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        from prometheus_client.metrics_core import InfoMetricFamily

        caught = CounterMetricFamily(
            "rtqual_spike_captures", "spikes captured (monitor --capture)", labels=["cpu", "probe"]
        )
        over = CounterMetricFamily(
            "rtqual_spike_captures_over_bound", "spikes over --capture not captured: past --capture-per-hour"
        )
        cause_keys = ["probe", "cpu", "kind", "comm", "pid", "policy", "priority"]
        cause = InfoMetricFamily("rtqual_spike_last_cause", "what held the CPU in the last captured spike")
        when = GaugeMetricFamily("rtqual_spike_last_capture_timestamp_seconds", "when the last captured spike woke")
        lat = GaugeMetricFamily("rtqual_spike_last_capture_latency_seconds", "latency of the last captured spike")
        acted = CounterMetricFamily("rtqual_spike_actions", "--on-spike actions by outcome", labels=["outcome"])
        with self.lock:
            for key, n in sorted(self.captures.items()):
                caught.add_metric(list(key), n)
            over.add_metric([], self.captures_over_bound)
            last = self.last_capture
            if last is not None:
                c = last["cause"]
                values = {"probe": last["probe"], **{k: c.get(k) for k in cause_keys[1:]}}
                cause.add_metric([], {k: "" if v is None else str(v) for k, v in values.items()})
                if last.get("time_unix_s") is not None:
                    when.add_metric([], last["time_unix_s"])
                lat.add_metric([], last["latency_ns"] / 1e9)
            for outcome, n in sorted((self.actions or {}).items()):
                acted.add_metric([outcome], n)
        yield from (caught, over, cause, when, lat)
        if self.actions is not None:
            yield acted

    def collect(self) -> Iterator:
        """prometheus-client's collector hook: the metric families from the current state."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        from prometheus_client.metrics_core import InfoMetricFamily

        labels = ["cpu", "probe"]
        lat = HistogramMetricFamily(
            "rtqual_latency_seconds", "latency of each sample (rtqual monitor, closed windows)", labels=labels
        )
        wmax = GaugeMetricFamily(
            "rtqual_latency_window_max_seconds", "maximum latency of the last window", labels=labels
        )
        samples = CounterMetricFamily("rtqual_samples", "samples measured", labels=labels)
        overruns = CounterMetricFamily("rtqual_overruns", "periods missed (overruns)", labels=labels)
        over = CounterMetricFamily("rtqual_over_threshold", "samples above the probe's threshold", labels=labels)
        with self.lock:
            for key, s in sorted(self.series.items()):
                cum, rows = 0, []
                for bound, n in zip([*(f"{b:.12g}" for b in BUCKETS_S), "+Inf"], s.buckets):
                    cum += n
                    rows.append((bound, cum))
                lat.add_metric(list(key), rows, s.sum_s)
                if s.window_max_s is not None:
                    wmax.add_metric(list(key), s.window_max_s)
                samples.add_metric(list(key), s.samples)
                overruns.add_metric(list(key), s.overruns)
                over.add_metric(list(key), s.over_threshold)
        held = CounterMetricFamily(
            "rtqual_spike_culprit_seconds",
            "time traced spikes were held by each culprit (monitor --trace; kind task, irq, softirq, unaccounted)",
            labels=[*labels, "kind", "name"],
        )
        with self.lock:
            for ckey, seconds in sorted(self.culprit_s.items()):
                held.add_metric(list(ckey), seconds)
        info = InfoMetricFamily("rtqual_host", "the monitored host (value 1)")
        info.add_metric([], self.host_info)
        yield from (lat, wmax, samples, overruns, over, held, info)
        if self.capturing or self.captures:
            yield from self._capture_families()

    def text(self) -> str:
        """The exposition text (Prometheus text format 0.0.4)."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()


HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")  # one label of a host name (RFC 1123)


def check_listen(listen: str) -> tuple[str, int]:
    """--listen HOST:PORT as (host, port): the host an IPv4 address, an IPv6 address in brackets ([::1]) or a
    host name (dot-separated labels of 1..63 letters, digits and inner dashes, 253 characters in all), the port
    1..65535. Anything else is one RtqError line (the value shown with escapes), before any socket is made."""
    shown = listen.encode("unicode_escape").decode("ascii")
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise RtqError(f"--listen {shown}: give HOST:PORT, e.g. 127.0.0.1:9841")
    if host.startswith("[") and host.endswith("]"):
        try:
            return str(ipaddress.IPv6Address(host[1:-1])), int(port)
        except ValueError:
            raise RtqError(f"--listen {shown}: {host} is not an IPv6 address") from None
    try:
        return str(ipaddress.IPv4Address(host)), int(port)
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if len(host) > 253 or not all(HOST_LABEL.fullmatch(label) for label in labels):
        raise RtqError(
            f"--listen {shown}: not a host name or address (dot-separated labels of 1 to 63 letters, digits and "
            "inner dashes; an IPv6 address in brackets)"
        )
    return host, int(port)


def serve(metrics: Metrics, listen: str) -> object:
    """Serve /metrics on HOST:PORT (checked by check_listen) in a daemon thread; OSError (e.g. the port in use)
    goes to the caller."""
    from prometheus_client import start_http_server

    host, port = check_listen(listen)
    return start_http_server(port, addr=host, registry=metrics.registry)


def write_textfile(metrics: Metrics, folder: Path) -> Path:
    """DIR/rtqual.prom for node_exporter's textfile collector: written beside it, then renamed (atomic)."""
    path = folder / TEXTFILE_NAME
    write_text_atomic(path, metrics.text(), sync=False)  # a temp file no symlink can stand for, then renamed
    return path

"""The monitor's pure parts: windows from progress + hist_delta records, Prometheus buckets and their bound."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rtqual.answers.requirements import gather, upper_limits_ns
from rtqual.monitor import pvs
from rtqual.publish import metrics
from rtqual.results.hist import Histogram, highest_equivalent, index_of
from rtqual.results.window import Windows, merged, public

S = 1_000_000_000
IDENTITY = {"host": "h", "probe": "timer", "run_as": "timer", "kernel": "6.1", "preempt": "PREEMPT_RT"}


def records(seconds: list[list[int]], cpu: int = 0, over_ns: int = 100_000):
    """A stream: header, then per second a progress record and its hist_delta of those samples."""
    yield {"type": "header", "start_real_ns": 1_700_000_000 * S, "params": {"threshold_ns": over_ns}}
    over = 0
    for k, samples in enumerate(seconds, start=1):
        over += sum(1 for v in samples if v > over_ns)
        counts: dict[int, int] = {}
        for v in samples:
            counts[index_of(v)] = counts.get(index_of(v), 0) + 1
        row = {"cpu": cpu, "window_max_ns": max(samples, default=0), "overruns": k, "over_threshold": over}
        yield {"type": "progress", "elapsed_ns": k * S, "cpus": [row]}
        pairs = [[i, n] for i, n in sorted(counts.items())]
        yield {"type": "hist_delta", "cpu": cpu, "elapsed_ns": k * S, "counts": pairs, "count": len(samples)}
    yield {"type": "hist", "cpu": cpu}


def feed_all(w: Windows, recs) -> list[dict]:
    out = []
    for r in recs:
        out += w.feed(r)
    return out


def test_windows_close_on_the_grid_and_match_rtqual_percentiles():
    seconds = [[1000 * (s + 1) + j for j in range(400)] + ([250_000] if s == 4 else []) for s in range(7)]
    out = feed_all(Windows(3 * S, IDENTITY, slack_ns=S // 2), records(seconds))
    assert [w["duration_s"] for w in out] == [3, 3, 1]  # the last window: what the stream had left
    for w, part in zip(out, (seconds[0:3], seconds[3:6], seconds[6:])):
        h = Histogram()
        for v in (v for sec in part for v in sec):
            h.record(v)
        assert w["samples"] == h.count
        assert w["max_ns"] == h.max_ns  # exact, from progress.window_max_ns
        assert w["p50_ns"] == h.percentile_ns(500_000)
        assert w["p99_ns"] == (h.percentile_ns(990_000) if h.count >= 1000 else None)  # 10/(1-p) samples
        assert w["p9999_ns"] is None  # a window of a few hundred samples cannot carry p99.99
        assert h.min_ns <= w["min_ns"] <= highest_equivalent(index_of(h.min_ns))
    assert [w["over_threshold"] for w in out] == [0, 1, 0]
    assert [w["overruns"] for w in out] == [3, 3, 1]
    assert out[1]["start_unix_s"] == 1_700_000_003
    assert set(public(out[0])) == {
        *IDENTITY,
        "cpu",
        "start_unix_s",
        "duration_s",
        "samples",
        "min_ns",
        "mean_ns",
        "p50_ns",
        "p99_ns",
        "p9999_ns",
        "max_ns",
        "over_threshold",
        "overruns",
        "threshold_ns",
    }


def test_the_first_window_closes_early_then_the_grid_goes_on():
    """A monitor's first window is short (it says something within seconds); the next ones keep the grid."""
    w = Windows(4 * S, IDENTITY, slack_ns=S // 2)
    w.first_ns = 1 * S
    out = feed_all(w, records([[1000] * 10] * 9))
    assert [x["duration_s"] for x in out] == [1, 3, 4, 1]
    assert out[1]["start_unix_s"] == 1_700_000_001


def test_an_empty_window_has_no_statistics_and_the_end_closes_nothing_twice():
    w = Windows(2 * S, IDENTITY)
    out = feed_all(w, records([[], []]))
    assert len(out) == 1 and out[0]["samples"] == 0 and out[0]["p99_ns"] is None and out[0]["max_ns"] is None
    assert w.feed({"type": "end"}) == []


def test_merged_window_over_cpus():
    a = feed_all(Windows(S, IDENTITY), records([[1000, 2000]], cpu=0))
    b = feed_all(Windows(S, IDENTITY), records([[5000, 9000]], cpu=1))
    m = merged(a + b)
    assert m["samples"] == 4 and m["max_ns"] == 9000 and m["min_ns"] == 1000


@settings(max_examples=200, deadline=None)
@given(st.integers(1000, 10**9 - 1))
def test_every_value_has_a_bucket_within_the_documented_ratio(value_ns):
    k = metrics.bucket_of(value_ns)
    assert metrics.BUCKETS_NS[k] >= value_ns
    assert k == 0 or metrics.BUCKETS_NS[k - 1] < value_ns
    assert (
        k == 0 or metrics.BUCKETS_NS[k] / metrics.BUCKETS_NS[k - 1] <= 1 + metrics.BUCKET_ERROR + 1e-3
    )  # bounds rounded to ns


def test_buckets_span_1us_to_1s_log_spaced():
    assert metrics.BUCKETS_S[0] == 1e-6 and math.isclose(metrics.BUCKETS_S[-1], 1.0)
    assert metrics.BUCKET_ERROR < 0.101


def test_exposition_names_units_and_labels():
    out = feed_all(Windows(S, IDENTITY), records([[20_000] * 10 + [300_000]]))
    m = metrics.Metrics({"host": "h", "kernel": "6.1", "preempt": "PREEMPT_RT"})
    m.add_windows(out)
    text = m.text()
    assert 'rtqual_latency_seconds_count{cpu="0",probe="timer"} 11.0' in text
    assert 'rtqual_latency_window_max_seconds{cpu="0",probe="timer"} 0.0003' in text
    assert 'rtqual_samples_total{cpu="0",probe="timer"} 11.0' in text
    assert 'rtqual_over_threshold_total{cpu="0",probe="timer"} 1.0' in text
    assert "rtqual_overruns_total" in text
    assert 'rtqual_host_info{host="h",kernel="6.1",preempt="PREEMPT_RT"} 1.0' in text


def test_pv_values_in_microseconds():
    out = feed_all(Windows(S, IDENTITY), records([[20_000, 40_000]]))
    v = pvs.values("P", merged(out), out, heartbeat=3)
    assert v["P:LAT_MAX"] == 40.0 and v["P:CPU0:LAT_MAX"] == 40.0 and v["P:SAMPLES"] == 2 and v["P:HEARTBEAT"] == 3
    db = pvs.database("P", [0, 1], upper_limits_ns(gather(["p99 <= 1ms"], None)), 0.0)
    assert 'record(ai, "P:CPU1:LAT_P99")' in db and 'field(HIHI, "1000")' in db


def test_a_stored_window_keeps_its_histogram_in_coarse_bins():
    """The store's `hist`: every sample counted once, in the 1/10-decade bin of its value, in bin order; read
    back equal; another writer's malformed pair skipped."""
    from rtqual.results.window import COARSE_PER_DECADE, coarse_bins, coarse_text, parse_coarse, stored

    values = [999, 1000, 1_300, 9_999, 10_000, 250_000]
    w = feed_all(Windows(10 * S, IDENTITY), records([values]))[0]
    bins = coarse_bins(w["hist"])
    assert sum(bins.values()) == len(values)
    for v in values:  # each value's bin holds it (HDR buckets are within 0.1 %)
        k = math.floor(COARSE_PER_DECADE * math.log10(v * 1.001))
        assert bins.get(k) or bins.get(k - 1)
    row = stored(w)
    assert "hist" in row and not isinstance(row["hist"], Histogram) and row["samples"] == len(values)
    assert parse_coarse(row["hist"]) == bins and coarse_text(bins) == row["hist"]
    assert [int(p.split(":")[0]) for p in row["hist"].split()] == sorted(bins)
    assert parse_coarse("30:2 x:1 31:-4 32:5 -3:1 999999:7") == {30: 2, 32: 5}  # a foreign bin: not drawn

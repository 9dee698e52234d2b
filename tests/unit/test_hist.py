"""The histogram: layout, error bound, merge, out of range, percentile definition, HDR interchange."""

from hypothesis import given, settings
from hypothesis import strategies as st

from rtqual.results.hist import (
    COUNTS_LEN,
    HIGHEST_NS,
    PERCENTILES_PPM,
    Histogram,
    highest_equivalent,
    index_of,
    lowest_equivalent,
    rank_of,
)

values = st.integers(min_value=0, max_value=HIGHEST_NS)


def exact_percentile(sorted_values, ppm):
    """Reference: the exact nearest-rank order statistic."""
    return sorted_values[rank_of(ppm, len(sorted_values)) - 1]


def test_exact_below_2048():
    for v in (0, 1, 2, 1023, 1024, 2047):
        assert index_of(v) == v
        assert lowest_equivalent(v) == highest_equivalent(v) == v


def test_bucket_boundaries():
    assert index_of(2048) == 2048 and index_of(2049) == 2048  # first doubling: width 2
    assert index_of(4095) == 3071 and index_of(4096) == 3072
    assert index_of(HIGHEST_NS) < COUNTS_LEN


@given(values)
def test_value_lies_in_its_bucket_within_error_bound(v):
    i = index_of(v)
    lo, hi = lowest_equivalent(i), highest_equivalent(i)
    assert lo <= v <= hi
    assert hi - lo <= max(lo, 1) / 1024  # <= 0.1 % relative
    assert index_of(lo) == index_of(hi) == i


def test_buckets_are_contiguous():
    for i in range(1024, COUNTS_LEN - 1):
        assert highest_equivalent(i) + 1 == lowest_equivalent(i + 1)


@settings(max_examples=300)
@given(st.lists(values, min_size=1, max_size=400), st.sampled_from(sorted(PERCENTILES_PPM.values()) + [1, 1_000_000]))
def test_percentile_conservative_and_bounded(vs, ppm):
    h = Histogram()
    for v in vs:
        h.record(v)
    exact = exact_percentile(sorted(vs), ppm)
    got = h.percentile_ns(ppm)
    assert exact <= got <= exact + exact / 1024
    assert got <= h.max_ns


@given(st.lists(values, max_size=200), st.lists(values, max_size=200))
def test_merge_equals_recording_both(a, b):
    ha, hb, both = Histogram(), Histogram(), Histogram()
    for v in a:
        ha.record(v)
        both.record(v)
    for v in b:
        hb.record(v)
        both.record(v)
    assert ha.merge(hb) == both


def test_exact_sums_and_stats():
    h = Histogram()
    for v in (10, 20, 30, 40):
        h.record(v)
    s = h.stats()
    assert (s["count"], s["min_ns"], s["max_ns"], s["mean_ns"]) == (4, 10, 40, 25)
    assert s["stddev_ns"] == 11  # population sd of 10,20,30,40 = 11.18
    assert s["p50_ns"] == 20 and s["p99_ns"] == 40


def test_out_of_range_counted_not_bucketed():
    h = Histogram()
    h.record(-1)
    h.record(HIGHEST_NS + 1)
    h.record(5)
    assert h.out_of_range == 2 and h.count == 1 and h.max_ns == 5 and sum(h.counts.values()) == 1


def test_empty():
    assert Histogram().stats()["p99_ns"] == 0 and Histogram().stats()["count"] == 0


def test_record_roundtrip():
    h = Histogram()
    for v in (1, 5000, 123_456_789, HIGHEST_NS):
        h.record(v, 3)
    assert Histogram.from_record(h.to_record()) == h
    assert h.sumsq_ns2 > 2**64  # exact beyond 64 bits


@settings(max_examples=50)
@given(st.lists(values, min_size=1, max_size=300))
def test_hdr_encoding_read_by_hdrhistogram_py(vs):
    from hdrh.histogram import HdrHistogram

    h = Histogram()
    for v in vs:
        h.record(v)
    theirs = HdrHistogram.decode(h.encode_hdr())
    assert theirs.get_total_count() == h.count
    assert theirs.get_max_value() == highest_equivalent(index_of(h.max_ns))
    for ppm in PERCENTILES_PPM.values():
        # hdrh rounds the rank differently (FIELD-NOTES), but must land on one of our occupied buckets
        assert index_of(theirs.get_value_at_percentile(ppm / 1e4)) in h.counts
    back = Histogram.decode_hdr(h.encode_hdr())
    assert back.counts == h.counts


def test_hdrhistogram_py_encoding_read_by_us():
    from hdrh.histogram import HdrHistogram

    theirs = HdrHistogram(1, HIGHEST_NS, 3)
    for v in (3, 3, 70_000, 9_000_000):
        theirs.record_value(v)
    ours = Histogram.decode_hdr(theirs.encode().decode())
    assert ours.count == 4 and ours.counts[index_of(3)] == 2 and index_of(9_000_000) in ours.counts

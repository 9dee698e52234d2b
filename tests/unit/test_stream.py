"""The stream reader never crashes on what a dying probe leaves behind."""

import json

from hypothesis import given
from hypothesis import strategies as st

from rtqual.results.stream import read_stream

GOOD = [
    {"type": "header", "schema": 1, "probe": "timer", "params": {}},
    {
        "type": "progress",
        "elapsed_ns": 1,
        "cpus": [{"cpu": 0, "count": 5, "min_ns": 1, "max_ns": 9, "overruns": 0, "over_threshold": 1}],
    },
    {"type": "event", "kind": "threshold", "cpu": 0, "latency_ns": 9, "mono_ns": 1, "real_ns": 2},
    {"type": "event", "kind": "warning", "message": 'a "quoted" warning'},
    {"type": "event", "kind": "suppressed", "count": 7},
    {"type": "hist", "cpu": 0, "count": 1, "min_ns": 1, "max_ns": 1, "sum_ns": 1, "sumsq_ns2": 1, "counts": [[1, 1]]},
    {"type": "summary", "cpus": []},
    {"type": "end", "status": 0, "reason": "completed"},
]
LINES = [json.dumps(r) + "\n" for r in GOOD]


def test_complete_stream():
    s = read_stream(LINES)
    assert s.complete and not s.problems
    assert s.header["probe"] == "timer" and 0 in s.hists and s.suppressed_events == 7
    assert s.warnings == ['a "quoted" warning'] and len(s.threshold_events) == 1


def test_truncated_last_line():
    text = "".join(LINES[:3]) + LINES[3][:20]
    s = read_stream(text.splitlines(keepends=True))
    assert not s.complete and s.header and s.last_progress
    assert s.problems == ["line 4: truncated JSON record ignored"]


def test_corrupt_and_unknown_lines():
    s = read_stream([LINES[0], "garbage\n", '{"type":"nope"}\n', "[1,2]\n", "\n", LINES[-1]])
    assert s.complete and len(s.problems) == 3


@given(st.integers(min_value=0, max_value=len("".join(LINES))))
def test_any_cut_point_is_survivable(cut):
    text = "".join(LINES)[:cut]
    s = read_stream(text.splitlines(keepends=True))
    assert len(s.problems) <= 1
    assert s.complete == (cut >= len("".join(LINES)) - 1)


@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data):
    read_stream(data.decode("utf-8", "replace").splitlines(keepends=True))


def test_day_long_stream_keeps_bounded_lists_and_exact_counts():
    from rtqual.results.stream import EVENTS_KEPT, MESSAGES_KEPT

    event, warning = LINES[2], LINES[3]
    s = read_stream([LINES[0], *[event] * (EVENTS_KEPT + 500), *[warning] * (MESSAGES_KEPT + 5), *["junk\n"] * 7])
    assert len(s.threshold_events) == EVENTS_KEPT and s.threshold_events_total == EVENTS_KEPT + 500
    assert len(s.warnings) == MESSAGES_KEPT and s.warnings_total == MESSAGES_KEPT + 5
    assert s.problems_total == 7 and s.messages()[-1].startswith("5 more warnings")

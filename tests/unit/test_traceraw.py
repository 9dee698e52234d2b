"""The binary trace page parser (rtqual.measure.host.traceraw) on pages built here as the kernel lays them out:
its lines read back by the text parser the spike analysis uses (rtqual.answers.evidence.spikes) say the same."""

from __future__ import annotations

import struct

from rtqual.answers.evidence import spikes
from rtqual.measure.host import traceraw

HEADER_PAGE = """\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
"""
COMMON = """\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
"""
SWITCH = f"""name: sched_switch
ID: 372
format:
{COMMON}
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: "prev_comm=%s ..."
"""
SOFTIRQ = f"""name: softirq_entry
ID: 223
format:
{COMMON}
\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;

print fmt: "vec=%u [action=%s]", REC->vec, __print_symbolic(REC->vec, {{ 0, "HI" }}, {{ 1, "TIMER" }})
"""
IRQ = f"""name: irq_handler_entry
ID: 225
format:
{COMMON}
\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;

print fmt: "irq=%d name=%s", REC->irq, __get_str(name)
"""
BASE_NS = 9_438_663_546_000


def fmt() -> traceraw.PageFormat:
    f = traceraw.parse_header_page(HEADER_PAGE)
    for text, system in ((SWITCH, "sched"), (SOFTIRQ, "irq"), (IRQ, "irq")):
        f.add(traceraw.parse_format(text, system))
    f.common_pid = traceraw.Field("common_pid", 4, 4, True)
    return f


def event(delta: int, payload: bytes, long_form: bool = False) -> bytes:
    """One ring-buffer event: its 32-bit header and data (padded to 4 bytes)."""
    payload += b"\0" * (-len(payload) % 4)
    if long_form:  # type_len 0: the length (data + its own 4 bytes) in the next word
        return struct.pack("<II", delta << 5, len(payload) + 4) + payload
    return struct.pack("<I", (delta << 5) | (len(payload) // 4)) + payload


def switch(pid: int, prev: str, nxt: str, next_pid: int, state: int = 1) -> bytes:
    return struct.pack("<HBBi16siiq16sii", 372, 0, 0, pid, prev.encode(), pid, 120, state, nxt.encode(), next_pid, 19)


def page(events: list[bytes], lost: int | None = None) -> bytes:
    data = b"".join(events)
    commit = len(data)
    tail = b""
    if lost is not None:
        commit |= traceraw.MISSED_EVENTS | traceraw.MISSED_STORED
        tail = struct.pack("<Q", lost)
    body = struct.pack("<QQ", BASE_NS, commit) + data + tail
    return body + b"\0" * (4096 - len(body))


def test_a_page_reads_back_as_the_lines_trace_pipe_prints() -> None:
    f = fmt()
    name = b"eth0\0\0\0\0"
    irq = struct.pack("<HBBiiI", 225, 0, 0, 42, 24, (len(name) << 16) | 16) + name
    extend = struct.pack("<II", (1 << 5) | traceraw.TIME_EXTEND, 1)  # + 1 + (1 << 27) ns
    pad = struct.pack("<II", (3 << 5) | traceraw.PADDING, 12) + b"\0" * 8  # a discarded event: 4 + 12 bytes
    p = page(
        [
            event(0, irq),
            event(1000, struct.pack("<HBBiI", 223, 0, 0, 42, 1)),
            pad,
            extend,
            event(500, switch(42, "stall-task", "rtqual-probe", 77), long_form=True),
        ],
        lost=5,
    )
    span = traceraw.page_span(f, p)
    last = BASE_NS + 1000 + 1 + (1 << 27) + 500
    assert span == traceraw.Span(BASE_NS, last, 5, 3)
    assert traceraw.page_head(f, p)[::2] == (BASE_NS, 5)  # what the reader looks at: the header
    lines = traceraw.window_lines(f, [(span.first_ns, None, p)], 1, 0, last)
    assert lines[0] == "CPU:1 [LOST 5 EVENTS]"
    events, lost = spikes.parse(lines)
    assert lost == 5
    assert [(e.ts_ns, e.comm, e.pid, e.cpu, e.name) for e in events] == [
        (BASE_NS, "stall-task", 42, 1, "irq_handler_entry"),
        (BASE_NS + 1000, "stall-task", 42, 1, "softirq_entry"),
        (last, "stall-task", 42, 1, "sched_switch"),
    ]
    assert events[0].rest == "irq=24 name=eth0"
    assert events[1].rest == "vec=1 [action=TIMER]"
    assert events[2].rest == (
        "prev_comm=stall-task prev_pid=42 prev_prio=120 prev_state=S ==> "
        "next_comm=rtqual-probe next_pid=77 next_prio=19"
    )
    # a window cuts by time: only the softirq
    mid = traceraw.window_lines(f, [(span.first_ns, None, p)], 1, BASE_NS + 1, BASE_NS + 2000)
    assert [spikes.parse_line(x).name for x in mid if spikes.parse_line(x)] == ["softirq_entry"]


def test_an_empty_page_or_one_ending_in_padding_has_no_span() -> None:
    f = fmt()
    assert traceraw.page_span(f, page([])) is None
    ended = page([struct.pack("<I", traceraw.PADDING), event(5, switch(1, "a", "b", 2))])
    assert traceraw.page_span(f, ended) is None  # padding with delta 0: nothing after it


def test_the_preempted_state_and_several_bits_as_the_print_fmt_writes_them() -> None:
    assert traceraw._state(0) == "R"
    assert traceraw._state(256) == "R+"
    assert traceraw._state(2) == "D"
    assert traceraw._state(1 | 2) == "S|D"

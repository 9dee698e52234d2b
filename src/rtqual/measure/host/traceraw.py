"""The binary form of tracefs buffers (`per_cpu/cpuN/trace_pipe_raw`): pages parsed with the formats the kernel
gives in `events/header_page` and `events/<system>/<event>/format` (docs/trace.md).

A read of trace_pipe_raw hands over one ring-buffer page: a header (the time of its first event, the bytes used
and two flags saying events were lost before it, with their count stored after the data when there was room),
then events, each behind a 32-bit header (type_len: 5 bits, time_delta: 27 bits). type_len 1-28: data of
type_len * 4 bytes follows; 0: a 32-bit length (the data's plus its own 4) then the data; 29: padding (a
discarded event, or the end of the page when its delta is 0); 30: a time extend (delta | next word << 27); 31:
an absolute time stamp. An event's data begins with the common fields (common_type: the event's ID, common_pid),
then its own at the offsets of its format file.

The reader (rtqual.measure.host.trace) keeps pages as they are, reading only their header (page_head: the time
of the first event, lost events); the pages around a spike are decoded (page_events, the tasks named by the
sched_switch events before and in the window) and rendered as the lines trace_pipe would print (render), so
the analysis (rtqual.answers.evidence.spikes), the bundle's trace files and the recorded text fixtures share
one text format. Times are kept in ns (text trace_pipe prints µs).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

PADDING, TIME_EXTEND, TIME_STAMP = 29, 30, 31
MISSED_EVENTS, MISSED_STORED = 1 << 31, 1 << 30
_FIELD = re.compile(r"field:(?P<decl>[^;]+);\s*offset:(?P<off>\d+);\s*size:(?P<size>\d+);\s*signed:(?P<signed>\d)")
_SYMBOL = re.compile(r"\{\s*(-?\d+),\s*\"([^\"]*)\"\s*\}")
_INT = {1: "b", 2: "h", 4: "i", 8: "q"}
_STATE = "SDTtXZPI"  # sched_switch prev_state bits, as its format's print fmt names them


@dataclass(frozen=True)
class Field:
    """One field of an event's format: name, offset, size, signed, array (char[N]), data_loc (__data_loc)."""

    name: str
    offset: int
    size: int
    signed: bool
    array: bool = False
    data_loc: bool = False


@dataclass
class EventFormat:
    """An event's ID, system/name, its own fields and the symbol table of its print fmt ({value: name})."""

    id: int
    system: str
    name: str
    fields: dict[str, Field]
    symbols: dict[int, str] = field(default_factory=dict)


@dataclass
class PageFormat:
    """The page header's layout (from header_page) and the formats of the enabled events by ID."""

    ts_off: int
    commit_off: int
    commit_size: int
    data_off: int
    page_bytes: int
    events: dict[int, EventFormat] = field(default_factory=dict)
    common_pid: Field | None = None
    names: dict[int, list[tuple[Field, Field]]] = field(default_factory=dict)  # ID -> (comm, pid) pairs

    def add(self, ef: EventFormat) -> None:
        """Know an event's format; the sched events' (comm, pid) pairs the reader learns names from."""
        self.events[ef.id] = ef
        pairs = [("next_comm", "next_pid"), ("prev_comm", "prev_pid")]  # sched_switch: the task switched in
        # names every event after it; prev only for a task not seen switched in (running when tracing began)
        found = [
            (ef.fields[c], ef.fields[p])
            for c, p in pairs
            if c in ef.fields and ef.fields.get(p, ef.fields[c]).size == 4
        ]
        if ef.system == "sched" and found:
            self.names[ef.id] = found


def _fields(text: str) -> dict[str, Field]:
    """The fields of a format file (header_page or an event's), by name."""
    out = {}
    for m in _FIELD.finditer(text):
        decl = m["decl"].strip()
        name = decl.split()[-1]
        array = "[" in name
        name = name.split("[")[0]
        out[name] = Field(name, int(m["off"]), int(m["size"]), m["signed"] == "1", array, "__data_loc" in decl)
    return out


def parse_header_page(text: str) -> PageFormat:
    """The page layout from the text of events/header_page; ValueError when a field is missing."""
    f = _fields(text)
    try:
        ts, commit, data = f["timestamp"], f["commit"], f["data"]
    except KeyError as e:
        raise ValueError(f"header_page has no {e.args[0]} field") from None
    return PageFormat(ts.offset, commit.offset, commit.size, data.offset, data.offset + data.size)


def parse_format(text: str, system: str) -> EventFormat:
    """One event's format file: its ID, name, own fields (the common_ ones left out) and print fmt symbols."""
    name = re.search(r"^name:\s*(\S+)", text, re.M)
    ident = re.search(r"^ID:\s*(\d+)", text, re.M)
    if not name or not ident:
        raise ValueError("format without name or ID")
    fields = {n: f for n, f in _fields(text).items() if not n.startswith("common_")}
    fmt = text.split("print fmt:", 1)[-1]
    symbols = {int(v): s for v, s in _SYMBOL.findall(fmt)} if "__print_symbolic" in fmt else {}
    return EventFormat(int(ident[1]), system, name[1], fields, symbols)


def load(instance: Path, events: list[str]) -> PageFormat:
    """The page layout and the formats of `events` ("system/name") of a tracefs instance."""
    page = parse_header_page((instance / "events" / "header_page").read_text())
    for ev in events:
        text = (instance / "events" / ev / "format").read_text()
        page.add(parse_format(text, ev.split("/")[0]))
        page.common_pid = page.common_pid or _fields(text)["common_pid"]
    return page


def _int(data: bytes, base: int, f: Field) -> int:
    return struct.unpack_from("<" + (_INT[f.size] if f.signed else _INT[f.size].upper()), data, base + f.offset)[0]


def _value(data: bytes, base: int, end: int, f: Field) -> int | str:
    """A field's value: text for char arrays and __data_loc strings, an integer otherwise."""
    if f.data_loc:
        loc = _int(data, base, f)
        raw = data[base + (loc & 0xFFFF) : min(end, base + (loc & 0xFFFF) + (loc >> 16))]
        return raw.split(b"\0", 1)[0].decode(errors="replace")
    if f.array:
        return data[base + f.offset : base + f.offset + f.size].split(b"\0", 1)[0].decode(errors="replace")
    return _int(data, base, f) if f.size in _INT else 0


def page_head(fmt: PageFormat, page: bytes) -> tuple[int, int, int] | None:
    """From a page's header alone (the reader's per-page work): the time of its first event, the end of its
    data and the events lost before it (-1: some, not counted); None for a page without data."""
    if len(page) < fmt.data_off:
        return None
    ts = struct.unpack_from("<Q", page, fmt.ts_off)[0]
    commit = int.from_bytes(page[fmt.commit_off : fmt.commit_off + fmt.commit_size], "little")
    length = commit & ~(MISSED_EVENTS | MISSED_STORED) & 0xFFFFFFFF
    end = min(len(page), fmt.data_off + length)
    lost = 0
    if commit & MISSED_EVENTS:
        lost = -1
        if commit & MISSED_STORED and end + 8 <= len(page):
            lost = struct.unpack_from("<Q", page, end)[0]
    return (ts, end, lost) if end > fmt.data_off else None


def _walk(fmt: PageFormat, page: bytes) -> Iterator:
    """(time_ns, data offset, data end) of each event of a page, and first the lost-event count before it
    (-1: some, not counted)."""
    head = page_head(fmt, page)
    if head is None:
        yield 0
        return
    ts, end, lost = head
    yield lost
    words = memoryview(page)[: len(page) & ~3].cast("I")  # events are 4-byte aligned; native order (the host's)
    pos = fmt.data_off >> 2  # in words
    last = (end >> 2) - 1
    while pos <= last:
        word = words[pos]
        type_len, delta = word & 0x1F, word >> 5
        if type_len == PADDING:
            if delta == 0 or pos + 1 > last:
                return
            pos += 1 + (words[pos + 1] + 3 >> 2)
        elif type_len in (TIME_EXTEND, TIME_STAMP):
            if pos + 1 > last:
                return
            ts = (ts if type_len == TIME_EXTEND else 0) + (delta | words[pos + 1] << 27)
            pos += 2
        elif type_len == 0:
            if pos + 1 > last:
                return
            size = words[pos + 1] - 4
            yield ts + delta, (pos + 2) << 2, min(end, (pos + 2 << 2) + size)
            ts += delta
            pos += 2 + (size + 3 >> 2)
        else:
            ts += delta
            yield ts, (pos + 1) << 2, min(end, (pos + 1 + type_len) << 2)
            pos += 1 + type_len


@dataclass
class Span:
    """What the reader keeps of a page without decoding its events: first and last event time, events lost
    before it (-1: some), the number of events."""

    first_ns: int
    last_ns: int
    lost: int
    events: int


def page_span(fmt: PageFormat, page: bytes) -> Span | None:
    """The span of a page from all its event headers (None when it holds no event)."""
    it = _walk(fmt, page)
    lost = next(it)
    first = last = None
    n = 0
    for ts, _, _ in it:
        first = ts if first is None else first
        last, n = ts, n + 1
    return None if first is None or last is None else Span(first, last, lost, n)


def _learn(fmt: PageFormat, page: bytes, start: int, end: int, comms: dict[int, bytes]) -> bool:
    """pid -> command name from a sched_switch (the task switched in names every event after it; the one
    switched out only when not known yet); whether the event was one."""
    pairs = fmt.names.get(page[start] | page[start + 1] << 8) if end - start >= 2 else None
    if not pairs:
        return False
    for i, (c, p) in enumerate(pairs):  # comm: char[16]; pid: pid_t (4 bytes)
        pid = int.from_bytes(page[start + p.offset : start + p.offset + 4], "little", signed=True)
        if i == 0 or pid not in comms:
            comms[pid] = page[start + c.offset : start + c.offset + c.size]
    return True


def names_before(fmt: PageFormat, pages: list[bytes], start_ns: int) -> dict[int, bytes]:
    """The command names of the pages' sched_switch events up to start_ns, walking back from the newest page
    until one holds a switch (so the task on the CPU when a window opens is named, as trace_pipe names it)."""
    comms: dict[int, bytes] = {}
    for page in reversed(pages):
        found: dict[int, bytes] = {}
        it = _walk(fmt, page)
        next(it)
        seen = False
        for ts, start, end in it:
            if ts > start_ns:
                break
            seen = _learn(fmt, page, start, end, found) or seen
        comms = {**found, **comms} if comms else found
        if seen:
            break
    return comms


@dataclass(frozen=True)
class RawEvent:
    """One decoded event: time (ns), the task on the CPU (common_pid), system/name and its fields' values."""

    ts_ns: int
    pid: int
    system: str
    name: str
    values: dict[str, int | str]
    comm: str | None = None  # the task's name when the event was recorded, where known


def page_events(
    fmt: PageFormat, page: bytes, start_ns: int, end_ns: int, comms: dict[int, bytes] | None = None
) -> tuple[list[RawEvent], int]:
    """The events of a page from start_ns to end_ns (known formats only) and the events lost before the page;
    comms, when given, learns the names of the tasks switched in (a line's name is the one its task had when
    the line was recorded; render it before the next event is decoded, or give each RawEvent its name)."""
    it = _walk(fmt, page)
    lost = next(it)
    out = []
    for ts, start, end in it:
        if ts < start_ns or ts > end_ns or end - start < 8:
            continue
        ef = fmt.events.get(page[start] | page[start + 1] << 8)
        if ef is None:
            continue
        pid = _int(page, start, fmt.common_pid) if fmt.common_pid else -1
        vals = {n: _value(page, start, end, f) for n, f in ef.fields.items()}
        if ef.symbols and vals:  # __print_symbolic of the first field (softirq's vec)
            vals["_symbol"] = ef.symbols.get(int(next(iter(vals.values()))), "?")
        known = comms.get(pid) if comms is not None else None
        name = known.split(b"\0", 1)[0].decode(errors="replace") if known else None
        out.append(RawEvent(ts, pid, ef.system, ef.name, vals, name))
        if comms is not None:
            _learn(fmt, page, start, end, comms)
    return out, lost


def _state(v: int) -> str:
    """sched_switch prev_state as its print fmt writes it: R, or S/D/... joined by |, + when preempted."""
    bits = "|".join(c for i, c in enumerate(_STATE) if v & (1 << i))
    return (bits or "R") + ("+" if v & (1 << len(_STATE)) else "")


def _rest(ev: RawEvent) -> str:
    """The event's text after "name: ", as the kernel's print fmt gives it for the events the analysis reads;
    other events as name=value pairs."""
    v = ev.values
    if ev.name == "sched_switch":
        return (
            f"prev_comm={v['prev_comm']} prev_pid={v['prev_pid']} prev_prio={v['prev_prio']} "
            f"prev_state={_state(int(v['prev_state']))} ==> "
            f"next_comm={v['next_comm']} next_pid={v['next_pid']} next_prio={v['next_prio']}"
        )
    if ev.name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        return f"comm={v['comm']} pid={v['pid']} prio={v['prio']} target_cpu={int(v['target_cpu']):03d}"
    if ev.name == "irq_handler_entry":
        return f"irq={v['irq']} name={v['name']}"
    if ev.name == "irq_handler_exit":
        return f"irq={v['irq']} ret={'handled' if v['ret'] else 'unhandled'}"
    if ev.name in ("softirq_entry", "softirq_exit", "softirq_raise"):
        return f"vec={v['vec']} [action={v.get('_symbol', '?')}]"
    return " ".join(f"{k}={x}" for k, x in v.items() if not k.startswith("_"))


def render(ev: RawEvent, cpu: int) -> str:
    """One event as a trace_pipe line (time in ns): '<comm>-<pid> [CPU] ..... S.NNNNNNNNN: name: fields'."""
    comm = "<idle>" if ev.pid == 0 else ev.comm or _proc_comm(ev.pid) or "<...>"
    sec, ns = divmod(ev.ts_ns, 1_000_000_000)
    return f"{comm:>16}-{ev.pid:<7} [{cpu:03d}] ..... {sec}.{ns:09d}: {ev.name}: {_rest(ev)}"


def _proc_comm(pid: int) -> str | None:
    """A running task's command name (for a task no sched event of the kept pages named)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def window_lines(
    fmt: PageFormat, pages: list[tuple[int, int, bytes]], cpu: int, start_ns: int, end_ns: int
) -> list[str]:
    """The lines of a CPU's kept pages (first, last: the next page's first, or None for the newest; page)
    from start_ns to end_ns, each page's lost events (when it reaches into the window) as the kernel's
    "CPU:N [LOST N EVENTS]" line before its events (an uncounted loss as 1: at least one). A task is named
    as trace_pipe names it, by its newest name the kernel recorded: the one its last switch out in the
    window carried, else the one of its switch in (before or in the window), else its name now
    (/proc/PID/comm), else <...>."""
    inside = [i for i, (first, last, _) in enumerate(pages) if first <= end_ns and (last is None or last >= start_ns)]
    if not inside:
        return []
    comms = names_before(fmt, [p for _, _, p in pages[: inside[0] + 1]], start_ns)
    decoded = []
    for i in inside:
        events, lost = page_events(fmt, pages[i][2], start_ns, end_ns, comms)
        decoded.append((events, lost))
    out_names: dict[int, str] = {}  # pid -> the name it had when last switched out
    for events, _ in decoded:
        for ev in events:
            if ev.name == "sched_switch":
                out_names[int(ev.values["prev_pid"])] = str(ev.values["prev_comm"])
    names: dict[int, str | None] = {}  # as trace_pipe names a task: by its newest name

    def name(ev: RawEvent) -> str | None:
        if ev.pid not in names:
            names[ev.pid] = out_names.get(ev.pid) or ev.comm or _proc_comm(ev.pid)
        return names[ev.pid]

    out = []
    for events, lost in decoded:
        if lost:
            out.append(f"CPU:{cpu} [LOST {lost if lost > 0 else 1} EVENTS]")
        out += [render(replace(ev, comm=name(ev)), cpu) for ev in events]
    return out

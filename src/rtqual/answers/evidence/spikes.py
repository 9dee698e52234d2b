"""Spike root cause, as pure functions of recorded tracefs text (docs/trace.md).

A spike is a threshold event of a probe: on CPU `cpu` a wake-up due at `deadline_ns` came at `wake_ns`
(both CLOCK_MONOTONIC; the trace runs on the "mono" trace clock, so its times are the probe's). The
trace lines of that CPU from the deadline minus a margin to the wake-up say what held the CPU in the gap:

- the task on the CPU (from each line's `comm-pid` and `sched_switch`), minus the time of the
- interrupts (`irq_handler_entry/exit`, the `irq_vectors` `X_entry/X_exit` pairs) and softirqs
  (`softirq_entry/exit`) nested on top of it; the innermost context gets the time.
- "unaccounted": time the CPU was idle (pid 0) although a wake-up was due, or not covered by any event:
  on a VM the hypervisor did not run this vCPU, on hardware an SMI or firmware held the CPU. Idle time
  after a wake-up event (the idle task switching to the woken task) is the idle task's, not unaccounted.

Every nanosecond of the gap goes to exactly one culprit, so the durations add up to the latency. Text
timestamps have microsecond resolution (the kernel prints mono-clock times as seconds.microseconds).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

SOURCE = "sched/irq events"  # where the culprits come from
TIMERLAT_SOURCE = "timerlat + sched/irq events"  # the stages from the timerlat tracer, the culprits from events
KINDS = ("task", "irq", "softirq", "unaccounted")
UNACCOUNTED_IDLE = "CPU idle while the wake-up was due (hypervisor or firmware)"
UNACCOUNTED_NONE = "no trace event in the gap (hypervisor or firmware)"
UNACCOUNTED_LOST = "trace events lost here: not known"
IDLE_EXIT = "idle (leaving idle for the woken task)"

_LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:(?P<flags>\S+)\s+)?"
    r"(?P<sec>\d+)\.(?P<frac>\d+):\s+(?P<event>\w+):\s?(?P<rest>.*)$"
)
_SWITCH = re.compile(
    r"prev_comm=(?P<pc>.*) prev_pid=(?P<pp>-?\d+) prev_prio=(?P<ppr>-?\d+) prev_state=\S+ ==> "
    r"next_comm=(?P<nc>.*) next_pid=(?P<np>-?\d+) next_prio=(?P<npr>-?\d+)"
)
_WAKING = re.compile(r"comm=(?P<c>.*) pid=(?P<p>-?\d+) prio=(?P<pr>-?\d+)")
_IRQ = re.compile(r"irq=(?P<irq>\d+)(?: name=(?P<name>.*))?")
_SOFTIRQ = re.compile(r"vec=(?P<vec>\d+) \[action=(?P<action>\w+)\]")
_LOST = re.compile(r"\[LOST (\d+) EVENTS\]")


@dataclass(frozen=True)
class Event:
    """One parsed trace line: time (ns), the task on the CPU (comm, pid), the event name and its text."""

    ts_ns: int
    comm: str
    pid: int
    cpu: int
    name: str
    rest: str


@dataclass
class Culprit:
    """What held the CPU for part of a gap: kind (task, irq, softirq, unaccounted), name, and for a task
    its pid, scheduling policy and priority."""

    kind: str
    name: str
    pid: int | None = None
    policy: str | None = None
    priority: int | None = None
    duration_ns: int = 0

    def to_record(self) -> dict:
        """The culprit as stored in a spike's record (its fields by name)."""
        return asdict(self)


@dataclass
class _Timeline:
    """The attribution state while walking the events of one window."""

    start_ns: int
    end_ns: int
    task: tuple[str, int] | None = None  # (comm, pid) on the CPU
    stack: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) of nested irq/softirq contexts
    prio: dict[int, int] = field(default_factory=dict)  # pid -> kernel prio seen in sched events
    held_prio: dict[int, int] = field(default_factory=dict)  # pid -> highest priority seen while it held the CPU
    last_switch_ns: int = -1  # time of the last sched_switch (no irq/softirq context spans one)
    waking: bool = False  # a wake-up happened since the last switch: an idle CPU is leaving idle
    incomplete: bool = False  # events were lost (or not kept) here: missing events are not the hypervisor
    segments: list[tuple[int, int, tuple]] = field(default_factory=list)  # (from, to, key) inside the gap


def parse_line(line: str) -> Event | None:
    """One line of tracefs text (trace or trace_pipe) as an Event; None for headers and other text."""
    m = _LINE.match(line)
    if not m:
        return None
    frac = m["frac"]
    ts_ns = int(m["sec"]) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
    return Event(ts_ns, m["comm"].strip(), int(m["pid"]), int(m["cpu"]), m["event"], m["rest"])


def parse(lines: list[str]) -> tuple[list[Event], int]:
    """The events of trace text in time order, and the number of events the kernel said it lost."""
    events, lost = [], 0
    for line in lines:
        ev = parse_line(line)
        if ev is not None:
            events.append(ev)
            continue
        m = _LOST.search(line)
        if m:
            lost += int(m.group(1))
    events.sort(key=lambda e: e.ts_ns)
    return events, lost


def policy_of(prio: int | None, known: str | None = None) -> tuple[str | None, int | None]:
    """(policy, priority) from the kernel prio sched events print: -1 deadline, 0-99 real-time (RT
    priority 99 - prio; fifo or rr when `known` says which), 100-139 other (priority 0). None: unseen."""
    if prio is None:
        return known, None
    if prio < 0:
        return "deadline", None
    if prio < 100:
        return known if known in ("fifo", "rr") else "rt", 99 - prio
    return known if known in ("other", "batch", "idle") else "other", 0


def _context(ev: Event) -> tuple[str, str] | None:
    """(kind, name) of an interrupt or softirq context an event opens or closes, or None."""
    if ev.name in ("irq_handler_entry", "irq_handler_exit"):
        m = _IRQ.match(ev.rest)
        irq = m["irq"] if m else "?"
        return "irq", f"irq {irq}"
    if ev.name in ("softirq_entry", "softirq_exit"):
        m = _SOFTIRQ.match(ev.rest)
        return "softirq", m["action"] if m else ev.rest
    if ev.name.endswith(("_entry", "_exit")) and ev.rest.startswith("vector="):
        return "irq", ev.name.rsplit("_", 1)[0]  # irq_vectors: local_timer_entry, call_function_single_exit, ...
    return None


def _give(t: _Timeline, a: int, b: int) -> None:
    """Attribute [a, b) clipped to the gap to the innermost context (or the task on the CPU)."""
    a, b = max(a, t.start_ns), min(b, t.end_ns)
    if b <= a:
        return
    if t.stack:
        key: tuple = t.stack[-1]
    elif t.task is None:
        key = ("unaccounted", UNACCOUNTED_LOST if t.incomplete else UNACCOUNTED_NONE)
    elif t.task[1] == 0:
        key = ("task", IDLE_EXIT, 0) if t.waking else ("unaccounted", UNACCOUNTED_IDLE)
    else:
        key = ("task", *t.task)
        prio = t.prio.get(t.task[1])
        if prio is not None:  # a task may raise itself to SCHED_FIFO after being switched in (no event)
            t.held_prio[t.task[1]] = min(prio, t.held_prio.get(t.task[1], prio))
    t.segments.append((a, b, key))


def _step(t: _Timeline, ev: Event, irq_names: dict[str, str]) -> None:
    """Apply one event to the attribution state (after the time before it was given away)."""
    if ev.name == "sched_switch":
        m = _SWITCH.match(ev.rest)
        if m:
            t.prio[int(m["pp"])] = int(m["ppr"])
            t.prio[int(m["np"])] = int(m["npr"])
            t.task = (m["nc"], int(m["np"]))
        t.last_switch_ns, t.waking = ev.ts_ns, False
        return
    if ev.name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        m = _WAKING.match(ev.rest)
        if m:
            t.prio[int(m["p"])] = int(m["pr"])
        t.waking = True
        return
    ctx = _context(ev)
    if ctx is None:
        return
    if ev.name == "irq_handler_entry":
        m = _IRQ.match(ev.rest)
        if m and m["name"]:
            irq_names[ctx[1]] = m["name"]
    if ev.name.endswith("_entry"):
        t.stack.append(ctx)
    elif ctx in t.stack:
        while t.stack and t.stack.pop() != ctx:
            pass
    else:  # an exit whose entry came before the lines: the context held the CPU since the last switch
        t.segments = [
            (a, b, ctx if k[0] in ("task", "unaccounted") and a >= t.last_switch_ns else k) for a, b, k in t.segments
        ]


def analyze(
    lines: list[str],
    cpu: int,
    deadline_ns: int,
    wake_ns: int,
    policies: dict[int, str] | None = None,
    complete: bool = True,
) -> dict:
    """What held `cpu` from deadline_ns to wake_ns, from trace text covering (at least) that gap: {"culprits":
    [culprit records, largest first], "events", "lost_events", "covered": whether the events start before the
    gap}. policies: pid -> "fifo"/"rr"/"other" where known (the trace shows only the kernel prio). complete:
    False when the reader did not hold the CPU's text around the window (then, as when the kernel reports lost
    events in it, time without events is "not known", never blamed on the hypervisor)."""
    events, lost = parse(lines)
    events = [e for e in events if e.cpu == cpu and e.ts_ns <= wake_ns]
    t = _Timeline(deadline_ns, wake_ns, incomplete=bool(lost) or not complete)
    irq_names: dict[str, str] = {}
    if events:  # the task on the CPU before the first event is that event's own (a switch's prev)
        t.task = (events[0].comm, events[0].pid)
        _give(t, deadline_ns, events[0].ts_ns)
    else:
        _give(t, deadline_ns, wake_ns)
    for i, ev in enumerate(events):
        t.task = (ev.comm, ev.pid)  # every line names the task on the CPU (interrupted or switching out)
        _step(t, ev, irq_names)
        end = events[i + 1].ts_ns if i + 1 < len(events) else wake_ns
        _give(t, ev.ts_ns, end)
    culprits: dict[tuple, Culprit] = {}
    for a, b, key in t.segments:
        c = culprits.get(key)
        if c is None:
            c = culprits[key] = _culprit(key, {**t.prio, **t.held_prio}, policies or {}, irq_names)
        c.duration_ns += b - a
    ranked = sorted(culprits.values(), key=lambda c: (-c.duration_ns, c.kind, c.name))
    return {
        "culprits": [c.to_record() for c in ranked if c.duration_ns > 0],
        "events": len(events),
        "lost_events": lost,
        "covered": bool(events) and events[0].ts_ns <= deadline_ns,
    }


def _culprit(key: tuple, prio: dict[int, int], policies: dict[int, str], irq_names: dict[str, str]) -> Culprit:
    """A culprit from an attribution key: ("task", comm, pid), (kind, name) for contexts and unaccounted."""
    if key[0] == "task":
        _, comm, pid = key
        policy, priority = policy_of(prio.get(pid), policies.get(pid))
        return Culprit("task", comm, pid, policy, priority)
    kind, name = key
    if kind == "irq" and name in irq_names:
        name = f"{name} {irq_names[name]}"
    return Culprit(kind, name)


def spike_record(
    cpu: int, wake_ns: int, latency_ns: int, analysis: dict, trace_file: str | None, stages: dict | None = None
) -> dict:
    """The spike as `rtqual show --json` gives it: cpu, time_ns (the wake-up, CLOCK_MONOTONIC), latency_ns,
    culprits (largest first), the source, and where its trace lines are kept in the bundle; with the timerlat
    tracer's split of the latency (stages: irq_ns, thread_ns, user_ns) its source says timerlat."""
    out = {
        "cpu": cpu,
        "time_ns": wake_ns,
        "latency_ns": latency_ns,
        "culprits": analysis["culprits"],
        "source": TIMERLAT_SOURCE if stages else SOURCE,
        "lost_events": analysis.get("lost_events", 0),
        "covered": analysis.get("covered", False),
        "trace_file": trace_file,
    }
    if stages:
        out["stages"] = stages
    return out


def _ms(ns: int) -> str:
    """A duration in words: µs below a millisecond, ms above."""
    return f"{ns / 1e6:.2f} ms" if ns >= 1_000_000 else f"{ns / 1e3:.0f} us"


def culprit_words(c: dict) -> str:
    """One culprit in words: 'rtqual-stall (pid 123, fifo 90) 9.80 ms', 'softirq NET_RX 120 us'."""
    d = _ms(int(c.get("duration_ns") or 0))
    if c.get("kind") == "task":
        prio = f"{c.get('policy') or '?'} {c['priority']}" if c.get("priority") else c.get("policy") or "?"
        return f"task {c.get('name')} (pid {c.get('pid')}, {prio}) {d}"
    if c.get("kind") == "unaccounted":
        return f"unaccounted {d}: {c.get('name')}"
    return f"{c.get('kind')} {c.get('name')} {d}"


def spike_line(s: dict, top: int = 3) -> str:
    """A spike in one line: 'spike on CPU 1 at 12.345678 s: 9.90 ms; task rtqual-stall (...) 9.80 ms, ...'."""
    culprits = s.get("culprits") or []
    words = "; ".join(culprit_words(c) for c in culprits[:top]) or "no culprit found"
    more = f"; {len(culprits) - top} more" if len(culprits) > top else ""
    lost = f" ({s['lost_events']} trace events lost)" if s.get("lost_events") else ""
    stages = s.get("stages")
    stages = stages if isinstance(stages, dict) else {}
    split = ", ".join(f"{k.removesuffix('_ns')} {_ms(int(v))}" for k, v in stages.items() if isinstance(v, int))
    split = f" (timerlat: {split})" if split else ""
    return (
        f"spike on CPU {s.get('cpu')} at {int(s.get('time_ns') or 0) / 1e9:.6f} s: "
        f"{_ms(int(s.get('latency_ns') or 0))}{split} held by {words}{more}{lost}"
    )


EVIDENCE_LINES = 2000  # trace lines a captured spike keeps in the store (the last ones, nearest the wake-up)


def cause(s: dict) -> dict:
    """The cause of a captured spike: its largest culprit as {kind, comm (a task's name, an IRQ's or softirq's,
    or why the time is unaccounted), pid, policy, priority, cpu (the CPU it held), duration_ns}; kind "unknown"
    when no culprit was found."""
    culprits = s.get("culprits") or []
    top = culprits[0] if culprits else {"kind": "unknown", "name": None, "duration_ns": 0}
    return {
        "kind": top.get("kind"),
        "comm": top.get("name"),
        "pid": top.get("pid"),
        "policy": top.get("policy"),
        "priority": top.get("priority"),
        "cpu": s.get("cpu"),
        "duration_ns": top.get("duration_ns"),
    }


def cause_words(c: dict) -> str:
    """A cause in a few words (a PV's string, a listing's column): 'rtqual-stall pid 812 fifo 90 cpu 1',
    'irq local_timer cpu 1', 'unaccounted cpu 1'."""
    cpu = f"cpu {c.get('cpu')}"
    if c.get("kind") == "task":
        prio = f" {c['priority']}" if c.get("priority") else ""
        return f"{c.get('comm')} pid {c.get('pid')} {c.get('policy') or '?'}{prio} {cpu}"
    if c.get("kind") in ("irq", "softirq"):
        return f"{c['kind']} {c.get('comm')} {cpu}"
    return f"{c.get('kind')} {cpu}"


def evidence(s: dict, lines: list[str], trace_file: str | None = None, max_lines: int = EVIDENCE_LINES) -> dict:
    """What a captured spike's cause rests on: its gap, the culprits with their durations, whether the kept
    events cover it, and its trace lines (where the bundle keeps them, or the last max_lines of them)."""
    out = {
        "source": s.get("source"),
        "gap_ns": [int(s["time_ns"]) - int(s["latency_ns"]), int(s["time_ns"])],
        "culprits": s.get("culprits") or [],
        "complete": s.get("complete"),
        "covered": s.get("covered"),
        "lost_events": s.get("lost_events", 0),
        "lines": len(lines),
    }
    if trace_file:
        out["trace_file"] = trace_file
    else:
        out["text"] = lines[-max_lines:]
        out["text_cut"] = max(0, len(lines) - max_lines)
    return out

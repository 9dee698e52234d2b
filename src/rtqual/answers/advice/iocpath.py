"""An IOC's path (docs/advise.md "An IOC's path"): the IOC's threads against the interrupt threads they depend
on (priorities and CPUs), and, from `--trace` data, where each traced response's time went.

On PREEMPT_RT (and for any threaded interrupt, irq/N-name) an interrupt handler is a thread with a priority:
an IOC thread above the thread of its own input's interrupt on the same CPU runs first, and the input waits
(the KEK paper's IOC at FIFO 90 above its input's IRQ thread at FIFO 50). Pure functions of thread lists
(a case's result "ioc" threads, its rt-tasks.json, or /proc read below a root) and of trace text.

The attribution follows a response back from its end: the harness read it on CPU `cpu` at t_resp; the thread
that woke the harness (sched_waking's `comm-pid`) held the response before, and so on back to the stimulus
t_stim (or to an interrupt context that woke a thread: the input arriving). Each link's time is split into its
thread running, in an interrupt on top of it, and waiting runnable behind what held the CPU it ran on next.
The parts of one response never overlap, so they add up to at most its latency.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rtqual.answers.evidence.spikes import Event, _context, parse, policy_of
from rtqual.units import format_cpulist, parse_kernel_cpulist

ROLES = (  # an IOC thread's role from its name (EPICS and rtqual's device support)
    ("reader", ("rtqIn",)),
    ("callback", ("cbHigh", "cbMedium", "cbLow")),
    ("scan", ("scan",)),
    ("CA", ("CAS-", "CAC-", "dbCaLink")),
    ("PVA", ("PVX", "qsrv", "pvxlink")),
)
KERNEL_PREFIXES = ("irq/", "ksoftirqd/", "ktimers/", "irq_work/")  # the interrupt work that runs as threads
CLS = {"TS": "other", "FF": "fifo", "RR": "rr", "B": "batch", "IDL": "idle", "DLN": "deadline"}  # ps -o cls
_WAKEE = re.compile(r"comm=(?P<c>.*) pid=(?P<p>\d+) prio=(?P<pr>-?\d+)")
_SWITCH_NEXT = re.compile(r"prev_pid=(?P<pp>\d+) prev_prio=(?P<ppr>-?\d+) .*next_comm=(?P<nc>.*) next_pid=(?P<np>\d+)")
_NEXT_PRIO = re.compile(r"next_prio=(?P<npr>-?\d+)")
_IRQ_NAME = re.compile(r"name=(?P<name>.+)$")
IDLE = "the CPU leaving idle"


def role(comm: str) -> str | None:
    """The role of an IOC thread on the input's path (reader, callback, scan, CA, PVA), None for the rest."""
    return next((r for r, prefixes in ROLES if comm.startswith(prefixes)), None)


def thread(tid: int, comm: str, policy: str | None, priority: int | None, cpus: str | None) -> dict:
    """One thread in the shape this module uses: tid, comm, policy (fifo, rr, other...), priority (RT, 0 for
    other; a priority that is no number 0..99 is taken as 0), cpus (a kernel CPU list)."""
    prio = priority if isinstance(priority, int) and not isinstance(priority, bool) and 0 <= priority <= 99 else 0
    return {"tid": tid, "comm": str(comm), "policy": policy or "?", "priority": prio, "cpus": cpus}


def ioc_threads(ioc: dict) -> list[dict]:
    """The threads of a case's result "ioc" (rtqual.measure.epics.service): their CPUs each thread's own where
    recorded, else the reader's CPU for the reader (reader_cpu), else the process's."""
    out = []
    for t in ioc.get("threads") or []:
        cpus = t.get("cpus") or ioc.get("cpus_allowed")
        if t.get("cpus") is None and ioc.get("reader_cpu") is not None and role(t["comm"]) == "reader":
            cpus = str(ioc["reader_cpu"])
        out.append(thread(t["tid"], t["comm"], CLS.get(t.get("cls"), t.get("cls")), t.get("rtprio"), cpus))
    return out


def kernel_threads(tasks: list[dict]) -> list[dict]:
    """The interrupt threads (irq/N-name, ksoftirqd, ktimers, irq_work) among real-time threads as a bundle's
    rt-tasks.json ("name", "priority", "affinity") or facts.tuning() ("comm", "rt_priority", "cpus") lists them."""
    out = []
    for t in tasks:
        comm = t.get("comm") or t.get("name") or ""
        if comm.startswith(KERNEL_PREFIXES):
            prio = t.get("rt_priority", t.get("priority"))
            out.append(thread(t.get("tid") or 0, comm, t.get("policy"), prio, t.get("cpus") or t.get("affinity")))
    return out


def shared_cpus(a: dict, b: dict) -> list[int]:
    """The CPUs two threads may both run on ([] where either's CPUs are unknown)."""
    return sorted(set(parse_kernel_cpulist(a["cpus"]) or []) & set(parse_kernel_cpulist(b["cpus"]) or []))


def words(t: dict) -> str:
    """'rtqIn0 (FIFO 89)' or 'cbLow (other)'."""
    prio = f"{str(t['policy']).upper()} {t['priority']}" if t["priority"] else str(t["policy"])
    return f"{t['comm']} ({prio})"


def inversions(ioc: list[dict], kernel: list[dict], inputs: list[str]) -> list[tuple[dict, dict, list[int]]]:
    """(IOC thread, interrupt thread, CPUs they share) where an IOC thread on the input's path runs above an
    interrupt thread on a CPU both may use: of the input's interrupt threads (names containing one of
    `inputs`) when known, else of every irq/ thread."""
    irq = [k for k in kernel if k["comm"].startswith("irq/")]
    chosen = [k for k in irq if any(i in k["comm"] for i in inputs)] if inputs else irq
    return [
        (t, k, cpus)
        for t in ioc
        if role(t["comm"]) and t["policy"] in ("fifo", "rr")
        for k in chosen
        if t["priority"] > k["priority"] and (cpus := shared_cpus(t, k))
    ]


# ---------------------------------------------------------------- where a response's time went (trace)


@dataclass(frozen=True)
class Span:
    """What one CPU did from start_ns to end_ns: the task on it (comm, pid) and the interrupt context on top."""

    start_ns: int
    end_ns: int
    cpu: int
    comm: str
    pid: int
    context: str | None


@dataclass(frozen=True)
class Waking:
    """A sched_waking: at ts_ns (index in the events), woken pid, by the task on the waking CPU or the
    interrupt context on top of it."""

    index: int
    ts_ns: int
    pid: int
    waker_comm: str
    waker_pid: int
    context: str | None


def timeline(events: list[Event], start_ns: int, end_ns: int) -> tuple[list[Span], list[Waking], dict[int, int]]:
    """Each CPU's spans from start_ns to end_ns, every wake-up, and each pid's kernel prio seen in sched events."""
    spans: list[Span] = []
    wakings: list[Waking] = []
    prio: dict[int, int] = {}
    state: dict[int, tuple[str, int, list[str], int]] = {}  # cpu -> task, its pid, context stack, since
    irq_names: dict[str, str] = {}  # "irq 24" -> "irq 24 eth0" (the name is on the entry line only)

    def top(stack: list[str]) -> str | None:
        return irq_names.get(stack[-1], stack[-1]) if stack else None

    for i, ev in enumerate(events):
        comm, pid, stack, since = state.get(ev.cpu, (ev.comm, ev.pid, [], start_ns))
        if ev.ts_ns > since and ev.ts_ns > start_ns:
            spans.append(Span(max(since, start_ns), min(ev.ts_ns, end_ns), ev.cpu, ev.comm, ev.pid, top(stack)))
        comm, pid = ev.comm, ev.pid  # every line names the task on its CPU
        if ev.name == "sched_switch" and (m := _SWITCH_NEXT.search(ev.rest)):
            comm, pid = m["nc"], int(m["np"])
            prio[int(m["pp"])] = int(m["ppr"])
            if n := _NEXT_PRIO.search(ev.rest):
                prio[pid] = int(n["npr"])
        elif ev.name == "sched_waking" and (m := _WAKEE.match(ev.rest)):
            prio[int(m["p"])] = int(m["pr"])
            wakings.append(Waking(i, ev.ts_ns, int(m["p"]), ev.comm, ev.pid, top(stack)))
        elif (ctx := _context(ev)) is not None:
            name = ctx[1] if ctx[0] == "irq" else f"softirq {ctx[1]}"
            if ev.name == "irq_handler_entry" and (irq := _IRQ_NAME.search(ev.rest)):
                irq_names[name] = f"{name} {irq['name']}"
            if ev.name.endswith("_entry"):
                stack = [*stack, name]
            elif name in stack:
                stack = stack[: len(stack) - 1 - stack[::-1].index(name)]
        state[ev.cpu] = (comm, pid, stack, max(ev.ts_ns, start_ns))
    for cpu, (comm, pid, stack, since) in state.items():
        if end_ns > since:
            spans.append(Span(since, end_ns, cpu, comm, pid, top(stack)))
    return [s for s in spans if s.end_ns > s.start_ns], wakings, prio


def chain(spans: list[Span], wakings: list[Waking], cpu: int, start_ns: int, end_ns: int) -> list[tuple]:
    """The response's holders back from its end: [(from_ns, to_ns, comm, pid)] in time order, the first one
    ("input", context) where an interrupt context woke the first thread; [] where nothing ran on `cpu`."""
    last = [s for s in spans if s.cpu == cpu and s.end_ns == end_ns]
    if not last:
        return []
    comm, pid, t, index = last[-1].comm, last[-1].pid, end_ns, 1 << 62
    links: list[tuple] = []
    while t > start_ns:
        w = next((w for w in reversed(wakings) if w.pid == pid and w.index < index and w.ts_ns >= start_ns), None)
        if w is None:
            links.append((start_ns, t, comm, pid))
            break
        links.append((w.ts_ns, t, comm, pid))
        t, index = w.ts_ns, w.index
        if w.context is not None or w.waker_pid == 0:
            if t > start_ns:
                links.append((start_ns, t, "input", w.context or "idle"))
            break
        comm, pid = w.waker_comm, w.waker_pid
    return links[::-1]


def attribute(lines: list[str], cpu: int, start_ns: int, end_ns: int) -> list[dict]:
    """Where one response (t_stim start_ns to t_resp end_ns, read by the harness on `cpu`) spent its time, from
    trace text of every CPU: parts {"kind": running | irq | waiting | input | unknown, "thread", "pid",
    "behind" (what held the CPU: a task or an interrupt), "behind_pid", "cpu", "duration_ns"}. The parts do
    not overlap: their sum is at most end_ns - start_ns."""
    events, _ = parse(lines)
    spans, wakings, prio = timeline([e for e in events if e.ts_ns <= end_ns], start_ns, end_ns)
    parts: list[dict] = []
    for a, b, comm, pid in chain(spans, wakings, cpu, start_ns, end_ns):
        if comm == "input":
            parts.append(_part("input", "before the input's wake-up", None, pid, None, None, b - a))
            continue
        mine = sorted((s for s in spans if s.pid == pid and s.end_ns > a and s.start_ns < b), key=lambda s: s.start_ns)
        t = a
        for s in mine:
            if s.start_ns > t:  # not on a CPU: waiting behind what held the CPU it ran on next
                parts += _waiting(spans, comm, pid, s.cpu, t, s.start_ns)
            x, y = max(s.start_ns, t), min(s.end_ns, b)
            if y > x:
                parts.append(_part("irq" if s.context else "running", comm, pid, s.context, None, s.cpu, y - x))
                t = y
        if b > t:  # the trace ends before it ran again (an end inside this link cannot happen): not known
            parts += _waiting(spans, comm, pid, None, t, b)
    for p in parts:
        p["priority"] = prio.get(p["pid"]) if p["pid"] else None
        p["behind_priority"] = prio.get(p["behind_pid"]) if p["behind_pid"] else None
    return [p for p in parts if p["duration_ns"] > 0]


def _part(kind: str, comm: str, pid, behind, behind_pid, cpu, duration_ns: int) -> dict:
    return {
        "kind": kind,
        "thread": comm,
        "pid": pid,
        "behind": behind,
        "behind_pid": behind_pid,
        "cpu": cpu,
        "duration_ns": duration_ns,
    }


def _waiting(spans: list[Span], comm: str, pid: int, cpu: int | None, a: int, b: int) -> list[dict]:
    """A thread runnable but not running from a to b: the time given to what held `cpu` (an interrupt, a task,
    or idle: the CPU leaving idle), 'unknown' where the trace does not say."""
    if cpu is None:
        return [_part("unknown", comm, pid, None, None, None, b - a)]
    out, covered = [], 0
    for s in spans:
        if s.cpu == cpu and s.end_ns > a and s.start_ns < b:
            d = min(s.end_ns, b) - max(s.start_ns, a)
            behind = s.context or (IDLE if s.pid == 0 else s.comm)
            out.append(_part("waiting", comm, pid, behind, None if s.context or s.pid == 0 else s.pid, cpu, d))
            covered += d
    if b - a > covered:
        out.append(_part("unknown", comm, pid, None, None, cpu, b - a - covered))
    return out


def summary(responses: list[tuple[int, list[dict]]], policies: dict[int, str] | None = None) -> dict:
    """The parts of traced responses summed per (kind, thread, behind, CPU), largest first: {"responses",
    "response_ns" (their latencies' sum), "attributed_ns", "parts": [{"kind", "thread", "behind", "cpu",
    "duration_ns", "share"}]}; names carry policy and priority ('irq/24-eth0 (FIFO 50)')."""
    total: dict[tuple, int] = {}
    for _, parts in responses:
        for p in parts:
            key = (
                p["kind"],
                _named(p["thread"], p["pid"], p.get("priority"), policies),
                _named(p["behind"], p["behind_pid"], p.get("behind_priority"), policies),
                p["cpu"],
            )
            total[key] = total.get(key, 0) + p["duration_ns"]
    response_ns = sum(lat for lat, _ in responses)
    ranked = sorted(total.items(), key=lambda kv: -kv[1])
    return {
        "responses": len(responses),
        "response_ns": response_ns,
        "attributed_ns": sum(total.values()),
        "parts": [
            {"kind": k, "thread": t, "behind": b, "cpu": c, "duration_ns": d, "share": d / response_ns}
            for (k, t, b, c), d in ranked
            if response_ns
        ],
    }


def _named(comm: str | None, pid: int | None, prio: int | None, policies: dict[int, str] | None) -> str | None:
    """A thread's name with its policy and priority as the trace saw it ('cbHigh (FIFO 70)')."""
    if comm is None or pid is None:
        return comm
    policy, priority = policy_of(prio, (policies or {}).get(pid))
    if policy is None:
        return comm
    return f"{comm} ({policy.upper()} {priority})" if priority else f"{comm} ({policy})"


def part_words(p: dict) -> str:
    """One summed part in words: 'cbHigh (FIFO 70) waiting for irq/24-eth0 (FIFO 50) on CPU 1'."""
    on = f" on CPU {p['cpu']}" if p["cpu"] is not None else ""
    if p["kind"] == "waiting":
        return f"{p['thread']} waiting for {p['behind']}{on}"
    if p["kind"] == "irq":
        return f"{p['thread']} interrupted by {p['behind']}{on}"
    if p["kind"] == "input":
        return f"the input before its first thread ran (woken from {p['behind']})"
    if p["kind"] == "unknown":
        return f"{p['thread']} not running, not known why{on}"
    return f"{p['thread']} running{on}"


def summary_lines(s: dict, top: int = 6) -> list[str]:
    """The summary in words: 'of 24.1 ms in 100 traced responses: 8.0 ms (33 %) cbHigh (FIFO 70) waiting for ...'."""
    if not s["responses"]:
        return []
    mean = _dur(s["response_ns"] // s["responses"])
    head = f"of {_dur(s['response_ns'])} in {s['responses']} traced responses (mean {mean}):"
    out = [head] + [f"{_dur(p['duration_ns'])} ({100 * p['share']:.0f} %) {part_words(p)}" for p in s["parts"][:top]]
    rest = s["response_ns"] - s["attributed_ns"]
    if rest > 0:
        out.append(f"{_dur(rest)} ({100 * rest / s['response_ns']:.0f} %) not in the trace")
    return out


def _dur(ns: int) -> str:
    return f"{ns / 1e6:.2f} ms" if ns >= 1_000_000 else f"{ns / 1e3:.0f} us"


def threads_text(threads: list[dict]) -> str:
    """Threads highest priority first: 'cbHigh (FIFO 70), cbLow (FIFO 58); CPUs 0-1' (each its CPUs where
    they differ)."""
    ranked = sorted(threads, key=lambda t: -t["priority"])
    if len({cpus_text(t) for t in ranked}) == 1:
        return ", ".join(words(t) for t in ranked) + f"; CPUs {cpus_text(ranked[0])}"
    return ", ".join(f"{words(t)} CPUs {cpus_text(t)}" for t in ranked)


def cpus_text(t: dict) -> str:
    """A thread's CPUs as a list ('0-1'), '?' when unknown."""
    cpus = parse_kernel_cpulist(t["cpus"])
    return format_cpulist(cpus) if cpus else "?"


# ---------------------------------------------------------------- the advise finding


def input_threads(responses: list[tuple[int, list[dict]]]) -> list[str]:
    """The interrupt threads a traced response passed through (holders named irq/...): the input's."""
    return sorted({p["thread"] for _, parts in responses for p in parts if str(p["thread"]).startswith("irq/")})


def finding(
    ioc: list[dict],
    kernel: list[dict],
    inputs: list[str],
    path: dict | None = None,
    where: str = "",
    no_irq: str | None = None,
) -> dict:
    """The `ioc-threads` finding: each IOC thread on the input's path (reader, callback, scan, CA, PVA) with its
    policy, priority and CPUs; the interrupt threads sharing its CPUs; the IOC threads that run above an
    interrupt thread they may depend on (major when that is the input's, named by `inputs` or found in the
    trace; minor when the input is not known; info when none); with trace data, where the responses' time
    went (`path`, from summary(); then only the interrupt threads the responses passed through count).
    no_irq: why the input has no interrupt thread (a FIFO written by the harness), when known."""
    from rtqual.answers.advice.hostchecks import KTHREAD_NAME, sh, whole
    from rtqual.answers.advice.hostchecks import finding as make

    on_path = [t for t in ioc if role(t["comm"])]
    near = [k for k in kernel if any(shared_cpus(t, k) for t in on_path)]
    known = bool(inputs) or path is not None or no_irq is not None  # which interrupt threads the input uses
    bad = inversions(ioc, kernel, inputs) if inputs or not known else []
    evidence = [
        f"{where}{r} threads: {threads_text([t for t in on_path if role(t['comm']) == r])}"
        for r, _ in ROLES
        if any(role(t["comm"]) == r for t in on_path)
    ]
    evidence += [f"{where}interrupt thread {words(k)}, CPUs {cpus_text(k)}" for k in near[:12]]
    for name in dict.fromkeys(k["comm"] for _, k, _ in bad):  # per interrupt thread, what runs before it
        above = sorted(((t, k, cpus) for t, k, cpus in bad if k["comm"] == name), key=lambda x: -x[0]["priority"])
        evidence.append(
            f"{where}{words(above[0][1])}"
            + (" (the input's) waits for " if inputs else " may wait for ")
            + ", ".join(f"{words(t)} on CPU {format_cpulist(cpus)}" for t, _, cpus in above[:6])
            + (f" and {len(above) - 6} more" if len(above) > 6 else "")
        )
    if no_irq and not inputs:
        evidence.append(f"{where}input: {no_irq}")
    if path:
        evidence += [f"{where}trace: {line}" for line in summary_lines(path)]
        if not inputs:
            evidence.append(f"{where}trace: the responses passed through no interrupt thread")
    if bad:
        t, k, _ = max(bad, key=lambda x: x[0]["priority"])
        ioc_prio, irq_prio = whole(t["priority"], 0, 99), whole(k["priority"], 0, 99)  # values, or the line is refused
        raise_it = (
            f"{sh('chrt', '-f', '-p', min(ioc_prio + 1, 99))} $({sh('pgrep', '-x', k['comm'])})"
            if ioc_prio is not None and KTHREAD_NAME.fullmatch(str(k["comm"]))
            else "(its chrt line left out: a priority or a thread name of the wrong kind)"
        )
        fix = (
            f"raise the input's interrupt thread above the IOC's: {raise_it}; or run the IOC's input path below it "
            f"(rtqual run ioc --ioc-priority {max(irq_prio - 1, 1) if irq_prio is not None else 'N'}; an IOC's "
            "reader thread priority), or on other CPUs (--reader-cpu, /proc/irq/N/smp_affinity_list); persistent: "
            "tuna --threads='irq/*-NAME' --priority=FIFO:N at boot"
        )
    else:
        fix = "nothing to change: no IOC thread on the input's path runs above an interrupt thread on its CPUs"
    severity = "major" if bad and inputs else "minor" if bad else "info"
    return make(
        "ioc-threads",
        severity,
        evidence,
        "On PREEMPT_RT an interrupt's handler is a thread with a priority: an IOC thread above the thread of its "
        "own input's interrupt on the same CPU runs first, and the input waits until the IOC thread sleeps "
        "(the KEK IOC at FIFO 90 above its input's interrupt thread at FIFO 50).",
        fix,
        True,
        "ps -eLo tid,cls,rtprio,psr,comm | grep -E 'irq/|ksoftirqd|ktimers|rtqIn|cb|scan|CAS'",
    ) | {"path": path}


def case_finding(model, r: dict, inputs: list[str]) -> dict | None:
    """The `ioc-threads` finding of one IOC case of a bundle (its result "ioc", rt-tasks.json, and the trace
    text of its spikes where it ran with --trace); None for a case without an IOC."""
    from rtqual.results.bundle import Unreadable, names

    if not isinstance(r.get("ioc"), dict):
        return None
    ioc = ioc_threads(r["ioc"])
    try:
        tasks = model.read_json(names.case_file(r["id"], names.RT_TASKS))
    except Unreadable:
        tasks = []
    kernel = kernel_threads(tasks if isinstance(tasks, list) else [])
    policies = {t["tid"]: t["policy"] for t in ioc + kernel}
    for s in r.get("spikes") or []:  # the harness and others as the spike analysis knew them (fifo, other...)
        policies |= {c["pid"]: c["policy"] for c in s.get("culprits") or [] if c.get("pid") and c.get("policy")}
    responses = []
    for s in r.get("spikes") or []:
        text = model.text(names.case_file(r["id"], s["trace_file"])) if s.get("trace_file") else None
        if text is not None:
            end = int(s["time_ns"])
            responses.append((int(s["latency_ns"]), attribute(text.splitlines(), s["cpu"], end - s["latency_ns"], end)))
    path = summary(responses, policies) if responses else None
    fifo = None if (r["ioc"].get("spec") or {}).get("gpio") else "a FIFO the harness writes: no interrupt"
    return finding(ioc, kernel, inputs or input_threads(responses), path, f"case {r['id']}: ", fifo)

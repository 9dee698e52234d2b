"""Spike analysis (rtqual.answers.evidence.spikes) and the tracer's pure helpers (rtqual.measure.host.trace) on recorded
tracefs text."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtqual.answers.evidence import spikes
from rtqual.measure.host import trace
from rtqual.publish import report, views

DATA = Path(__file__).parent.parent / "data" / "trace"
S = 1_000_000_000


def line(comm: str, pid: int, cpu: int, t_us: int, event: str, rest: str, flags: str = "d..2.") -> str:
    """A trace_pipe line as this kernel prints it (time in µs since boot on the mono clock)."""
    return f"{comm:>16}-{pid:<7} [{cpu:03d}] {flags} {t_us // 1_000_000:5d}.{t_us % 1_000_000:06d}: {event}: {rest}"


def switch(cpu: int, t_us: int, prev: tuple, nxt: tuple, state: str = "R") -> str:
    (pc, pp, ppr), (nc, np_, npr) = prev, nxt
    return line(
        pc,
        pp,
        cpu,
        t_us,
        "sched_switch",
        f"prev_comm={pc} prev_pid={pp} prev_prio={ppr} prev_state={state} ==> "
        f"next_comm={nc} next_pid={np_} next_prio={npr}",
    )


STALL = ("rtqual-stall", 4242, 9)  # SCHED_FIFO 90
PROBE = ("rtqual-probe", 777, 19)  # SCHED_FIFO 80
IDLE = ("swapper/1", 0, 120)
T0 = 100 * 1_000_000  # µs: 100 s after boot


def stall_lines(deadline_us: int, stall_end_us: int) -> list[str]:
    """An injected stall on CPU 1: the stall task switched in before the deadline, the timer IRQ at the
    deadline wakes the probe, which runs once the stall ends."""
    return [
        switch(1, deadline_us - 500, IDLE, STALL),
        line("rtqual-stall", 4242, 1, deadline_us, "local_timer_entry", "vector=236", "d.h.."),
        line(
            "rtqual-stall", 4242, 1, deadline_us + 1, "sched_waking", "comm=rtqual-probe pid=777 prio=19 target_cpu=001"
        ),
        line("rtqual-stall", 4242, 1, deadline_us + 3, "local_timer_exit", "vector=236", "d.h.."),
        switch(1, stall_end_us, STALL, PROBE, state="S"),
    ]


def test_parse_line_reads_this_kernels_format() -> None:
    ev = spikes.parse_line(
        "    rtqual-probe-31054   [001] d..2.  9044.608216: sched_switch: prev_comm=rtqual-probe prev_pid=31054 "
        "prev_prio=19 prev_state=S ==> next_comm=cc1 next_pid=2826 next_prio=120"
    )
    assert ev is not None
    assert (ev.comm, ev.pid, ev.cpu, ev.ts_ns, ev.name) == ("rtqual-probe", 31054, 1, 9044_608216_000, "sched_switch")
    assert spikes.parse_line("CPU:1 [LOST 107314 EVENTS]") is None
    assert spikes.parse_line("# tracer: nop") is None
    events, lost = spikes.parse(["CPU:1 [LOST 12 EVENTS]", "CPU:1 [LOST 3 EVENTS]"])
    assert events == [] and lost == 15


def test_comm_with_spaces_and_dashes() -> None:
    ev = spikes.parse_line(line("Web Content-x", 99, 0, T0, "sched_waking", "comm=a pid=1 prio=120 target_cpu=000"))
    assert ev is not None and (ev.comm, ev.pid) == ("Web Content-x", 99)


def test_injected_stall_is_blamed_on_the_stall_task_with_its_duration() -> None:
    deadline_us, end_us = T0 + 2000, T0 + 12000  # a 10 ms gap
    wake_us = end_us + 8
    a = spikes.analyze(stall_lines(deadline_us, end_us), 1, deadline_us * 1000, wake_us * 1000, {4242: "fifo"})
    top = a["culprits"][0]
    assert (top["kind"], top["name"], top["pid"], top["policy"], top["priority"]) == (
        "task",
        "rtqual-stall",
        4242,
        "fifo",
        90,
    )
    assert top["duration_ns"] == (end_us - deadline_us - 3) * 1000  # the timer IRQ's 3 µs are the IRQ's
    assert ("irq", "local_timer", 3_000) in [(c["kind"], c["name"], c["duration_ns"]) for c in a["culprits"]]
    assert sum(c["duration_ns"] for c in a["culprits"]) == (wake_us - deadline_us) * 1000
    assert a["covered"] is True and a["lost_events"] == 0


def test_culprits_largest_first_and_sum_to_the_gap() -> None:
    d = T0
    lines = [
        switch(1, d - 100, IDLE, ("hog", 50, 120)),
        line("hog", 50, 1, d + 10, "irq_handler_entry", "irq=36 name=virtio1-req.0", "d.h.."),
        line("hog", 50, 1, d + 30, "irq_handler_exit", "irq=36 ret=handled", "d.h.."),
        line("hog", 50, 1, d + 30, "softirq_entry", "vec=3 [action=NET_RX]", ".Ns.."),
        line("hog", 50, 1, d + 430, "softirq_exit", "vec=3 [action=NET_RX]", ".Ns.."),
        switch(1, d + 500, ("hog", 50, 120), PROBE),
    ]
    a = spikes.analyze(lines, 1, d * 1000, (d + 505) * 1000)
    kinds = [(c["kind"], c["name"], c["duration_ns"]) for c in a["culprits"]]
    assert kinds == [
        ("softirq", "NET_RX", 400_000),
        ("task", "hog", 80_000),
        ("irq", "irq 36 virtio1-req.0", 20_000),
        ("task", "rtqual-probe", 5_000),
    ]
    assert a["culprits"][1]["policy"] == "other" and a["culprits"][1]["priority"] == 0


def test_idle_cpu_in_the_gap_is_unaccounted() -> None:
    """No guest activity: the CPU idles past the deadline and the timer IRQ comes late (a VM's hypervisor)."""
    d = T0
    lines = [
        switch(1, d - 800, PROBE, IDLE, state="S"),
        line("<idle>", 0, 1, d + 900, "local_timer_entry", "vector=236", "d.h.."),
        line("<idle>", 0, 1, d + 901, "sched_waking", "comm=rtqual-probe pid=777 prio=19 target_cpu=001", "d.h.."),
        line("<idle>", 0, 1, d + 903, "local_timer_exit", "vector=236", "d.h.."),
        switch(1, d + 905, IDLE, PROBE),
    ]
    a = spikes.analyze(lines, 1, d * 1000, (d + 910) * 1000)
    top = a["culprits"][0]
    assert top["kind"] == "unaccounted" and top["name"] == spikes.UNACCOUNTED_IDLE
    assert top["duration_ns"] == 900_000 and top["pid"] is None
    assert ("task", spikes.IDLE_EXIT, 2_000) in [(c["kind"], c["name"], c["duration_ns"]) for c in a["culprits"]]


def test_no_events_at_all_is_unaccounted() -> None:
    a = spikes.analyze([], 0, 5 * S, 5 * S + 300_000)
    assert a["culprits"] == [
        {
            "kind": "unaccounted",
            "name": spikes.UNACCOUNTED_NONE,
            "pid": None,
            "policy": None,
            "priority": None,
            "duration_ns": 300_000,
        }
    ]
    assert a["covered"] is False


def test_lost_events_are_not_blamed_on_the_hypervisor() -> None:
    lost = spikes.analyze(["CPU:0 [LOST 99 EVENTS]"], 0, 5 * S, 5 * S + 300_000)
    assert lost["culprits"][0]["name"] == spikes.UNACCOUNTED_LOST and lost["lost_events"] == 99
    unkept = spikes.analyze([], 0, 5 * S, 5 * S + 300_000, complete=False)
    assert unkept["culprits"][0]["name"] == spikes.UNACCOUNTED_LOST


def test_context_open_before_the_window_gets_its_time() -> None:
    """A softirq that began before the kept lines: its exit without entry gives it the time so far."""
    d = T0
    lines = [
        line("hog", 50, 1, d + 200, "softirq_exit", "vec=3 [action=NET_RX]", ".Ns.."),
        switch(1, d + 250, ("hog", 50, 120), PROBE),
    ]
    a = spikes.analyze(lines, 1, d * 1000, (d + 255) * 1000)
    assert a["culprits"][0]["kind"] == "softirq" and a["culprits"][0]["duration_ns"] == 200_000


def test_recorded_spike_from_this_vm() -> None:
    """A spike recorded here (--trace, 60us threshold): a SCHED_OTHER `ld` held the CPU on a preempt=none
    kernel while the timer's wake-up was due."""
    lines = (DATA / "spike-ld-cpu1.txt").read_text().splitlines()
    wake, latency = 9438664692957, 148968
    a = spikes.analyze(lines, 1, wake - latency, wake, {13488: "fifo"})
    top = a["culprits"][0]
    assert (top["kind"], top["name"], top["pid"]) == ("task", "ld", 13470)
    assert sum(c["duration_ns"] for c in a["culprits"]) == latency
    assert [c["duration_ns"] for c in a["culprits"]] == sorted((c["duration_ns"] for c in a["culprits"]), reverse=True)
    assert a["covered"]


def test_other_cpus_lines_are_ignored() -> None:
    d = T0
    lines = [*stall_lines(d, d + 100), switch(0, d + 50, ("other", 5, 120), ("x", 6, 120))]
    a = spikes.analyze(lines, 1, d * 1000, (d + 100) * 1000)
    assert {c["name"] for c in a["culprits"]} == {"rtqual-stall", "local_timer"}


@pytest.mark.parametrize(
    ("prio", "known", "want"),
    [
        (9, "fifo", ("fifo", 90)),
        (19, None, ("rt", 80)),
        (0, "rr", ("rr", 99)),
        (120, None, ("other", 0)),
        (139, "batch", ("batch", 0)),
        (-1, None, ("deadline", None)),
        (None, None, (None, None)),
    ],
)
def test_policy_of_kernel_prio(prio, known, want) -> None:
    assert spikes.policy_of(prio, known) == want


def test_spike_in_words() -> None:
    s = spikes.spike_record(
        1,
        12 * S,
        9_900_000,
        {
            "culprits": [
                spikes.Culprit("task", "rtqual-stall", 42, "fifo", 90, 9_800_000).to_record(),
                spikes.Culprit("irq", "local_timer", duration_ns=3_000).to_record(),
            ]
        },
        "spikes/spike-001-cpu1.txt",
    )
    text = spikes.spike_line(s)
    assert text.startswith("spike on CPU 1 at 12.000000 s: 9.90 ms held by task rtqual-stall (pid 42, fifo 90) 9.80 ms")
    assert "irq local_timer 3 us" in text
    assert s["source"] == "sched/irq events"


def test_show_puts_spikes_in_words_and_json_only_for_traced_cases() -> None:
    base = {
        "id": "001-timer",
        "label": "timer",
        "probe": "timer",
        "params": {},
        "stats": {},
        "per_cpu": {},
        "verdict": "pass",
    }
    rec = spikes.spike_record(0, S, 200_000, {"culprits": []}, None)
    traced = {**base, "trace": {"source": spikes.SOURCE, "timerlat": "not in this kernel", "spikes_seen": 1}}
    traced["spikes"] = [rec]
    data = {"path": "b", "manifest": {"schema_version": 1, "verdict": "pass"}, "cases": [base, traced]}
    doc = report.show_json(data)
    assert "spikes" not in doc["cases"][0] and "trace" not in doc["cases"][0]
    assert doc["cases"][1]["spikes"][0]["culprits"] == [] and doc["cases"][1]["spikes"][0]["latency_ns"] == 200_000
    assert views.spike_lines(base) == []
    words = views.spike_lines(traced)
    assert words[0].startswith("trace: 1 spikes over the threshold (source: sched/irq events")
    assert "no culprit found" in words[1] and "reader used" not in words[0]
    for given, said in ((12_300_000, "its reader used 12.3ms of CPU)"), (True, None), (-1, None), ("1", None)):
        head = views.spike_lines({**traced, "trace": {**traced["trace"], "reader_cpu_ns": given}})[0]
        assert head.endswith(said) if said else "reader used" not in head


# ---------------------------------------------------------------- the tracer's pure helpers


def test_find_tracefs_prefers_the_usual_place() -> None:
    mounts = "nodev /tmp/x tracefs rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\nproc /proc proc rw 0 0\n"
    assert trace.find_tracefs(mounts) == Path("/sys/kernel/tracing")
    assert trace.find_tracefs("nodev /tmp/x tracefs rw 0 0\n") is None  # someone's own mount
    assert trace.find_tracefs("proc /proc proc rw 0 0\n") is None


def test_cpumask_words() -> None:
    assert trace.cpumask([0]) == "1"
    assert trace.cpumask([0, 1]) == "3"
    assert trace.cpumask([32]) == "1,00000000"
    assert trace.cpumask([1, 40]) == "100,00000002"


def test_window_lines_cut_by_time_with_the_losses_inside() -> None:
    lines = [line("a", 1, 0, T0 + i * 100, "sched_waking", "comm=b pid=2 prio=120 target_cpu=000") for i in range(10)]
    text = "\n".join(lines[:5] + ["CPU:0 [LOST 7 EVENTS]"] + lines[5:]) + "\n"
    rng = trace.text_range(text)
    assert rng == ((T0) * 1000, (T0 + 900) * 1000)
    chunks = [(*rng, text)]
    inside = trace.window_lines(chunks, (T0 + 300) * 1000, (T0 + 600) * 1000)
    assert len(inside) == 5 and "LOST" in inside[2]  # 300, 400, LOST, 500, 600
    before = trace.window_lines(chunks, T0 * 1000, (T0 + 200) * 1000)
    assert len(before) == 3 and not any("LOST" in x for x in before)
    assert trace.window_lines(chunks, (T0 + 2000) * 1000, (T0 + 3000) * 1000) == []
    assert trace.line_ts("CPU:0 [LOST 7 EVENTS]") is None


def test_the_report_has_a_spikes_section_only_for_traced_cases() -> None:
    from rtqual.publish import htmlreport

    culprit = spikes.Culprit("softirq", "NET_RX", duration_ns=150_000).to_record()
    traced = {"id": "001-timer", "trace": {"source": spikes.SOURCE, "timerlat": "not in this kernel", "spikes_seen": 1}}
    traced["spikes"] = [spikes.spike_record(1, 2 * S, 160_000, {"culprits": [culprit]}, None)]
    html = htmlreport.spikes_html(traced)
    assert "<h3>Spikes</h3>" in html and "softirq NET_RX 150 us" in html and "2.000000 s" in html
    assert htmlreport.spikes_html({"id": "x"}) == ""

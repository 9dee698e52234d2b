"""An IOC's path (rtqual.answers.advice.iocpath): IOC threads against interrupt threads, and where a traced
response's time went, on synthetic trace text (tracefs format) with known answers."""

import json
import re
import shutil
from pathlib import Path

from rtqual import cli
from rtqual.answers.advice import iocpath

T0 = 1000 * 1_000_000_000  # t_stim: 1000 s on the mono clock


def line(us: int, cpu: int, comm: str, pid: int, event: str, rest: str) -> str:
    """One tracefs line at T0 + us microseconds."""
    return f"{comm:>16}-{pid:<7} [{cpu:03d}] d..2. 1000.{us:06d}: {event}: {rest}"


def switch(us, cpu, prev, ppid, pprio, state, nxt, npid, nprio):
    return line(
        us,
        cpu,
        prev,
        ppid,
        "sched_switch",
        f"prev_comm={prev} prev_pid={ppid} prev_prio={pprio} prev_state={state} ==> "
        f"next_comm={nxt} next_pid={npid} next_prio={nprio}",
    )


def waking(us, cpu, comm, pid, wcomm, wpid, wprio, target):
    return line(us, cpu, comm, pid, "sched_waking", f"comm={wcomm} pid={wpid} prio={wprio} target_cpu={target:03d}")


# FIFO input (this VM's IOC): the harness (iocresp, CPU 0) writes the stimulus at 0 us and wakes the reader; on
# CPU 1 a SCHED_OTHER task and then an interrupt hold the CPU until 32 us; the reader wakes cbHigh at 50 us,
# cbHigh wakes the harness at 90 us, CPU 0 leaves idle at 95 us, the harness reads the response at 100 us.
FIFO = [
    line(1, 1, "busy", 300, "softirq_entry", "vec=1 [action=TIMER]"),
    line(3, 1, "busy", 300, "softirq_exit", "vec=1 [action=TIMER]"),
    waking(10, 0, "iocresp", 100, "rtqIn0", 200, 10, 1),
    line(11, 1, "busy", 300, "irq_handler_entry", "irq=24 name=eth0"),
    switch(12, 0, "iocresp", 100, 19, "S", "swapper/0", 0, 120),
    line(31, 1, "busy", 300, "irq_handler_exit", "irq=24 ret=handled"),
    switch(32, 1, "busy", 300, 120, "R", "rtqIn0", 200, 10),
    waking(50, 1, "rtqIn0", 200, "cbHigh", 201, 29, 1),
    switch(52, 1, "rtqIn0", 200, 10, "S", "cbHigh", 201, 29),
    waking(90, 1, "cbHigh", 201, "iocresp", 100, 19, 0),
    switch(95, 0, "swapper/0", 0, 120, "R", "iocresp", 100, 19),
]


def parts_of(lines, cpu=0, latency_us=100):
    return iocpath.attribute(lines, cpu, T0, T0 + latency_us * 1000)


def us(parts, kind, thread, behind=None):
    return sum(p["duration_ns"] for p in parts if (p["kind"], p["thread"], p["behind"]) == (kind, thread, behind)) / 1e3


def test_a_fifo_response_is_split_into_running_and_waiting_exactly():
    parts = parts_of(FIFO)
    assert sum(p["duration_ns"] for p in parts) == 100_000  # every link traced: the whole response
    assert us(parts, "running", "iocresp") == 10 + 5 and us(parts, "waiting", "iocresp", iocpath.IDLE) == 5
    assert us(parts, "waiting", "rtqIn0", "busy") == 2 and us(parts, "waiting", "rtqIn0", "irq 24 eth0") == 20
    assert us(parts, "running", "rtqIn0") == 18
    assert us(parts, "waiting", "cbHigh", "rtqIn0") == 2 and us(parts, "running", "cbHigh") == 38


def test_a_trace_of_one_cpu_attributes_less_never_more():
    parts = parts_of([x for x in FIFO if "[000]" in x])
    assert 0 < sum(p["duration_ns"] for p in parts) <= 100_000
    assert parts_of([]) == []


# PREEMPT_RT, the KEK case: the reader (FIFO 89) is busy on CPU 1 when the input's interrupt comes at 5 us; its
# hard handler wakes irq/24-eth0 (FIFO 50), which waits behind the reader until 40 us, runs and wakes the reader
# at 45 us; the reader writes the response and wakes the harness on CPU 0 at 60 us, read at 70 us.
RT = [
    line(5, 1, "rtqIn0", 200, "irq_handler_entry", "irq=24 name=eth0"),
    waking(5, 1, "rtqIn0", 200, "irq/24-eth0", 50, 49, 1),
    line(6, 1, "rtqIn0", 200, "irq_handler_exit", "irq=24 ret=handled"),
    switch(40, 1, "rtqIn0", 200, 10, "S", "irq/24-eth0", 50, 49),
    waking(45, 1, "irq/24-eth0", 50, "rtqIn0", 200, 10, 1),
    switch(46, 1, "irq/24-eth0", 50, 49, "S", "rtqIn0", 200, 10),
    waking(60, 1, "rtqIn0", 200, "iocresp", 100, 19, 0),
    switch(61, 0, "swapper/0", 0, 120, "R", "iocresp", 100, 19),
]


def test_kek_the_input_irq_thread_waits_for_the_ioc_thread_above_it():
    parts = parts_of(RT, latency_us=70)
    assert sum(p["duration_ns"] for p in parts) == 70_000
    assert us(parts, "input", "before the input's wake-up", "irq 24 eth0") == 5
    assert us(parts, "waiting", "irq/24-eth0", "rtqIn0") == 34 and us(parts, "running", "irq/24-eth0") == 5
    s = iocpath.summary([(70_000, parts)], policies={50: "fifo", 200: "fifo"})
    assert s["attributed_ns"] == s["response_ns"] == 70_000
    top = s["parts"][0]
    assert iocpath.part_words(top) == "irq/24-eth0 (FIFO 50) waiting for rtqIn0 (FIFO 89) on CPU 1"
    assert iocpath.summary_lines(s)[1].startswith("34 us (49 %) irq/24-eth0 (FIFO 50) waiting for rtqIn0")


def test_inversions_name_an_ioc_thread_above_an_irq_thread_on_a_shared_cpu():
    ioc = [
        iocpath.thread(200, "rtqIn0", "fifo", 89, "1"),
        iocpath.thread(201, "cbHigh", "fifo", 70, "0-1"),
        iocpath.thread(202, "errlog", "fifo", 90, "1"),  # not on the input's path
    ]
    kernel = iocpath.kernel_threads(
        [
            {"name": "irq/24-eth0", "tid": 50, "policy": "fifo", "priority": 50, "affinity": "1"},
            {"comm": "irq/30-usb", "tid": 51, "policy": "fifo", "rt_priority": 50, "cpus": "0"},
            {"name": "migration/1", "tid": 9, "policy": "fifo", "priority": 99, "affinity": "1"},
        ]
    )
    assert [k["comm"] for k in kernel] == ["irq/24-eth0", "irq/30-usb"]
    found = [(t["comm"], k["comm"], cpus) for t, k, cpus in iocpath.inversions(ioc, kernel, ["eth0"])]
    assert found == [("rtqIn0", "irq/24-eth0", [1]), ("cbHigh", "irq/24-eth0", [1])]
    assert len(iocpath.inversions(ioc, kernel, [])) == 3  # input unknown: every irq thread
    assert iocpath.role("cbLow") == "callback" and iocpath.role("errlog") is None


# ---------------------------------------------------------------- rtqual advise --ioc / --bundle

DATA = Path(__file__).resolve().parents[1] / "data"
RT_TREE = DATA / "hosts" / "rt-ioc"  # PREEMPT_RT, irq/24-eth0 FIFO 50 on CPU 1, an IOC (pid 4000) reading at 90


def advise_json(capsys, *argv) -> dict:
    code = cli.main(["advise", *map(str, argv), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def ioc_finding(result: dict) -> dict:
    (f,) = [f for f in result["findings"] if f["id"] == "ioc-threads"]
    return f


def test_a_live_ioc_above_its_inputs_irq_thread_is_named(capsys):
    f = ioc_finding(advise_json(capsys, "--root", RT_TREE, "--cpus", "1", "--ioc", 4000, "--input-irq", "eth0"))
    assert f["severity"] == "major" and f["runtime"] and "chrt -f -p 91 $(pgrep -x irq/24-eth0)" in f["fix"]
    ev = "\n".join(f["evidence"])
    assert "reader threads: rtqIn0 (FIFO 90); CPUs 1" in ev and "interrupt thread irq/24-eth0 (FIFO 50), CPUs 1" in ev
    waits = "irq/24-eth0 (FIFO 50) (the input's) waits for rtqIn0 (FIFO 90) on CPU 1, cbHigh (FIFO 70) on CPU 1, "
    assert waits + "scan-1 (FIFO 62) on CPU 1\n" in ev + "\n"  # not CAS-TCP at 16, not errlog (not on the path)
    assert "errlog" not in ev and ev.count("wait") == 1  # the input is eth0: irq/30-xhci_hcd shares CPU 0 only
    unknown = ioc_finding(advise_json(capsys, "--root", RT_TREE, "--cpus", "1", "--ioc", 4000))
    assert unknown["severity"] == "minor" and "irq/30-xhci_hcd (FIFO 50) may wait for" in "\n".join(unknown["evidence"])


def test_advise_ioc_and_bundle_refuse_bad_input_in_one_line(capsys, tmp_path):
    for argv, why in (
        (["--root", RT_TREE, "--ioc", "99999"], "--ioc 99999: no such process"),
        (["--root", RT_TREE, "--ioc", "50"], "--ioc 50: no EPICS IOC thread (callback, scan, CA) in process 50"),
        (["--bundle", DATA / "bundles" / "ioc", "--measure"], "--bundle: advises from the bundle's recorded facts"),
        (["--bundle", tmp_path], "not an rtqual bundle"),
    ):
        assert cli.main(["advise", *map(str, argv)]) == 1
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1, err


def traced_copy(tmp_path: Path) -> Path:
    """The frozen ioc bundle with its IOC case given one traced spike: the RT trace above as its lines."""
    b = tmp_path / "ioc"
    shutil.copytree(DATA / "bundles" / "ioc", b)
    case = b / "cases" / "002-ioc"
    (case / "spikes").mkdir()
    lines = [re.sub(r"\b200\b", "4289", x) for x in RT]  # the reader's tid in this bundle
    (case / "spikes" / "spike-001-cpu0.txt").write_text("\n".join(lines) + "\n")
    tasks = json.loads((case / "rt-tasks.json").read_text())  # its host had eth0 on IRQ 24, on CPU 1
    tasks[-1] |= {"name": "irq/24-eth0", "affinity": "1"}
    (case / "rt-tasks.json").write_text(json.dumps(tasks))
    result = json.loads((case / "result.json").read_text())
    end = T0 + 70_000
    result["spikes"] = [{"cpu": 0, "time_ns": end, "latency_ns": 70_000, "trace_file": "spikes/spike-001-cpu0.txt"}]
    (case / "result.json").write_text(json.dumps(result))
    return b


def test_advise_bundle_explains_its_ioc_case(capsys, tmp_path):
    result = advise_json(capsys, "--bundle", DATA / "bundles" / "ioc")
    assert {"preempt-model", "rt-throttling", "virtualized"} <= {f["id"] for f in result["findings"]}
    f = ioc_finding(result)
    assert f["path"] is None and f["severity"] == "info"  # a FIFO input: no interrupt thread to wait for
    assert "case 002-ioc: reader threads: rtqIn0 (FIFO 89); CPUs 0-1" in f["evidence"]
    assert "case 002-ioc: input: a FIFO the harness writes: no interrupt" in f["evidence"]
    named = ioc_finding(advise_json(capsys, "--bundle", DATA / "bundles" / "ioc", "--input-irq", "25-ACPI"))
    assert named["severity"] == "major" and "irq/25-ACPI:Ged (FIFO 50) (the input's) waits for rtqIn0" in str(named)
    f = ioc_finding(advise_json(capsys, "--bundle", traced_copy(tmp_path)))
    path = f["path"]
    assert path["responses"] == 1 and 0 < path["attributed_ns"] <= path["response_ns"] == 70_000
    assert f["severity"] == "major"  # the trace found irq/24-eth0 on the path, below rtqIn0 on a shared CPU
    assert any("trace: 34 us (49 %) irq/24-eth0 (FIFO 50) waiting for rtqIn0 (FIFO 89)" in e for e in f["evidence"])
    code = cli.main(["advise", "--bundle", str(traced_copy(tmp_path / "t"))])
    assert code == 0 and "[major] ioc-threads" in capsys.readouterr().out


def test_a_traced_service_case_keeps_every_cpus_lines_in_time_order():
    """Tracer(all_cpus=True) (a probe measured through a service): a spike's window holds the lines of every
    traced CPU from its deadline minus the margin to its wake-up; without it, its own CPU's only."""
    from collections import deque

    from rtqual.measure.host.trace import Tracer, line_ts, text_range

    def cut(all_cpus: bool) -> list[str]:
        t = Tracer([0, 1], all_cpus=all_cpus, margin_ns=0)
        for cpu in (0, 1):
            text = "\n".join(x for x in FIFO if f"[{cpu:03d}]" in x) + "\n"
            t._chunks[cpu] = deque([(*text_range(text), text)])  # as the reader keeps what it read
            t._newest[cpu] = T0 + 200_000
        t.spike(0, T0 + 100_000, 100_000)
        t._resolve(final=True)
        (w,) = t.take()
        return w["lines"]

    assert cut(True) == FIFO  # both CPUs' lines, in time order (FIFO is)
    assert [line_ts(x) for x in FIFO] == sorted(line_ts(x) for x in FIFO)
    assert cut(False) == [x for x in FIFO if "[000]" in x]


def test_the_ioc_fix_never_carries_a_threads_text():
    """An interrupt thread's name that is no kernel thread's (a bundle's rt-tasks.json says anything) or a
    priority that is no number: the chrt line is left out, the rest of the fix stays (issue 34 item 2)."""
    ioc = [iocpath.thread(10, "rtqIn0", "fifo", 90, "1")]
    good = iocpath.finding(ioc, [iocpath.thread(20, "irq/24-eth0", "fifo", 50, "1")], ["eth0"])
    assert "chrt -f -p 91 $(pgrep -x irq/24-eth0)" in good["fix"] and "--ioc-priority 49" in good["fix"]
    for comm in ("irq/24-eth0'; touch p; '", "irq/24-eth0$(touch p)", "irq/24-eth0\n[script]"):
        f = iocpath.finding(ioc, [iocpath.thread(20, comm, "fifo", 50, "1")], ["eth0"])
        assert "touch p" not in f["fix"] and "chrt -f" not in f["fix"] and "chrt line left out" in f["fix"], f["fix"]
    odd = iocpath.thread(20, "irq/24-eth0", "fifo", "50; touch p", "1")  # taken as 0: no priority to quote
    assert odd["priority"] == 0 and "touch p" not in iocpath.finding(ioc, [odd], ["eth0"])["fix"]

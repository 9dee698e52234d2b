"""A UIO interrupt case (event --source uio) in show, show --json's keys and the APS layout: the interrupt
accounting and the IRQ thread in words, the stages in timeline order, each under seed 001's interrupt table."""

from rtqual.publish import tables, views

STAT = {"count": 10, "min_ns": 1000, "p50_ns": 2000, "mean_ns": 2000, "p99_ns": 3000, "max_ns": 4000,
        "over_threshold": 1}  # fmt: skip


def uio_case(thread: bool = True, active: bool = True) -> dict:
    names = [n for n in views.UIO_STAGES if (active or n != "hardirq") and (thread or "irq_thread" not in n)]
    irq = {"number": 22, "thread": "irq/22-uio_pci_generic", "policy": "fifo", "priority": 50, "cpu": 0}
    if not thread:
        irq = {"number": 22, "thread": None, "policy": None, "priority": None, "cpu": None}
    return {
        "id": "001-event", "label": "event uio", "probe": "event",
        "params": {"source": "uio", "mode": "active" if active else "passive", "t0": "t0 words", "threshold_ns": 2500},
        "stats": {**STAT, "over_threshold_pct": 10.0},
        "probe_summary": {
            "interrupts": {"raised": 12, "samples": 10, "warmup": 2, "missed": 0},
            "irq": irq,
            "stages": {n: dict(STAT) for n in reversed(names)},  # out of order: the views put them in order
        },
    }  # fmt: skip


def test_interrupt_lines_say_the_accounting_and_the_thread():
    (line,) = views.interrupt_lines(uio_case())
    assert "12 raised, 10 samples, 2 warm-up, 0 missed" in line and "IRQ 22, active" in line
    assert "IRQ thread irq/22-uio_pci_generic fifo 50 on CPU 0" in line
    (line,) = views.interrupt_lines(uio_case(thread=False))
    assert "no IRQ thread" in line
    assert views.interrupt_lines({"probe_summary": {"stages": {}}}) == []


def test_stage_table_in_timeline_order_then_the_total():
    table = views.stage_table(uio_case(active=False)).splitlines()[2:]
    rows = [r.split()[0] for r in table if not r.startswith("'-'")]  # the N note apart
    assert rows == [
        "irq_thread_woken",
        "irq_thread_running",
        "reader_woken",
        "reader_running",
        "read_returned",
        "total",
    ]


def test_aps_layout_puts_each_stage_under_its_interrupt_table():
    got = [(r["table"], r["case"].split(": ")[1]) for r in tables._aps_rows([uio_case()])]
    assert got == [("1", "hardirq"), ("2", "irq_thread_woken"), ("2", "irq_thread_running"), ("3", "reader_woken"),
                   ("3", "reader_running"), ("3", "read_returned"), ("1", "total")]  # fmt: skip
    text = views.paper_table([uio_case(thread=False)], "aps")
    assert "event uio: hardirq" in text and "irq_thread" not in text and "event uio: total" in text


def ioc_uio_case() -> dict:
    """An IOC case over UIO (ioc --input uio:DEV): the interrupt's stages, then the IOC's dispatch, chain, return."""
    case = uio_case()
    case.update(id="002-ioc", label="ioc kek callback uio 50 Hz", probe="iocresp")
    case["params"] = {**case["params"], "uio": "/dev/uio0"}
    stages = case["probe_summary"]["stages"]
    case["probe_summary"]["stages"] = {**{n: dict(STAT) for n in ("return", "chain", "dispatch")}, **stages}
    return case


def test_ioc_over_uio_stages_the_interrupts_first_then_the_iocs():
    table = views.stage_table(ioc_uio_case()).splitlines()[2:]
    rows = [r.split()[0] for r in table if not r.startswith("'-'")]
    assert rows == [*views.UIO_STAGES, "dispatch", "chain", "return", "total"]
    got = [(r["table"], r["case"].split(": ")[1]) for r in tables._aps_rows([ioc_uio_case()])]
    assert got[:6] == [("1", "hardirq"), ("2", "irq_thread_woken"), ("2", "irq_thread_running"),
                       ("3", "reader_woken"), ("3", "reader_running"), ("3", "read_returned")]  # fmt: skip
    assert got[6:] == [("4", "dispatch"), ("", "chain"), ("", "return"), ("5", "total")]  # the IOC's total: table 5

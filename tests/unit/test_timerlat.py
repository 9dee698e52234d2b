"""The timerlat probe's pure parts: trace lines to samples, the stage split, the per-CPU slot; its table entry."""

from rtqual import probes
from rtqual.measure.probes.timerlat import Slot, missed_periods, options, parse_sample, stages_of
from rtqual.measure.run import native
from rtqual.probes.catalog import PROBES

IRQ = "          <idle>-0       [001] d.h1.   105.363370: #7     context    irq timer_latency      1570 ns"
THREAD = "     timerlat/1-1277    [001] .....   105.363384: #7 context thread timer_latency     15930 ns"
USER = "       python3-900     [001] .....   105.363390: #7 context user-ret timer_latency     21000 ns"


def test_trace_lines_become_contexts_with_their_time():
    assert parse_sample(IRQ) == (7, "irq", 1570, 105_363_370_000)
    assert parse_sample(THREAD) == (7, "thread", 15930, 105_363_384_000)
    assert parse_sample(USER)[1] == "user"
    assert parse_sample("  bash-1 [001] ..... 1.0: sched_switch: prev_comm=x") is None


def test_stages_split_the_cumulative_latencies_and_add_up():
    parts = {"irq": 1570, "thread": 15930, "user": 21000}
    st = stages_of(parts)
    assert st == {"irq": 1570, "thread": 14360, "user": 5070} and sum(st.values()) == parts["user"]
    assert stages_of({"irq": 900, "thread": 800}) == {"irq": 900, "thread": 0}  # never negative


def test_a_slot_counts_a_sample_once_its_last_context_is_in():
    s = Slot(1, "thread")
    assert s.take(7, "irq", 1570) is None and s.hist.count == 0
    assert s.take(7, "thread", 15930) == {"irq": 1570, "thread": 15930}
    assert s.hist.count == 1 and s.hist.max_ns == 15930 and s.stages["thread"].max_ns == 14360
    assert s.take(8, "thread", 20000) is not None and s.stages["irq"].count == 1  # irq line lost: no irq stage
    for seq in range(100, 300):  # contexts that never complete are bounded
        s.take(seq, "irq", 1)
    assert len(s.pending) <= 64


def test_timerlat_is_a_probe_of_the_table_run_by_this_python():
    assert "timerlat" in PROBES and probes.has_section("timerlat", "stages")
    assert native.command_for("timerlat")[1:] == ["-m", "rtqual.measure.probes.timerlat"]
    assert PROBES["timerlat"].params["interval"].default == "1ms"


def test_options_refuse_what_the_tracer_cannot_do():
    import pytest

    from rtqual.errors import RtqError

    with pytest.raises(RtqError, match="whole microseconds"):
        options(["--interval", "100500ns"])
    with pytest.raises(RtqError, match="out of range"):
        options(["--interval", "10us"])


def test_periods_without_a_sample_are_overruns():
    ms = 1_000_000
    assert missed_periods(3000, 3000 * ms, ms) == 0
    assert missed_periods(1760, 3000 * ms + ms // 2, ms) == 1240  # a partial period is not yet owed
    assert missed_periods(3001, 3000 * ms, ms) == 0  # never negative (the window's edges)

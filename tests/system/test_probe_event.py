"""Short real `event` probe runs (root): stimulus -> epoll wake-up response. Invariants only."""

import pytest

from conftest import needs_probe, needs_root, one, probe_records, run_case
from rtqual.measure.run import native

pytestmark = [needs_probe, needs_root]


def run_probe(*args, timeout=60):
    return probe_records("event", *args, timeout=timeout)


@pytest.mark.parametrize("stimulus", ["thread", "process"])
@pytest.mark.parametrize("source", ["eventfd", "fifo", "timerfd"])
def test_one_response_per_stimulus(source, stimulus):
    out, recs = run_probe(
        "--source", source, "--stimulus", stimulus, "--rate", "1000", "--loops", "500", "--warmup", "20"
    )
    assert out.returncode == 0, out.stderr
    header, summary, end = one(recs, "header"), one(recs, "summary"), one(recs, "end")
    assert end["status"] == 0 and end["reason"] == "completed"
    assert header["params"]["source"] == source and header["params"]["stimuli_planned"] == 520
    assert header["rt"]["policy"] == "fifo" and not header["rt"]["degraded"]
    (cpu,) = summary["cpus"]
    assert cpu["cpu"] == header["params"]["cpu"]  # the slot is the responder's CPU
    st = summary["stimuli"]
    # exactly one response per stimulus: every stimulus sent is a sample, an overrun or warm-up
    assert st["sent"] == st["planned"] == 520 and st["failed"] == 0 and st["unanswered"] == 0
    assert cpu["count"] + cpu["overruns"] + st["warmup"] == st["sent"]
    assert cpu["count"] + cpu["overruns"] == 500
    assert 0 < cpu["min_ns"] <= cpu["p50_ns"] <= cpu["p99_ns"] <= cpu["p999_ns"] <= cpu["max_ns"]
    hist = one(recs, "hist")
    assert sum(c for _, c in hist["counts"]) == cpu["count"] == hist["count"]
    assert cpu["wakeups"] >= cpu["count"]


def test_duration_mode_counts():
    out, recs = run_probe("--rate", "500", "--duration", "1s", "--warmup", "0", "--cpu", "0", "--stimulus-cpu", "0")
    assert out.returncode == 0, out.stderr
    summary = one(recs, "summary")
    cpu, st = summary["cpus"][0], summary["stimuli"]
    assert cpu["cpu"] == 0 and st["sent"] == 500
    assert cpu["count"] + cpu["overruns"] == 500
    assert any(r["type"] == "event" and "share CPU" in r.get("message", "") for r in recs)


def test_gpio_without_chip_skips():
    out, recs = run_probe("--source", "gpio", "--loops", "10")
    assert out.returncode == 3 and not recs
    assert "/dev/gpiochip" in out.stderr and out.stderr.count("\n") == 1


def test_timerlat_absent_skips():
    out, recs = run_probe("--timerlat", "--loops", "10")
    if out.returncode == 0:
        pytest.skip("timerlat available here")
    assert out.returncode == 3 and "timerlat" in out.stderr and not recs


def test_bad_option_one_line():
    out, _ = run_probe("--rate", "1kHz")
    assert out.returncode == 1 and out.stderr.startswith("rtqual-probe: error: --rate")


def test_list_marks_event_supported():
    rows = {r["name"]: r for r in native.probe_list()}
    assert rows["event"]["supported"] is True


def test_through_pipeline(tmp_path):
    case = run_case(tmp_path / "b", "event", "--duration", "2s", "--rate", "500", "--warmup", "0")
    s = case["stats"]
    assert s["count"] + s["overruns"] == 1000
    assert s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"]

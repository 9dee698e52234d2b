"""The osnoise run beside the noise probe, its pure parts: the tracer's period lines (the format of
Documentation/trace/osnoise-tracer.rst; the real run is tests/kernels' noise case in the RT guest) to per-CPU
figures, the ratio to rtqual's own, the knobs journaled and put back by `rtqual restore`, and the words
`rtqual show` prints."""

import json
from pathlib import Path

import pytest

from rtqual import cli
from rtqual.measure.conditions.applier import Conditions
from rtqual.measure.conditions.journal import refusal
from rtqual.measure.host import osnoise
from rtqual.publish.views import noise_lines
from rtqual.results.stream import Stream

LINE = (  # the documentation's example line (Documentation/trace/osnoise-tracer.rst)
    "           <...>-859     [000] ....    81.637220: 1000000        190  99.98100       9     18      0   1007"
    "     18      1"
)
# synthetic per-period lines of one CPU in the tracer's format (five flag columns, as 6.1 prints them)
SAMPLE = "\n".join(
    f"      osnoise/1-290     [001] .....   {81 + i * 0.05:.6f}:   45000   {noise:>6}  {100 - noise / 450:.5f}"
    f"  {peak:>6}  {hw:>5}      0  {irq:>5}      0  {thread:>5}"
    for i, (noise, peak, hw, irq, thread) in enumerate(
        [(17000, 9222, 40, 10, 1), (20311, 5000, 47, 11, 0), (9000, 3000, 45, 9, 2), (0, 0, 0, 0, 0)]
    )
)


def test_a_period_line_gives_its_fields():
    p = osnoise.parse_period(LINE)
    assert p == {
        "cpu": 0, "ts_ns": 81_637_220_000, "runtime_us": 1_000_000, "noise_us": 190, "available_pct": 99.981,
        "max_single_us": 9, "hw": 18, "nmi": 0, "irq": 1007, "sirq": 18, "thread": 1,
    }  # fmt: skip
    five_flags = LINE.replace("....  ", "d..2. ")  # newer kernels print five flag columns
    assert osnoise.parse_period(five_flags)["noise_us"] == 190
    for other in ("# tracer: osnoise", "#           TASK-PID      CPU# ||||   TIMESTAMP    IN US", ""):
        assert osnoise.parse_period(other) is None


def test_the_recorded_sample_adds_up_per_cpu_with_invariants():
    lines = SAMPLE.splitlines()
    periods = [p for p in map(osnoise.parse_period, lines) if p]
    assert periods and {p["cpu"] for p in periods} == {1}
    (row,) = osnoise.tally(lines, [1])
    assert row["periods"] == len(periods)
    assert row["runtime_ns"] == sum(p["runtime_us"] for p in periods) * 1000
    assert row["noise_ns"] == sum(p["noise_us"] for p in periods) * 1000 <= row["runtime_ns"]
    assert 0 <= row["max_single_noise_ns"] <= row["noise_ns"]
    assert row["noise_ns_per_s"] == round(row["noise_ns"] * 1e9 / row["runtime_ns"])
    assert all(v >= 0 for v in row["counts"].values()) and set(row["counts"]) == set(osnoise.COUNTS)
    for p in periods:  # the kernel's own figures agree with each other
        assert p["max_single_us"] <= p["noise_us"] <= p["runtime_us"]
        assert p["available_pct"] == pytest.approx(100 * (1 - p["noise_us"] / p["runtime_us"]), abs=0.01)


def test_tally_keeps_the_cpus_asked_and_the_window():
    other = LINE.replace("[000]", "[003]")
    late = LINE.replace("81.637220", "99.000000")
    rows = osnoise.tally([LINE, other, late, "junk"], [0, 1], window=(81_000_000_000, 82_000_000_000))
    assert [r["cpu"] for r in rows] == [0, 1]
    assert rows[0]["periods"] == 1 and rows[0]["noise_ns"] == 190_000 and rows[0]["counts"]["irq"] == 1007
    assert rows[1]["periods"] == 0 and rows[1]["noise_ns_per_s"] is None  # no period: no figure, not 0


def test_figures_put_rtqual_beside_osnoise_with_the_ratio():
    rows = osnoise.tally([LINE, LINE.replace("[000]", "[001]").replace(" 190 ", " 380 ")], [0, 1])
    ours = {"cpus": [{"cpu": 0, "noise_ns_per_s": 380_000}, {"cpu": 1, "noise_ns_per_s": 95_000}], "noise": {}}
    ours["noise"]["noise_ns_per_s"] = 237_000
    f = osnoise.figures(rows, ours)  # 190 and 380 us of noise in 1 s each
    assert [r["ratio"] for r in f["cpus"]] == [2.0, 0.25] and f["cpus"][0]["rtqual_noise_ns_per_s"] == 380_000
    assert f["noise_ns_per_s"] == 285_000 and f["ratio"] == 0.832
    assert f["periods"] == 2 and f["max_single_noise_ns"] == 9000 and f["counts"]["irq"] == 2014
    assert osnoise.ratio(100, 0) is None and osnoise.ratio(None, 5) is None


def fake_tracefs(root: Path) -> Path:
    """A folder shaped like tracefs's osnoise/ knobs and tracing_thresh, at the tracer's defaults."""
    (root / "osnoise").mkdir(parents=True)
    (root / "instances").mkdir()
    for name, value in {"cpus": "0-3", "period_us": "1000000", "runtime_us": "1000000"}.items():
        (root / "osnoise" / name).write_text(value + "\n")
    for name in ("stop_tracing_us", "stop_tracing_total_us"):
        (root / "osnoise" / name).write_text("0\n")
    (root / "tracing_thresh").write_text("0\n")
    return root


def test_knobs_are_journaled_before_written_and_restored(tmp_path, monkeypatch):
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setenv("RTQUAL_TRACEFS", str(root))
    journal = Conditions(state_path=tmp_path / "changes.json")
    k = osnoise.Knobs(root, journal)
    for name, value in (("cpus", "1"), ("period_us", "50000"), ("runtime_us", "45000"), ("tracing_thresh", "1")):
        k.set(name, value)
    assert (root / "osnoise" / "period_us").read_text() == "50000" and (root / "tracing_thresh").read_text() == "1"
    saved = json.loads((tmp_path / "changes.json").read_text())["changes"]
    assert [(r["kind"], Path(r["knob"]).name, r["before"]) for r in saved] == [
        ("osnoise", "cpus", "0-3"), ("osnoise", "period_us", "1000000"), ("osnoise", "runtime_us", "1000000"),
        ("osnoise", "tracing_thresh", "0"),
    ]  # fmt: skip
    assert [refusal(r, mounts_text="") for r in saved] == [None] * 4  # `rtqual restore` may act on each
    assert k.restore() == []
    assert (root / "osnoise" / "runtime_us").read_text() == "1000000" and (root / "osnoise" / "cpus").read_text()
    assert all(r["restored"] for r in json.loads((tmp_path / "changes.json").read_text())["changes"])


def test_rtqual_restore_puts_back_the_knobs_of_a_killed_run(tmp_path, monkeypatch, capsys):
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setenv("RTQUAL_TRACEFS", str(root))
    bundle = tmp_path / "b"
    (bundle / "host").mkdir(parents=True)
    (bundle / "manifest.json").write_text(json.dumps({"schema_version": 1, "status": "running", "checksums": {}}))
    k = osnoise.Knobs(root, Conditions(state_path=bundle / "host" / "changes.json"))
    k.set("runtime_us", "45000")
    k.set("period_us", "50000")  # ... and the run is killed here
    assert cli.main(["restore", str(bundle)]) == 0, capsys.readouterr().err
    assert (root / "osnoise" / "period_us").read_text() == "1000000"
    assert (root / "osnoise" / "runtime_us").read_text() == "1000000"


@pytest.mark.parametrize(
    "knob,before,says",
    [
        ("osnoise/options", "OSNOISE_WORKLOAD", "not a value rtqual writes back"),  # --hw writes one option only
        ("osnoise/period_us", "1; reboot", "not a value rtqual writes back"),
        ("current_tracer", "nop", "not an osnoise knob"),
    ],
)
def test_restore_refuses_other_files_and_values(tmp_path, monkeypatch, knob, before, says):
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setenv("RTQUAL_TRACEFS", str(root))
    assert says in refusal({"knob": str(root / knob), "kind": "osnoise", "before": before}, mounts_text="")
    outside = {"knob": "/etc/osnoise/period_us", "kind": "osnoise", "before": "5"}
    assert "not an osnoise knob of a mounted tracefs" in refusal(outside, mounts_text="")


def noise_stream(osnoise_present: bool, hwlat: bool = False) -> Stream:
    """A noise probe's header and summary as its stream gives them (one CPU)."""
    s = Stream()
    note = "osnoise tracer present (rtla osnoise gives the kernel's view)" if osnoise_present else ""
    note = (note or "osnoise tracer absent") + ("; hwlat tracer present" if hwlat else "; hwlat tracer absent")
    s.header = {"params": {"cpus": [1], "duration_ns": 10**9, "gap_ns": 1000}, "rt": {"policy": "fifo", "priority": 1}}
    s.summary = {
        "cpus": [{"cpu": 1, "gaps": 40, "noise_ns_per_s": 2000, "largest_gap_ns": 30000, "steal_ns": None}],
        "noise": {"noise_ns_per_s": 2000, "osnoise_tracer": osnoise_present, "hwlat_tracer": hwlat},
    }
    s.summary["noise"]["tracer_note"] = note
    return s


def test_beside_runs_the_tracer_only_where_present_and_says_so(monkeypatch):
    calls = []

    def measure(cpus, duration_ns, gap_ns, policy, priority, journal, stopped):  # the tracefs part: lab-tested
        calls.append((cpus, duration_ns, gap_ns, policy, priority))
        return {"tracer": "osnoise", "note": None, "rows": osnoise.tally(SAMPLE.splitlines(), cpus)}

    monkeypatch.setattr(osnoise, "measure", measure)
    absent = noise_stream(False)
    osnoise.beside(absent, None, lambda: False)
    assert not calls and "osnoise" not in absent.summary["noise"]
    assert absent.summary["noise"]["tracer_note"] == "osnoise tracer absent; hwlat tracer absent"
    present = noise_stream(True, hwlat=True)
    osnoise.beside(present, None, lambda: False)
    assert calls == [([1], 10**9, 1000, "fifo", 1)]
    n = present.summary["noise"]
    assert n["osnoise"]["cpus"][0]["periods"] > 0 and n["osnoise"]["cpus"][0]["rtqual_noise_ns_per_s"] == 2000
    assert n["tracer_note"].startswith("osnoise tracer present: its figures beside (noise.osnoise")
    assert "hwlat tracer present, not run" in n["tracer_note"]
    lines = noise_lines({"probe_summary": present.summary})
    assert lines[0].startswith("noise CPU 1: rtqual 2us/s in 40 gaps, largest 30us; osnoise ")
    assert (
        lines[0].endswith(f"rtqual/osnoise {n['osnoise']['ratio']:.3g}")
        and n["osnoise"]["ratio"] > 0
        and "HW " in lines[0]
        and lines[-1].startswith("tracers: osnoise tracer")
    )


def test_a_tracer_that_could_not_run_is_said_not_hidden(monkeypatch):
    monkeypatch.setattr(osnoise, "measure", lambda *a: {"tracer": "osnoise", "note": "could not run: Device busy"})
    s = noise_stream(True)
    osnoise.beside(s, None, lambda: False)
    n = s.summary["noise"]
    assert n["osnoise"]["periods"] == 0 and n["osnoise"]["noise_ns_per_s"] is None
    assert n["tracer_note"] == "osnoise tracer present; could not run: Device busy; hwlat tracer absent"
    assert not any("; osnoise " in line for line in noise_lines({"probe_summary": s.summary}))


def test_show_prints_nothing_for_other_probes():
    assert noise_lines({"probe_summary": {"cpus": [{"cpu": 1}]}}) == [] and noise_lines({}) == []


def test_hw_is_refused_in_one_line_where_the_kernel_has_no_hwnoise_mode(tmp_path, monkeypatch):
    """`--hw` needs the osnoise tracer and its OSNOISE_IRQ_DISABLE option: said before anything runs."""
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setenv("RTQUAL_TRACEFS", str(root))
    (root / "available_tracers").write_text("function nop\n")
    assert "has no osnoise tracer" in osnoise.hw_unavailable()
    (root / "available_tracers").write_text("osnoise timerlat nop\n")
    (root / "osnoise" / "options").write_text("DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP\n")
    assert "no OSNOISE_IRQ_DISABLE option" in osnoise.hw_unavailable()
    (root / "osnoise" / "options").write_text("DEFAULTS OSNOISE_WORKLOAD NO_OSNOISE_IRQ_DISABLE\n")
    assert osnoise.hw_unavailable() is None


def test_hw_sets_the_irq_option_journaled_and_puts_it_back(tmp_path, monkeypatch):
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setenv("RTQUAL_TRACEFS", str(root))
    (root / "osnoise" / "options").write_text("DEFAULTS OSNOISE_WORKLOAD NO_OSNOISE_IRQ_DISABLE\n")
    journal = Conditions(state_path=tmp_path / "changes.json")
    k = osnoise.Knobs(root, journal)
    k.option(osnoise.IRQ_OPTION, True)
    assert (root / "osnoise" / "options").read_text() == "OSNOISE_IRQ_DISABLE"
    saved = json.loads((tmp_path / "changes.json").read_text())["changes"]
    assert [(Path(r["knob"]).name, r["before"]) for r in saved] == [("options", "NO_OSNOISE_IRQ_DISABLE")]
    assert refusal(saved[0], mounts_text="") is None  # `rtqual restore` may write it back
    assert k.restore() == [] and (root / "osnoise" / "options").read_text() == "NO_OSNOISE_IRQ_DISABLE"


def test_beside_with_hw_runs_the_hwnoise_mode_after_osnoise_or_says_why_not(monkeypatch):
    calls = []

    def measure(cpus, duration_ns, gap_ns, policy, priority, journal, stopped, irq_disable=False):
        calls.append(irq_disable)
        rows = osnoise.tally(SAMPLE.splitlines(), cpus)
        return {"tracer": "osnoise", "note": None, "rows": rows, **({"mode": "hwnoise"} if irq_disable else {})}

    monkeypatch.setattr(osnoise, "measure", measure)
    monkeypatch.setattr(osnoise, "hw_unavailable", lambda: None)
    s = noise_stream(True)
    osnoise.beside(s, None, lambda: False, hw=True)
    n = s.summary["noise"]
    assert calls == [False, True] and n["hwnoise"]["mode"] == "hwnoise" and n["hwnoise"]["periods"] > 0
    assert any(
        line.startswith("hwnoise (osnoise with interrupts off") for line in noise_lines({"probe_summary": s.summary})
    )
    absent = noise_stream(False)
    osnoise.beside(absent, None, lambda: False, hw=True)
    assert calls == [False, True] and "no osnoise tracer" in absent.summary["noise"]["hwnoise"]["note"]


def test_run_noise_hw_is_refused_here_in_one_line(tmp_path, capsys):
    """This host's kernel has no osnoise tracer (FIELD-NOTES): `run noise --hw` says so and runs nothing."""
    if osnoise.hw_unavailable() is None:
        pytest.skip("this kernel has the hwnoise mode: tests/kernels test_kernel.py runs it")
    assert cli.main(["run", "noise", "--hw", "--duration", "1s", "-o", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--hw" in err[0] and not (tmp_path / "b").exists()

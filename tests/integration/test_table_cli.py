"""`rtqual table LAYOUT BUNDLE... [--csv]`: every preset's kind of bundle in the layout of its paper (the frozen
bundles: timer, ioc + timer baseline, a scenario with a load; bundles written here for the APS Coldfire,
MADOCA and VME scenarios' probes), the paper's rows beside rtqual's, one unit per column; refused on the
wrong data with one line and exit 1; the CSV the same rows."""

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from rtqual import cli
from rtqual.answers.verdict import summarize
from rtqual.publish import tables
from rtqual.results import bundle
from rtqual.results.hist import Histogram
from rtqual.results.stream import read_stream

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles"
PAPER = tables.paper_values()
NS = {"µs": 1e3, "ms": 1e6}
STAT_OF = {"Minimum": "min_ns", "Average": "mean_ns", "Median": "p50_ns", "Maximum": "max_ns"}
STAT_OF |= {"Standard deviation": "stddev_ns", "Context switch mean": "mean_ns", "SD": "stddev_ns"}


def stream_of(values, probe, params, threshold_ns=100_000, cpu=0):
    """A finished probe stream of these latencies (ns) on one CPU."""
    h = Histogram()
    for v in values:
        h.record(v)
    over = sum(v > threshold_ns for v in values)
    recs = [
        {"type": "header", "probe": probe, "params": params, "rt": {"degraded": False}},
        {"type": "hist", "cpu": cpu, **h.to_record()},
        {"type": "summary", "cpus": [{"cpu": cpu, "overruns": 0, "over_threshold": over}]},
        {"type": "end", "status": 0, "reason": "completed"},
    ]
    return read_stream(json.dumps(r) + "\n" for r in recs)


def write_bundle(path: Path, cases: list[tuple[str, str, dict, list[int], dict | None]]) -> Path:
    """A bundle on disk, as a run writes it, of (label, probe, params, latencies in ns, probe summary) cases."""
    b = bundle.Bundle(path, ["rtqual", "run"], "0.1.0")
    for i, (label, probe, params, values, summary) in enumerate(cases, 1):
        params = {"threshold_ns": 100_000, **params}
        case = {"id": f"{i:03d}-c", "label": label, "probe": probe, "args": [], "params": params, "requirements": {}}
        r = summarize(case, stream_of(values, probe, params), 0, "")
        r.update(probe=probe, params=params)
        if summary:
            r["probe_summary"] = summary
        b.case_dir(r["id"])
        bundle.write_json(path / "cases" / r["id"] / "result.json", r)
        b.add_case(r)
    b.finish("complete", "pass")
    return path


US = [20_000, 30_000, 45_000, 250_000]
COLDFIRE = [  # scenarios/aps-coldfire-2010.toml's probes
    ("interrupt idle", "event", {"source": "eventfd", "stimulus": "thread"}, US, None),
    ("bottom half to user idle", "event", {"source": "fifo", "stimulus": "process"}, US, None),
    ("context switch idle", "switch", {"mode": "process", "ipc": "pipe"}, US, None),
    ("total response idle", "event", {"source": "timerfd", "stimulus": "kernel_timer"}, US, None),
]
MADOCA = [  # scenarios/spring8-madoca-2013.toml's
    ("RT + binding", "msg", {"transport": "zmq-tcp"}, [1_100_000, 1_300_000, 1_800_000], None),
    ("TS", "msg", {"transport": "zmq-tcp"}, [1_000_000, 1_200_000, 9_000_000], None),
]


def pio(label, width, op, mb_s):
    summary = {"type": "summary", "cpus": [{"cpu": 0, "throughput_mb_s": mb_s, "width_bits": width, "op": op}]}
    return (label, "pio", {"width_bits": width, "op": op}, [900, 1000, 1100], summary)


VME = [  # scenarios/spring8-vme-2001.toml's
    ("task switch idle", "rhealstone", {"component": "task-switch"}, [2_000, 3_000, 9_000], None),
    ("process switch cpu-hog", "switch", {"mode": "process", "ipc": "pipe"}, [4_000, 5_000, 80_000], None),
    pio("pio 8 read", 8, "read", 500.0),
    pio("pio 32 read", 32, "read", 2000.0),
]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """Every preset's kind of bundle: the frozen ones (copied: a run never writes into tests/data) and three
    written here."""
    root = tmp_path_factory.mktemp("tables")
    out = {name: Path(shutil.copytree(DATA / name, root / name)) for name in ("timer-raw", "ioc", "scenario")}
    out["coldfire"] = write_bundle(root / "coldfire", COLDFIRE)
    out["madoca"] = write_bundle(root / "madoca", MADOCA)
    out["vme"] = write_bundle(root / "vme", VME)
    return out


def table(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(["table", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def csv_rows(capsys, *args) -> list[dict]:
    code, out, err = table(capsys, *args, "--csv")
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


@pytest.fixture
def show(capsys):
    """label -> the case as `rtqual show --json` gives it."""

    def run(path: Path) -> dict[str, dict]:
        assert cli.main(["show", str(path), "--json"]) == 0
        return {c["label"]: c for c in json.loads(capsys.readouterr().out)["cases"]}

    return run


ACCEPTED = [
    ("kek", "timer-raw"),
    ("kek", "ioc"),
    ("kek", "scenario"),
    ("aps", "ioc"),
    ("aps", "coldfire"),
    ("aps", "scenario"),
    ("madoca", "madoca"),
    ("vme", "vme"),
]


@pytest.mark.parametrize("layout,name", ACCEPTED)
def test_paper_rows_beside_rtqual_rows_one_unit_per_column(capsys, bundles, show, layout, name):
    cases = show(bundles[name])
    rows = csv_rows(capsys, layout, bundles[name])
    paper = [r for r in rows if r["source"].startswith("paper ")]
    ours = [r for r in rows if r["source"] == name]
    assert len(paper) + len(ours) == len(rows)
    assert sorted(r["case"] for r in paper) == sorted(p["label"] for p in PAPER[layout]["rows"])
    assert {r["source"] for r in paper} == {f"paper {p['seed']}" for p in PAPER[layout]["rows"]}
    for label in cases:  # every case has its row(s), the label marked "(!)" when it ran degraded
        named = [r["case"].replace(" (!)", "") for r in ours]
        assert any(n == label or n.startswith(label + ": ") for n in named), label
    # one unit per column, named in its header: every rtqual number is the stored statistic in that unit
    checked = 0
    for head in rows[0]:
        unit = next((u for u in NS if f"({u})" in head), None)
        stat = next((k for h, k in STAT_OF.items() if head.startswith(h)), None)
        if unit is None or stat is None:
            continue
        for r in ours:
            label = r["case"].replace(" (!)", "")
            if r[head] in ("", "-") or label not in cases or not _all_cpu_row(cases[label], r.get("CPU")):
                continue  # an IOC stage, a per-CPU row (test_kek_has_minimum_and_per_cpu_rows), not this kind
            want = cases[label]["stats"][stat] / NS[unit]
            assert float(r[head]) == pytest.approx(want, abs=0.051 if unit == "µs" else 0.00051), (head, r)
            checked += 1
        for r in paper:  # the paper's numbers as printed (digits, ~about, lo-hi ranges)
            assert r[head] == "" or r[head].lstrip("~").replace("-", "").replace(".", "").isdigit()
    assert checked >= len(cases)


def _all_cpu_row(case: dict, cpu: str | None) -> bool:
    """Whether a row with this CPU cell is the case's all-CPU row (no CPU column; an IOC's; all its CPUs)."""
    from rtqual.units import format_cpulist

    if cpu is None or cpu.endswith("(IOC)"):
        return True
    return cpu == format_cpulist(sorted(int(k) for k in case.get("per_cpu", {})))


REFUSED = [
    ("vme", "madoca", "layout vme is for context-switch and PIO/transfer cases; madoca has msg cases"),
    ("vme", "timer-raw", "layout vme is for context-switch and PIO/transfer cases; timer-raw has timer cases"),
    ("madoca", "ioc", "layout madoca is for message round-trip cases (msg, ca-rtt, pva-rtt); ioc has ioc, timer cases"),
    (
        "kek",
        "vme",
        "layout kek is for timer-latency and IOC-response cases; vme has pio, rhealstone task-switch, switch cases",
    ),
    ("kek", "coldfire", "layout kek is for timer-latency and IOC-response cases; coldfire has event, switch cases"),
    ("aps", "madoca", "has msg cases"),
    ("aps", "vme", "has pio cases"),
]


@pytest.mark.parametrize("layout,name,message", REFUSED)
def test_a_layout_refuses_data_of_another_kind_in_one_line(capsys, bundles, layout, name, message):
    code, out, err = table(capsys, layout, bundles[name])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("rtqual: error: ") and message in err


def test_unknown_layout_and_missing_bundle_are_one_line_errors(capsys, bundles, tmp_path):
    for args in (["nosuch", bundles["vme"]], ["vme", tmp_path / "nothing"]):
        code, out, err = table(capsys, *args)
        assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("rtqual: error: ")


def test_kek_has_minimum_and_per_cpu_rows(capsys, bundles, show):
    cases = show(bundles["ioc"])
    rows = csv_rows(capsys, "kek", bundles["ioc"])
    base = [r for r in rows if r["case"] == "timer baseline 0-1"]
    assert [r["CPU"] for r in base] == ["0-1", "0", "1"]  # all CPUs, then each
    for r in base[1:]:
        s = cases["timer baseline 0-1"]["per_cpu"][r["CPU"]]
        assert float(r["Minimum (µs)"]) == pytest.approx(s["min_ns"] / 1e3, abs=0.051)
        assert float(r["Maximum (µs)"]) == pytest.approx(s["max_ns"] / 1e3, abs=0.051)
    ioc = [r for r in rows if r["case"] == "ioc kek callback 50 Hz"]
    assert len(ioc) == 1 and ioc[0]["CPU"].endswith("(IOC)")  # the IOC's CPUs, not the harness's cpu0
    best = next(r for r in rows if r["source"] == "paper 000" and "best" in r["case"])
    assert (best["Average (µs)"], best["Maximum (µs)"], best["Minimum (µs)"]) == ("8", "50", "")  # none given


def test_vme_context_switch_mean_sd_apart_from_transfer_speed_normalised(capsys, bundles, show):
    cases = show(bundles["vme"])
    rows = csv_rows(capsys, "vme", bundles["vme"])
    ours = {r["case"]: r for r in rows if r["source"] == "vme"}
    for label in ("task switch idle", "process switch cpu-hog"):
        r = ours[label]
        assert float(r["Context switch mean (µs)"]) == pytest.approx(cases[label]["stats"]["mean_ns"] / 1e3, abs=0.051)
        assert r["Transfer (MB/s)"] == r["Transfer (relative)"] == ""  # not a transfer case
    p8, p32 = ours["pio 8 read"], ours["pio 32 read"]
    assert p8["Context switch mean (µs)"] == p8["SD (µs)"] == ""  # PIO times not under context switch
    assert (p8["Transfer (MB/s)"], p8["Transfer (relative)"]) == ("500.0", "1.00")  # the reference case
    assert (p32["Transfer (MB/s)"], p32["Transfer (relative)"]) == ("2000.0", "4.00")
    names = [r["case"] for r in rows]  # Table 3 (paper, rtqual), then Fig. 1 (paper, rtqual)
    assert names.index("Advme8001/Linux (2.2.9), CPU load") < names.index("task switch idle")
    assert names.index("process switch cpu-hog") < names.index("HP743rt/HP-RT, D8 (Fig. 1 reference)")
    assert names.index("PCISYS-56A/Solaris 7 (TS class), Fig. 1") < names.index("pio 8 read")
    hp = next(r for r in rows if r["case"] == "HP743rt/HP-RT, no load")
    assert (hp["Context switch mean (µs)"], hp["SD (µs)"]) == ("194.3", "49.9")


def test_several_bundles_rows_labelled_with_their_names_and_relative_to_the_first(capsys, bundles, tmp_path):
    faster = write_bundle(
        tmp_path / "faster", [pio("pio 8 read", 8, "read", 750.0), pio("pio 32 read", 32, "read", 1000.0)]
    )
    rows = csv_rows(capsys, "vme", bundles["vme"], faster)
    ours = {(r["source"], r["case"]): r for r in rows if not r["source"].startswith("paper")}
    assert ours[("faster", "pio 8 read")]["Transfer (relative)"] == "1.50"  # over vme's pio 8 read
    assert ours[("faster", "pio 32 read")]["Transfer (relative)"] == "0.50"  # over vme's pio 32 read
    assert ours[("vme", "pio 32 read")]["Transfer (relative)"] == "1.00"
    kek = csv_rows(capsys, "kek", bundles["scenario"], bundles["ioc"])
    assert {r["source"] for r in kek} == {"paper 000", "paper 002", "scenario", "ioc"}


def test_aps_rows_under_the_paper_table_they_correspond_to(capsys, bundles):
    rows = csv_rows(capsys, "aps", bundles["coldfire"], bundles["ioc"])
    table_of = {r["case"]: r["Table"] for r in rows if not r["source"].startswith("paper")}
    assert table_of["interrupt idle"] == "1" and table_of["bottom half to user idle"] == "3"
    assert table_of["context switch idle"] == "4" and table_of["total response idle"] == "5"
    assert table_of["ioc kek callback 50 Hz: wake"] == "1" and table_of["ioc kek callback 50 Hz: total"] == "5"
    assert table_of["timer baseline 0-1"] == ""  # no paper table: last
    assert [r["Table"] for r in rows] == sorted((r["Table"] for r in rows), key=lambda t: (t == "", t))
    isr = next(r for r in rows if r["Table"] == "4" and "user level ISR" in r["case"])
    assert (isr["threshold (µs)"], isr["> threshold (%)"]) == ("1000", "0.932")  # the paper's footnote '*'
    ours = next(r for r in rows if r["case"] == "interrupt idle")
    assert (ours["> threshold (%)"], ours["threshold (µs)"]) == ("25.000", "100")  # 1 of 4 over 100 µs


def test_csv_is_the_text_tables_rows(capsys, bundles):
    for layout, name in ACCEPTED:
        code, text, _ = table(capsys, layout, bundles[name])
        rows = list(csv.reader(io.StringIO(table(capsys, layout, bundles[name], "--csv")[1])))
        assert code == 0 and len({len(r) for r in rows}) == 1
        lines = text.splitlines()
        assert lines[1].split()[:2] == rows[0][:2] == ["source", "case"]
        assert len(rows) - 1 == lines.index("") - 3  # title, header, rule; the notes after an empty line
        for row, line in zip(rows[1:], lines[3:]):
            assert line.startswith(row[0]) and row[1] in line


def test_table_of_a_degraded_case_is_marked(capsys, bundles):
    code, out, _ = table(capsys, "kek", bundles["scenario"])  # its hackbench case: governor not applied
    assert code == 0 and "timer hackbench (!)" in out and "(!) ran degraded or with a condition not applied" in out


def test_paper_values_each_have_a_source_and_no_empty_row_without_a_reason():
    assert set(PAPER) >= set(tables.LAYOUTS) and set(tables.LAYOUTS) == {"kek", "aps", "madoca", "vme"}
    for layout, lay in tables.LAYOUTS.items():
        keys = {c.key for c in lay.columns if c.digits is not None}
        for row in PAPER[layout]["rows"]:
            assert row["seed"] in PAPER["papers"] and row["source"].startswith(f"seed {row['seed']}")
            assert set(row["values"]) <= keys, (layout, row["label"])
            if not row["values"] or (layout == "kek" and "max_us" not in row["values"]):
                assert row.get("missing"), row["label"]  # says why its cells are empty

"""Every view tells the bundle's truth (issue 35): frozen bundles made to carry each caveat (an emulated host, a
container, steal, load during an idle case, a condition not applied, a degraded run, a probe that failed with
its cause only in its end record, a network load that never reaches the IOC, too few samples), then every view
(show, show --json, report HTML, compare text/JSON/HTML, table, fleet text/HTML, history) must state each one
(a view that forgets one fails); percentiles only where N carries them; compare shows every bundle."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import seal
from rtqual import cli
from rtqual.answers import caveats
from rtqual.publish import report
from rtqual.results import bundle as bundle_mod

FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"
STAT_COLUMNS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
HOST_KINDS = ("emulated", "container")
CASE_KINDS = ("steal", "not-idle", "not-applied", "degraded", "probe-error", "load-unreached", "few-samples")


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def emulated(facts: dict, host: str, release: str, model: str) -> None:
    facts["hostname"] = host
    facts.setdefault("virtualization", {})["systemd_detect_virt_vm"] = "qemu"  # QEMU without KVM: emulated
    facts["kernel"]["release"] = release
    facts["preempt"]["model"] = model


def lab_bundle(tmp_path: Path, name: str, release: str, model: str) -> Path:
    """The frozen scenario bundle (two timer cases) as a kernel-lab guest's, carrying every case caveat a timer
    run can: steal and load during 'timer idle', 'timer hackbench' degraded and its governor not applied."""
    b = tmp_path / name
    shutil.copytree(FROZEN / "scenario", b)
    edit(b / "host/facts-before.json", lambda f: emulated(f, f"lab-{name}", release, model))
    idle = b / "cases/001-timer-idle"
    edit(idle / "result.json", lambda r: r["host_samples"].update(others_running={"mean": 2.5, "max": 4}))
    ticks = {"start": [100, 0, 50, 1000, 0, 0, 0, 0], "end": [200, 0, 100, 1500, 0, 0, 0, 100]}  # 100 of 850 stolen
    (idle / "environment.json").write_text(
        json.dumps(
            {
                "stat_columns": STAT_COLUMNS,
                "cpus": [0, 1],
                "start": {"cpu_ticks": {"0": ticks["start"], "1": ticks["start"]}},
                "end": {"cpu_ticks": {"0": ticks["end"], "1": ticks["end"]}},
            }
        )
    )
    edit(b / "cases/002-timer-hackbench/result.json", lambda r: r.update(degraded=True))
    return seal(b)


def ioc_bundle(tmp_path: Path) -> Path:
    """The frozen IOC bundle as an emulated RT guest's: its timer baseline's probe failed (the watchdog: only in
    the probe's end record), its IOC case (100 samples) ran beside a network load on rtqual's veth pair."""
    b = tmp_path / "rt-ioc"
    shutil.copytree(FROZEN / "ioc", b)
    edit(b / "host/facts-before.json", lambda f: emulated(f, "lab-rt-ioc", "6.1.0-rt-amd64", "PREEMPT_RT"))

    def failed(r: dict) -> None:
        r.update(verdict="error", reason="probe exit 1", exit_code=1)
        r["end"] = {"type": "end", "status": 1, "reason": "error", "message": "watchdog"}

    edit(b / "cases/001-timer-baseline/result.json", failed)
    edit(b / "manifest.json", lambda m: m["cases"][0].update(verdict="error"))
    net = {"mode": "broadcast", "asked": {"packets_per_s": 200}, "achieved": {"packets_per_s": 200}}
    edit(
        b / "cases/002-ioc/result.json",
        lambda r: r.update(loads=[{"name": "public", "type": "network", "network": net}]),
    )
    return seal(b)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("caveats")
    return {
        "std": lab_bundle(tmp, "std", "6.1.0-31-amd64", "PREEMPT_DYNAMIC"),
        "rt": lab_bundle(tmp, "rt", "6.1.0-31-rt-amd64", "PREEMPT_RT"),
        "ioc": ioc_bundle(tmp),
    }


def run(capsys, *argv) -> str:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def records(b: Path) -> list[dict]:
    return report.bundle_view(bundle_mod.load(b))["caveats"]


def test_the_records_carry_every_planted_caveat(bundles):
    kinds = {c["kind"] for b in bundles.values() for r in records(b) for c in r["caveats"]}
    assert set(HOST_KINDS + CASE_KINDS) <= kinds
    (failed,) = [c for r in records(bundles["ioc"]) for c in r["caveats"] if c["kind"] == "probe-error"]
    assert "watchdog" in failed["text"] and "probe exit 1" in failed["text"]  # the cause, not only the exit


def planted(b: Path):
    """(case label, caveat) of every caveat of a bundle's records."""
    return [(r["label"], c) for r in records(b) for c in r["caveats"]]


def test_show_and_its_json_state_every_caveat(bundles, capsys):
    for b in bundles.values():
        text = run(capsys, "show", b)
        doc = json.loads(run(capsys, "show", b, "--json"))
        for _, c in planted(b):
            assert c["text"] in text, (b.name, c["kind"])
        got = {c["kind"] for case in doc["cases"] for c in case["qualifiers"]["caveats"]}
        assert got == {c["kind"] for _, c in planted(b)}


def test_report_html_states_every_caveat(bundles, tmp_path, capsys):
    from html import escape

    for b in bundles.values():
        page = tmp_path / f"{b.name}.html"
        run(capsys, "report", b, "-o", page)
        html = page.read_text()
        for _, c in planted(b):
            assert escape(c["text"]) in html, (b.name, c["kind"])


def test_compare_text_json_and_html_state_every_caveat_of_every_bundle(bundles, tmp_path, capsys):
    from html import escape

    paths = [bundles["std"], bundles["rt"], bundles["ioc"], bundles["ioc"]]  # std/rt study + an IOC study twice
    text = run(capsys, "compare", *paths)
    doc = json.loads(run(capsys, "compare", *paths, "--json"))
    page = tmp_path / "compare.html"
    run(capsys, "compare", *paths, "--report", page)
    html = page.read_text()
    for b in paths:
        for _, c in planted(b):
            assert c["word"] in text and escape(c["word"]) in html, (b.name, c["kind"])
    kinds = {c["kind"] for case in doc["cases"] for q in case["qualifiers"] if q for c in q["caveats"]}
    assert {kind for b in paths for _, c in planted(b) for kind in [c["kind"]]} == kinds
    shown = {i for case in doc["cases"] for i, r in enumerate(case["ids"]) if r}
    assert shown == {0, 1, 2, 3}  # every bundle's cases, not only those the first bundle has
    assert doc["unmatched"] == [[], [], [], []]
    assert {line.split(":")[0] for line in text.splitlines() if line.startswith("case ")} >= {
        "case 001-timer-idle",
        "case 002-ioc",
    }


def test_table_flags_every_caveat_and_says_the_legend(bundles, capsys):
    for b in bundles.values():
        out = run(capsys, "table", "kek", b)
        lines = out.splitlines()
        head = lines[1]
        at = head.index("flags")
        width = len(lines[2].split("  ")[2])  # the dashes under the header: the flags column's width
        for label, c in planted(b):
            rows = [line for line in lines if line.startswith(b.name) and f" {label}" in line]
            assert rows and all(c["flag"] in r[at : at + width] for r in rows), (label, c["kind"])
        assert head.split()[-2:] == ["N", "duration"]  # beside the papers' hour-long rows
        legend = next(line for line in out.splitlines() if line.startswith("flags: "))
        assert all(f"{c['flag']} {caveats.FLAGS[c['kind']][1]}" in legend for _, c in planted(b))


def test_fleet_text_and_html_state_the_caveats_of_each_hosts_run(bundles, tmp_path, capsys):
    from html import escape

    page = tmp_path / "fleet.html"
    text = run(capsys, "fleet", *bundles.values(), "--report", page)
    html = page.read_text()
    for b in bundles.values():
        for _, c in planted(b):
            assert c["word"] in text and escape(c["word"]) in html, (b.name, c["kind"])


def test_history_lists_the_caveats_of_each_stored_case(bundles, tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    for b in bundles.values():
        run(capsys, "history", "add", b, "--store", store)
    text = run(capsys, "history", "--store", store)
    for b in bundles.values():
        for _, c in planted(b):
            assert c["word"] in text, (b.name, c["kind"])


def test_kek_compare_page_says_emulated_and_the_kernels_beside_the_numbers(bundles, tmp_path, capsys):
    page = tmp_path / "kek.html"
    run(capsys, "compare", bundles["std"], bundles["rt"], "--report", page)
    html = page.read_text()
    for case in html.split('<section class="case"')[1:]:
        table = case.split('<table class="stats">')[1].split("</table>")[0]
        assert "6.1.0-31-amd64" in table and "6.1.0-31-rt-amd64" in table and "emulated" in table
    assert "study (A)" not in html and "(A)" not in html.split("<h1>")[1].split("</h1>")[0]


def test_frequency_category_not_applied_says_so(bundles, tmp_path, capsys):
    for name in ("std", "rt"):
        toml = bundles[name] / "scenario.toml"
        toml.write_text(toml.read_text() + '\n[[matrix]]\nlabel = "timer"\n')
        seal(bundles[name])
    page = tmp_path / "study.html"
    run(capsys, "compare", bundles["std"], bundles["rt"], "--report", page)
    html = page.read_text()
    assert "hackbench not applied" in html and ">idle<" in html  # in both bundles: said on the category


def test_percentiles_only_where_n_carries_them_in_show_and_compare(capsys):
    text = run(capsys, "show", FROZEN / "ioc")  # the IOC case: 100 samples
    ioc_row = next(line for line in text.splitlines() if line.startswith("all") and "286us" in line)
    assert ioc_row.split()[5:8] == ["-", "-", "-"]  # p99, p99.9, p99.99
    assert "p99 needs 1,000" in text and "p99.99 needs 100,000" in text
    doc = json.loads(run(capsys, "show", FROZEN / "ioc", "--json"))
    ioc = doc["cases"][1]
    assert ioc["stats"]["p9999_ns"] == 285917  # JSON keeps the value...
    assert ioc["qualifiers"]["percentiles"]["p9999_ns"] == {"needs": 100_000, "carried": False}  # ...and says
    assert caveats.needed("p99_ns") == 1_000 and caveats.needed("p999_ns") == 10_000
    assert caveats.carried("p99_ns", 1_000) and not caveats.carried("p99_ns", 999)

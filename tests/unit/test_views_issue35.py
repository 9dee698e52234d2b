"""Issue 35's other reproducers on the views: compare's differences and labels, --match naming one case twice,
fleet comparing like with like, hosts by hostname and runs once, control characters and formula cells,
`plan` of several files, figures (at most six series, a case name on each), the APS summary as a wrapping
table, and scripts/kernel-lab ending only its own guest."""

import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from rtqual import cli, textfmt
from rtqual.answers import compare as compare_mod
from rtqual.errors import RtqError
from rtqual.publish import compare, fleet, htmlreport, tables, views
from rtqual.publish.svgplot import MAX_SERIES, Axis, Figure, Series, split

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "tests" / "data" / "bundles"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def msg_case(case_id, policy, priority, cpu, transport="zmq-tcp", rate=0):
    stats = {"count": 300, "min_ns": 1000, "p50_ns": 2000, "p99_ns": 3000, "p999_ns": 3220, "p9999_ns": 3220,
             "max_ns": 3220, "mean_ns": 2000}  # fmt: skip
    params = {"policy": policy, "priority": priority, "client_cpu": cpu, "server_cpu": cpu, "broker_cpu": -1,
              "transport": transport, "rate": rate, "duration_ns": 1_000_000_000}  # fmt: skip
    return {"id": case_id, "label": "msg zmq", "probe": "msg", "verdict": "completed", "params": params,
            "stats": stats, "per_cpu": {"1": stats}}  # fmt: skip


def data(path, *cases, facts=None):
    return {"path": path, "manifest": {"hostname": "h"}, "cases": list(cases), "facts": facts or {}, "caveats": []}


def test_compare_says_the_probe_parameters_that_differ_and_never_an_unpinned_cpu():
    """Issue 35 item 3: FIFO 80 on one CPU vs SCHED_OTHER unbound: not 'nothing differs'; no 'cpu1' row."""
    rt, ts = msg_case("001-msg", "fifo", 80, 1), msg_case("001-msg", "other", 0, -1, rate=100)
    text = compare.compare_text(data("RT", rt), data("TS", ts))
    line = next(x for x in text.splitlines() if x.startswith("ran differently"))
    assert "policy A fifo 80, B other 0" in line and "rate A -, B 100/s" in line
    assert "CPUs A client 1, server 1, B unpinned" in line
    doc = compare.compare_json(data("RT", rt), data("TS", ts))
    assert {d["aspect"] for d in doc["pairs"][0]["ran_differently"]} == {"policy", "rate", "CPUs"}
    assert views.cpu_name(ts, "1") == "unpinned" and views.cpu_name(rt, "1") == "cpu1"
    html = htmlreport.stats_table(ts)
    assert ">unpinned<" in html and ">cpu1<" not in html
    page = htmlreport.render_compare([data("RT", rt) | {"plan": {}}, data("TS", ts) | {"plan": {}}])
    assert "Nothing recorded differs" not in page and "case policy" in page


def test_compare_percentile_dashes_and_ratios_only_where_both_carry_them():
    a, b = msg_case("001-msg", "fifo", 80, 1), msg_case("001-msg", "fifo", 80, 1)
    text = compare.compare_text(data("A", a), data("B", b))
    a_row = next(x for x in text.splitlines() if x.startswith("A "))
    assert a_row.split()[5:8] == ["-", "-", "-"]  # p99, p99.9, p99.99 of 300 samples
    assert "p99 needs 1,000" in text


def test_match_naming_one_case_by_label_and_by_id_is_refused_not_a_pair_lost():
    """Issue 34 class 8: `idle=…` and `001-idle=…` name one case of A twice."""
    a = data("A", {"id": "001-idle", "label": "idle", "stats": {}}, {"id": "002-x", "label": "x", "stats": {}})
    b = data("B", {"id": "001-p", "label": "p", "stats": {}}, {"id": "002-q", "label": "q", "stats": {}})
    match = compare_mod.parse_match(["idle=p", "001-idle=q"])
    with pytest.raises(RtqError, match="name the same case 001-idle"):
        compare_mod.pairs(a, b, match)
    with pytest.raises(RtqError, match="name the same case 001-idle"):
        compare_mod.matches([a, b, b], match)


def test_bundle_labels_say_the_kernel_that_differs():
    std = data("x/study", facts={"kernel": {"release": "6.1.0-31-amd64"}, "preempt": {"model": "PREEMPT_DYNAMIC"}})
    rt = data("y/study", facts={"kernel": {"release": "6.1.0-31-rt-amd64"}, "preempt": {"model": "PREEMPT_RT"}})
    assert compare_mod.bundle_labels([std, rt]) == ["6.1.0-31-amd64", "6.1.0-31-rt-amd64"]
    same_release = {**rt, "facts": {"kernel": {"release": "6.1.0-31-amd64"}, "preempt": {"model": "PREEMPT_RT"}}}
    assert compare_mod.bundle_labels([std, same_release]) == ["PREEMPT_DYNAMIC", "PREEMPT_RT"]
    assert compare_mod.bundle_labels([std, std]) == ["study (A)", "study (B)"]  # nothing differs: the folders
    ioc = {**std, "path": "x/std-ioc"}
    std_t = {**std, "path": "x/std"}
    assert compare_mod.bundle_labels([std_t, rt, ioc]) == [
        "std 6.1.0-31-amd64",
        "study 6.1.0-31-rt-amd64",
        "std-ioc 6.1.0-31-amd64",
    ]  # one kernel twice: the folders tell its two studies apart


# ---------------------------------------------------------------- fleet


class FakeModel(SimpleNamespace):
    def facts(self, when="before"):
        return self.f


def model(path, host, start, cases, scenario=None):
    return FakeModel(path=Path(path), manifest={"hostname": host, "start": start, "end": start, "argv": ["x"]},
                     f={"hostname": host}, cases=cases, plan={"name": scenario}, damage=[])  # fmt: skip


def timer(max_ns, count=300):
    return {"id": "001-timer", "label": "timer", "probe": "timer", "verdict": "completed",
            "params": {"cpus": [0]}, "stats": {"count": count, "max_ns": max_ns, "p99_ns": max_ns}}  # fmt: skip


def test_fleet_names_hosts_by_hostname_and_counts_a_copied_run_once():
    a1 = model("fleet-work/b1", "pi-a", "t1", [timer(1000)])
    b1 = model("fleet-work/b2", "pi-b", "t1", [timer(2000)])
    copy = model("pi-a/b1", "pi-a", "t1", [timer(1000)])  # the host's copy of the fetched bundle
    hosts = fleet.by_host([("fleet-work", a1), ("fleet-work", b1), ("pi-a", copy)])
    assert {h: [m.path.name for m in ms] for h, ms in hosts.items()} == {"pi-a": ["b1"], "pi-b": ["b2"]}
    same = fleet.by_host(
        [("rack-1", model("r1/b", "raspberrypi", "t1", [])), ("rack-2", model("r2/b", "raspberrypi", "t2", []))]
    )
    assert set(same) == {"rack-1", "rack-2"}  # one hostname on two inventory hosts: the folders tell them apart


def test_fleet_profile_judges_a_host_on_its_latest_cycle_study_not_a_message_rtt_run():
    msg = msg_case("001-msg", "fifo", 80, 1) | {"stats": {"count": 300, "max_ns": 50_000_000}}
    ok = model("h/b1", "h", "2026-01-01", [timer(5_000_000, count=200_000)])
    later = model("h/b2", "h", "2026-02-01", [msg])
    entry = fleet.host_entry("h", [ok, later], profile="kek-50hz")
    assert entry["bundle"] == "h/b1" and list(entry["cases"]) == ["timer"]
    only_msg = fleet.host_entry("m", [later], profile="kek-50hz")
    assert only_msg["verdict"] == "inconclusive" and "no case" in only_msg["not_judged"]


def test_fleet_outliers_only_among_cases_of_one_kind_and_scenario():
    def host(name, max_ns, scenario):
        return {"host": name, "outlier": [], "cases": {"x": {"max_ns": max_ns, "p99_ns": max_ns, "kind": "timer",
                                                             "scenario": scenario}}}  # fmt: skip

    hosts = [host(f"h{i}", 10_000 + i, "s1") for i in range(4)] + [host("other", 9_000_000, "s2")]
    fleet.mark_outliers(hosts)
    assert all(h["outlier"] == [] for h in hosts)  # the s2 host is not judged against s1's


# ---------------------------------------------------------------- text safety


HOSTILE = "ok\n[blocker] fake line\x1b[2J\x1b[H"


def test_tables_and_text_escape_control_characters_in_every_cell():
    """Issue 34 item 7: a newline or ESC in a label makes no fake row or line and clears no screen."""
    table = textfmt.format_table(["case", "max"], [[HOSTILE, "1us"]])
    assert len(table.splitlines()) == 3 and "\x1b" not in table and "\\n[blocker]" in table
    assert textfmt.clean(HOSTILE) == "ok\\n[blocker] fake line\\x1b[2J\\x1b[H"
    r = {**FROZEN_CASE(), "label": HOSTILE, "warnings": [HOSTILE]}
    text = compare.compare_text(data("A", r), data("B", r))
    assert "\x1b" not in text and not any(line.startswith("[blocker]") for line in text.splitlines())


def FROZEN_CASE():
    return json.loads((FROZEN / "timer-raw" / "cases" / "001-timer" / "result.json").read_text())


def test_show_and_fleet_escape_a_hostile_label_and_host(tmp_path, capsys):
    b = tmp_path / "b"
    shutil.copytree(FROZEN / "timer-raw", b)
    for rel, key in (("cases/001-timer/result.json", "label"), ("manifest.json", "hostname")):
        doc = json.loads((b / rel).read_text())
        doc[key] = HOSTILE
        (b / rel).write_text(json.dumps(doc))
    m = json.loads((b / "manifest.json").read_text())
    m.pop("checksums", None)
    (b / "manifest.json").write_text(json.dumps(m))
    for argv in (("show", b), ("fleet", b), ("table", "kek", b)):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "ok\\n[blocker] fake line\\x1b[2J" in out, (argv, err)
        assert "\x1b" not in out and not any(line.startswith("[blocker] fake") for line in out.splitlines()), argv


def test_csv_neutralises_formula_cells():
    t = tables.Table("t", ["case", "max"], [['=HYPERLINK("http://x","y")', "-1.5"], ["+cmd", "-"], ["@a", "3"]])
    rows = tables.csv_text(t).splitlines()
    assert rows[1].startswith("\"'=HYPERLINK") and rows[1].endswith(",-1.5")  # a number stays a number
    assert rows[2] == "'+cmd,-" and rows[3] == "'@a,3"


# ---------------------------------------------------------------- plan, figures, pages


def test_plan_takes_several_scenario_files(capsys):
    files = sorted(str(p) for p in (ROOT / "scenarios").glob("kek-rpi-*.toml"))
    assert len(files) == 2
    code, out, _ = run(capsys, "plan", *files)
    assert code == 0 and all(Path(f).name in out for f in files)
    code, out, _ = run(capsys, "plan", *files, "--json")
    assert code == 0 and [d["name"] for d in json.loads(out)] == ["kek-rpi-2020", "kek-rpi-ioc-2020"]
    code, out, _ = run(capsys, "plan", files[0], "--json")
    assert isinstance(json.loads(out), dict)  # one file: its plan as before


def test_a_figure_of_many_series_is_split_into_even_small_multiples():
    fig = Figure("f", "t (case x)", [Series(f"s{i}", [1, 2], [1, 2]) for i in range(10)], Axis("x"), Axis("y"))
    parts = split(fig)
    assert [len(p.series) for p in parts] == [5, 5] and all(len(p.series) <= MAX_SERIES for p in parts)
    assert [p.title for p in parts] == ["t (case x) (part 1 of 2)", "t (case x) (part 2 of 2)"]


def test_every_case_figure_names_its_case():
    data = htmlreport.load_bundle(FROZEN / "ioc")
    for r in data["cases"]:
        r["progress"] = [{"elapsed_ns": t * 10**9, "cpus": [{"cpu": 0, "count": 1, "window_max_ns": 5000}]}
                         for t in range(3)]  # fmt: skip
        r["over_time"] = None
        figs = htmlreport.case_figures(r)
        assert figs and all(r["label"] in f.title for f in figs), [f.title for f in figs]


def test_aps_summary_is_a_wrapping_table_not_a_pre():
    data = htmlreport.load_bundle(FROZEN / "ioc")
    data["table"] = "aps"
    html = htmlreport.summary_html(data)
    assert html.startswith('<table class="summary">') and "<pre>" not in html
    assert "table.summary td{overflow-wrap:anywhere}" in htmlreport.CSS
    assert "<th>N</th><th>duration</th>" in html


def test_kernel_lab_ends_only_the_guest_it_started():
    """Issue 35 item 12: no pattern kill that matches other users' guests; the guest by our timeout's group."""
    script = (ROOT / "scripts" / "kernel-lab").read_text()
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "kernel-lab")]).returncode == 0
    assert not re.search(r"^\s*pkill", script, re.M) and "killall" not in script
    assert 'pgrep -g "$pgid" -u "$(id -u)"' in script and "kill -KILL $left" in script


def test_every_page_reads_bundles_through_the_one_bundle_view():
    """Issue 33 item 5: the report's loader is views.bundle_view and what the pages draw besides."""
    from rtqual.results import bundle as bundle_mod

    model = bundle_mod.load(FROZEN / "scenario")
    view, page = views.bundle_view(model), htmlreport.load_bundle(model)
    assert page["caveats"] == view["caveats"] and page["environment"] == view["environment"]
    assert set(view) <= set(page)


def test_check_judges_a_percentile_only_where_both_runs_carry_it():
    from rtqual.publish.store import trend

    def bundle(count):
        stats = {"count": count, "max_ns": 100, "p9999_ns": 100, "p99_ns": 90, "mean_ns": 50}
        return {"path": "b", "cases": [{"id": "001-t", "label": "t", "stats": stats}]}

    verdicts = {f["statistic"]: f["verdict"] for f in trend.check(bundle(999), bundle(999), 0.1)}
    assert verdicts == {"max": "ok", "p99.99": "not judged", "p99": "not judged", "mean": "ok"}
    verdicts = {f["statistic"]: f["verdict"] for f in trend.check(bundle(1_000), bundle(1_000), 0.1)}
    assert verdicts["p99"] == "ok" and verdicts["p99.99"] == "not judged"


def test_a_case_whose_condition_was_not_applied_is_said_so_in_the_figures_legend():
    """Issue 35 item 1: a series named 'frequency 750MHz' must not claim a frequency the host did not set."""
    data = htmlreport.load_bundle(FROZEN / "scenario")  # 'timer hackbench': governor performance not applied
    (fig,) = [f for f in htmlreport.bundle_figures(data["cases"]) if f.slug.startswith("latency-histograms")]
    assert sorted(s.name for s in fig.series) == ["timer hackbench (not applied)", "timer idle"]

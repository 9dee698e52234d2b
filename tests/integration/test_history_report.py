"""`rtqual history --report FILE`: the long-term page from a store (docs/store.md "Long-term views"): nothing in
the range is one line and exit 1, never an empty page; windows of two kernels and stored runs give the page's
figures, the requirement's line, the change of kernel and the runs' caveats."""

import re
import time

from conftest import DATA
from rtqual.publish.store import open_store
from rtqual.results.window import coarse_text

DAY_S = 86400


def windows(days: int, per_day: int = 24) -> list[dict]:
    t0 = DAY_S * (time.time() // DAY_S - days)
    out = []
    for i in range(days * per_day):
        t = t0 + i * DAY_S / per_day
        out.append(
            {"host": "ioc1", "probe": "timer", "run_as": "timer", "cpu": 0, "start_unix_s": t, "duration_s": 60.0,
             "samples": 60000, "min_ns": 4000, "mean_ns": 9000.0, "p50_ns": 9000, "p99_ns": 20000,
             "p9999_ns": None, "max_ns": 30000 + i, "over_threshold": 0, "overruns": 0, "threshold_ns": 100000,
             "kernel": "6.1.0-rt" if i < days * per_day // 2 else "6.12.0-rt", "preempt": "PREEMPT_RT",
             "hist": coarse_text({39: 40000, 40: 19990, 44: 10})}
        )  # fmt: skip
    return out


def test_nothing_in_the_range_is_one_line(rtqual_cmd, tmp_path):
    url = str(tmp_path / "s.sqlite")
    open_store(url).close()
    out = rtqual_cmd("history", "--report", tmp_path / "p.html", "--store", url)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "no monitor windows and no runs" in out.stderr and not (tmp_path / "p.html").exists()
    with open_store(url) as s:
        s.add_windows(windows(2))
    old = rtqual_cmd("history", "--report", tmp_path / "p.html", "--store", url, "--host", "elsewhere")
    assert old.returncode == 1 and "host elsewhere" in old.stderr


def test_the_page_draws_days_maxima_requirement_changes_and_runs(rtqual_cmd, tmp_path):
    url = str(tmp_path / "s.sqlite")
    with open_store(url) as s:
        s.add_windows(windows(6))
        s.add_run(DATA / "bundles" / "timer-raw")
    page = tmp_path / "long.html"
    out = rtqual_cmd("history", "--report", page, "--store", url, "--require", "max <= 100us", "--since", "3650d")
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    # the windows' days, then the stored run's case (a histogram per run, from its bundle)
    assert html.count('class="chart heat"') == 2 and html.count('class="chart stack"') == 2
    assert "Latency histogram per day: ioc1, timer" in html and "Histograms per run" in html
    assert 'aria-label="Maximum and p99.99 over time' in html and "requirement max &lt;= 100us" in html
    assert "6.1.0-rt PREEMPT_RT" in html and "kernel: 6.12.0-rt" in html  # the change, in the table and marked
    assert "p99.99 from 0 of 144 windows" in html  # a percentile the windows' samples do not carry is said
    assert "Stored runs" in html and "timer" in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def fake_run(rtqual_cmd, tmp_path, name, url, latency_ns):
    script = tmp_path / f"{name}.txt"
    script.write_text("".join(f"sample {i % 2} {latency_ns + 7 * i} 0\n" for i in range(300)))
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / name, "-q", "--store", url)
    assert out.returncode == 0, out.stderr
    return tmp_path / name


def test_report_shadows_are_the_baseline_and_the_last_runs_of_the_case(rtqual_cmd, tmp_path):
    """`report --shadows N`: the baseline's and the last N stored runs' histograms of the same case on the same
    host, grey behind the bundle's own; none of the bundle itself; a run's own report.html draws them too."""
    url = str(tmp_path / "s.sqlite")
    runs = [fake_run(rtqual_cmd, tmp_path, f"r{i}", url, 20_000 * (i + 1)) for i in range(4)]
    assert rtqual_cmd("baseline", "set", runs[0], "--store", url).returncode == 0
    out = rtqual_cmd("report", runs[3], "-o", tmp_path / "r.html", "--shadows", "2", "--store", url)
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    names = re.findall(r'class="shadow" data-name="([^"]+)"', html)
    assert (
        len(names) == 3 and names[0].startswith("baseline default") and all(n.startswith("run ") for n in names[1:])
    ), names
    assert "grey: 3 earlier run(s) of this case on this host" in html  # the baseline, then the latest runs
    assert (runs[3] / "report.html").read_text().count('class="shadow"') == 3  # at its end: the 3 runs before
    none = rtqual_cmd("report", runs[3], "-o", tmp_path / "n.html")
    assert none.returncode == 0 and 'class="shadow"' not in (tmp_path / "n.html").read_text()
    bad = rtqual_cmd("report", runs[3], "-o", tmp_path / "b.html", "--shadows", "-1")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "--shadows" in bad.stderr


def test_kernel_changes_are_marked_each_time_also_back_to_an_earlier_one():
    from rtqual.publish.store.longview import window_changes

    def day(t, kernel, cpu=0):
        return {"host": "h", "cpu": cpu, "first_unix_s": t, "kernel": kernel, "preempt": "PREEMPT_RT"}

    days = [day(0, "6.1"), day(1, "6.1", cpu=1), day(86400, "6.12"), day(86401, "6.12", cpu=1), day(2 * 86400, "6.1")]
    assert [(c["unix_s"], c["from"], c["to"]) for c in window_changes(days)] == [
        (86400, "6.1 PREEMPT_RT", "6.12 PREEMPT_RT"),
        (2 * 86400, "6.12 PREEMPT_RT", "6.1 PREEMPT_RT"),
    ]


def test_spikes_are_marked_with_their_cause_and_escaped(tmp_path):
    """Each captured spike (the `spikes` table) is a mark whose tooltip and table row name what held the CPU; a task
    name is text, never markup."""
    from rtqual.publish.htmlreport.longview import render
    from rtqual.publish.store.longview import gather

    url = str(tmp_path / "s.sqlite")
    ws = windows(2)
    with open_store(url) as s:
        s.add_windows(ws)
        with s.tx() as cur:
            for t, comm in ((ws[5]["start_unix_s"], "rtqual-inject"), (ws[30]["start_unix_s"], "<script>x</script>")):
                s._exec(
                    cur,
                    "INSERT INTO spikes (host_id, probe, cpu, time_unix_s, latency_ns, comm, pid, policy, priority, "
                    "cause_cpu, evidence) VALUES (1, 'timer', 0, ?, 450000, ?, 4242, 'SCHED_FIFO', 90, 0, '')",
                    (t, comm),
                )
        html = render(gather(s, None, None, []))
    assert html.count('<g class="point">') == 2 and "Captured spikes" in html
    assert "held by rtqual-inject (pid 4242, SCHED_FIFO 90, on cpu0)" in html
    assert "<script>" not in html and "&lt;script&gt;" in html

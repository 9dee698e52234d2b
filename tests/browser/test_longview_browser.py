"""The long-term page (`rtqual history --report`) in a real browser: Debian's chromium through playwright, offline:
no console error, no request, the heat map's cells, the stacked days and the max-over-time lines drawn, each
figure with its axis labels."""

import time

import pytest
from test_report_browser import _why_not, browser, open_offline  # noqa: F401 - the module's browser fixture

from rtqual.publish.store import open_store
from rtqual.results.window import coarse_text

pytestmark = [pytest.mark.browser, pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")]


def test_the_long_view_opens_offline_and_draws_its_figures(tmp_path, rtqual_cmd, browser):  # noqa: F811
    t0 = 86400 * (time.time() // 86400 - 20)
    url = str(tmp_path / "s.sqlite")
    with open_store(url) as s:
        s.add_windows(
            [
                {"host": "ioc1", "probe": "timer", "run_as": "timer", "cpu": 0, "start_unix_s": t0 + 1800 * i,
                 "duration_s": 60.0, "samples": 60000, "min_ns": 4000, "mean_ns": 9000.0, "p50_ns": 9000,
                 "p99_ns": 20000, "p9999_ns": None, "max_ns": 30000 + 100 * (i % 48), "over_threshold": 0,
                 "overruns": 0, "threshold_ns": 100000, "kernel": "6.1.0-rt", "preempt": "PREEMPT_RT",
                 "hist": coarse_text({38 + i % 3: 30000, 41: 29990, 45 + i % 5: 10})}
                for i in range(20 * 48)
            ]
        )  # fmt: skip
    page = tmp_path / "long.html"
    out = rtqual_cmd("history", "--report", page, "--store", url, "--require", "max <= 100us")
    assert out.returncode == 0, out.stderr
    ctx, tab, errors, requests = open_offline(browser, page)
    try:
        drawn = tab.evaluate(
            """() => [...document.querySelectorAll('svg.chart')].map(s => ({
                cls: s.getAttribute('class'),
                width: s.getBoundingClientRect().width,
                drawn: [...s.querySelectorAll('path.series')].filter(p => p.getTotalLength() > 0).length,
                labels: [...s.querySelectorAll('text.axis-label')].map(t => t.textContent),
            }))"""
        )
    finally:
        ctx.close()
    assert errors == [] and requests == []
    assert [d["cls"] for d in drawn] == ["chart heat", "chart stack", "chart"]
    assert all(d["width"] > 300 and d["drawn"] >= 1 and len(d["labels"]) == 2 for d in drawn), drawn
    assert drawn[1]["drawn"] == 20  # one outline a day

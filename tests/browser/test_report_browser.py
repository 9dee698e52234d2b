"""The HTML report in a real browser: Debian's chromium driven by playwright (no browser download).
Offline, no console error, every figure drawn with its axis labels, and the numbers shown equal to
`rtqual show --json`."""

import json
import shutil
from pathlib import Path

import pytest

from rtqual.answers.environment import host_sentences

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles"
BUNDLES = ("scenario", "ioc", "timer-raw")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _why_not() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "python playwright is not installed (pip install playwright)"
    if not _chromium():
        return "Debian's chromium is not installed (apt-get install chromium)"
    return None


pytestmark = [pytest.mark.browser, pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        yield b
        b.close()


def open_offline(browser, html: Path):
    """The page with every network request refused, and what its console said."""
    ctx = browser.new_context(offline=True)
    page = ctx.new_page()
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    return ctx, page, errors, requests


def drawn_figures(page) -> list[dict]:
    return page.evaluate(
        """() => [...document.querySelectorAll('svg.chart')].map(s => ({
            title: s.getAttribute('aria-label'),
            width: s.getBoundingClientRect().width,
            paths: [...s.querySelectorAll('path.series')].filter(p => (p.getAttribute('d') || '').length > 1
                                                                      && p.getTotalLength() > 0).length,
            labels: [...s.querySelectorAll('text.axis-label')].map(t => t.textContent),
        }))"""
    )


def test_report_opens_offline_draws_every_figure_and_shows_the_bundle_numbers(tmp_path, rtqual_cmd, browser):
    out = tmp_path / "report.html"
    r = rtqual_cmd("report", *(DATA / b for b in BUNDLES), "-o", out)
    assert r.returncode == 0, r.stderr
    ctx, page, errors, requests = open_offline(browser, out)
    try:
        assert errors == [] and requests == []
        figs = drawn_figures(page)
        assert len(figs) >= 3 * len(BUNDLES)
        for f in figs:
            assert f["width"] > 100 and f["paths"] >= 1, f
            assert len(f["labels"]) == 2 and all(f["labels"]), f
        shown = page.evaluate(
            """() => [...document.querySelectorAll('section.case')].map(s => ({id: s.id.slice(5),
                 all: Object.fromEntries([...s.querySelectorAll('table.stats tr:last-child [data-key]')]
                        .map(e => [e.dataset.key, e.dataset.value === '' ? null : JSON.parse(e.dataset.value)]))}))"""
        )
        expected = []
        for b in BUNDLES:
            j = json.loads(rtqual_cmd("show", DATA / b, "--json").stdout)
            expected += [(c["id"], c["stats"]) for c in j["cases"]]
        assert [s["id"] for s in shown] == [cid for cid, _ in expected]
        for s, (cid, stats) in zip(shown, expected):
            for key, value in s["all"].items():
                if key in stats:
                    assert value == stats[key], (cid, key)
        assert page.locator("#capability li").count() >= 1
    finally:
        ctx.close()


def test_the_answer_opens_the_report_and_an_unjudged_run_is_not_a_pass(tmp_path, rtqual_cmd, browser):
    """A run judged against nothing: the report opens with the answer lines of `show --json`, and its banner
    is the neutral COMPLETED, never a green PASS."""
    out = tmp_path / "report.html"
    assert rtqual_cmd("report", DATA / "scenario", "-o", out).returncode == 0
    ctx, page, errors, _ = open_offline(browser, out)
    try:
        assert errors == []
        order = page.evaluate(
            """() => [...document.body.querySelectorAll('h1, h2, #answer, #verdict, section.case')]
                     .map(e => e.id || e.tagName.toLowerCase())"""
        )
        assert order[:4] == ["h1", "h2", "answer", "verdict"]  # the title, "Answer", the lines, the banner
        lines = page.evaluate("() => [...document.querySelectorAll('#answer li')].map(li => li.textContent)")
        shown = json.loads(rtqual_cmd("show", DATA / "scenario", "--json").stdout)
        want = [f"{a['question']}: {a['answer']} — {a['evidence']}" for a in shown["answer"]]
        # the answers, then where they were measured (the environment's host sentences: a VM, a container)
        assert lines == want + host_sentences(shown["environment"]) and want
        banner = page.locator("#verdict")
        assert banner.text_content().startswith("COMPLETED — not judged (add --profile or --require)")
        assert "PASS" not in banner.text_content() and "completed" in banner.get_attribute("class")
        color = page.evaluate("() => getComputedStyle(document.querySelector('#verdict')).backgroundColor")
        assert color != "rgb(227, 245, 225)"  # .pass's green
    finally:
        ctx.close()


def test_compare_report_overlays_matching_cases(tmp_path, rtqual_cmd, browser):
    out = tmp_path / "compare.html"
    a = DATA / "scenario"
    r = rtqual_cmd("compare", a, a, a, "--report", out)
    assert r.returncode == 0, r.stderr
    assert "C/A" in r.stdout
    ctx, page, errors, requests = open_offline(browser, out)
    try:
        assert errors == [] and requests == []
        figs = drawn_figures(page)
        assert len(figs) == 4 and all(f["paths"] == 3 for f in figs)  # 2 cases x (histogram, tail), 3 bundles
    finally:
        ctx.close()


def test_png_and_svg_figures(tmp_path, rtqual_cmd):
    r = rtqual_cmd("report", DATA / "ioc", "-o", tmp_path / "r.html", "--png", tmp_path / "png")
    assert r.returncode == 0, r.stderr
    pngs = sorted((tmp_path / "png").glob("*.png"))
    assert pngs and len(pngs) == len(list((tmp_path / "png").glob("*.svg")))
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in pngs)


def histogram_lines(page) -> list[dict]:
    """Per histogram figure: its axis labels, the frame's bottom edge and the lowest point of its lines (px)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('svg.chart')]
            .filter(s => /histogram/i.test(s.getAttribute('aria-label') || ''))
            .map(s => {
                const frame = s.querySelector('rect.frame');
                const bottom = +frame.getAttribute('y') + +frame.getAttribute('height');
                let lowest = -1, runs = 0;
                for (const p of s.querySelectorAll('path.series')) {
                    const d = p.getAttribute('d') || '';
                    runs += (d.match(/M/g) || []).length;
                    for (const m of d.matchAll(/([MV])([-\\d.]+)(?:,([-\\d.]+))?/g))
                        lowest = Math.max(lowest, +(m[1] === 'M' ? m[3] : m[2]));
                }
                return {title: s.getAttribute('aria-label'), bottom, lowest, runs,
                        labels: [...s.querySelectorAll('text.axis-label')].map(t => t.textContent)};
            })"""
    )


def test_histograms_draw_no_empty_bin_and_label_both_axes(tmp_path, rtqual_cmd, browser):
    """No histogram line lies on (or below) the frame's bottom: an empty bin draws nothing, rather than a line
    at a stand-in count; the latency axis is log scaled and says the worst case; the IOC's CPUs are named."""
    out = tmp_path / "report.html"
    assert rtqual_cmd("report", *(DATA / b for b in BUNDLES), "-o", out).returncode == 0
    ctx, page, errors, _ = open_offline(browser, out)
    try:
        hists = histogram_lines(page)
        assert len(hists) >= len(BUNDLES) and errors == []
        for h in hists:
            assert 0 < h["lowest"] < h["bottom"] - 1, h
            assert "log scale" in h["labels"][0] and "worst case" in h["labels"][0] and "Samples" in h["labels"][1]
        legends = page.evaluate(
            "() => [...document.querySelectorAll('#case-002-ioc text.legend')].map(t => t.textContent)"
        )
        assert "IOC on cpus 0-1" in legends and "cpu0" not in legends
        stages = page.evaluate(
            "() => [...document.querySelectorAll('#case-002-ioc text.category')].map(t => t.textContent)"
        )
        assert stages == ["wake", "dispatch", "chain", "return", "total"]
        assert page.locator("#case-002-ioc table.stats th", has_text="% over 100us").count() == 1
    finally:
        ctx.close()


def test_kek_compare_report_names_the_bundles_and_what_differs(tmp_path, rtqual_cmd, browser):
    """The KEK study in one page from hand-built standard and RT kernel bundles of both KEK scenarios: both
    bundles named in the title and the figures, kernel and preemption listed as what differs, one section per
    question of the paper with one bar per bundle and matrix value, the IOC delay with its mean and σ."""
    from kekstudy import KERNELS, kek_bundle

    kernel = {k: v[0] for k, v in KERNELS.items()}  # the kernel release: what differs
    name = {f: f"{f} {kernel[f.split('-')[0]]}" for f in ("std", "rt", "std-ioc", "rt-ioc")}  # issue 35: no "(A)"
    bundles = [kek_bundle(tmp_path / "std", "std"), kek_bundle(tmp_path / "rt", "rt")]
    bundles += [kek_bundle(tmp_path / f"{k}-ioc", k, "kek-rpi-ioc-2020", samples=300) for k in ("std", "rt")]
    out = tmp_path / "kek.html"
    r = rtqual_cmd("compare", *bundles, "--report", out)
    assert r.returncode == 0, r.stderr
    ctx, page, errors, requests = open_offline(browser, out)
    try:
        assert errors == [] and requests == []
        assert page.locator("h1").inner_text() == "rtqual comparison: " + " vs ".join(name.values())
        differs = page.evaluate(
            "() => [...document.querySelectorAll('#differences tr td:first-child')].map(t => t.textContent)"
        )
        assert {"kernel", "preemption"} <= set(differs) and "host" not in differs
        for section, values in (
            ("stress", ["idle", "hackbench", "cat-dev-zero", "pi_stress"]),
            ("frequency", ["600MHz", "750MHz*", "1000MHz*", "1500MHz"]),  # * not applied in rt: the figure's note
            ("runtime", ["10m", "50m"]),
        ):
            sel = f"#study-kek-rpi-2020-{section}"
            figs = page.evaluate(
                f"""() => [...document.querySelectorAll('{sel} svg.chart')].map(s => ({{
                    title: s.getAttribute('aria-label'),
                    cats: [...s.querySelectorAll('text.category')].map(t => t.textContent),
                    bars: [...s.querySelectorAll('path.bar')].map(b => b.dataset.name + ' ' + b.dataset.category),
                    labels: [...s.querySelectorAll('text.axis-label')].map(t => t.textContent)}}))"""
            )
            assert [f["title"].split(" per ")[0] for f in figs] == ["Average latency", "Maximum latency"], figs
            for f in figs:
                assert f["cats"] == values and f"{name['std']} vs {name['rt']}" in f["title"] and all(f["labels"])
                assert sorted(f["bars"]) == sorted(f"{name[b]} {v}" for b in ("std", "rt") for v in values)
        notes = page.locator("#study-kek-rpi-2020-frequency svg.chart text.note").all_text_contents()
        assert any(f"* not applied in {name['rt']}: 750MHz, 1000MHz" in t for t in notes), notes
        ran = page.locator("#study-kek-rpi-2020-frequency table.study").inner_text()
        assert "750000 kHz not applied" in ran  # the RT kernel cannot set 750 MHz: said, not hidden
        ioc = page.locator("#study-kek-rpi-ioc-2020-ioc-25-hz")
        assert ioc.locator("svg.chart").count() == 4  # mean and σ bars, a histogram per load
        legends = ioc.locator("text.legend").all_text_contents()
        assert any(t.startswith(f"{name['std-ioc']}: mean ") and ", σ " in t for t in legends)
        for case in page.locator("section.case table.stats").all_inner_texts():  # the kernels beside the numbers
            assert kernel["std"] in case and kernel["rt"] in case
        assert page.locator("ul.spread li").count() > 0
        page.screenshot(path=str(tmp_path / "kek.png"), full_page=True)
    finally:
        ctx.close()


def test_aps_report_has_no_horizontal_scroll_at_1300_px(tmp_path, rtqual_cmd, browser):
    """Issue 35 item 9: the APS summary (a 90-character network column) is a wrapping table, not a <pre>: the
    page fits a 1,300 px window."""
    b = tmp_path / "aps"
    shutil.copytree(DATA / "ioc", b)
    plan = json.loads((b / "plan.json").read_text())
    plan["table"] = "aps"
    (b / "plan.json").write_text(json.dumps(plan))
    result = b / "cases" / "002-ioc" / "result.json"
    r = json.loads(result.read_text())
    net = {"mode": "broadcast", "asked": {"packets_per_s": 200, "arp_per_s": 50},
           "achieved": {"packets_per_s": 199.7, "bytes_per_s": 20_000, "arp_per_s": 49.9, "drops": 0}}  # fmt: skip
    r["loads"] = [{"name": f"public{i}", "type": "network", "network": net} for i in range(3)]
    result.write_text(json.dumps(r))
    m = json.loads((b / "manifest.json").read_text())
    m.pop("checksums", None)
    (b / "manifest.json").write_text(json.dumps(m))
    out = tmp_path / "aps.html"
    assert rtqual_cmd("report", b, "-o", out).returncode == 0
    ctx = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(out.as_uri())
        assert (
            page.locator("table.summary").count() == 1
            and "network achieved" in page.locator("table.summary").inner_text()
        )
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1300
        wide = page.evaluate("() => [...document.querySelectorAll('table')].filter(t => t.scrollWidth > 1300).length")
        assert wide == 0
    finally:
        ctx.close()


def test_a_capacity_sweep_draws_its_figures_with_the_knee(tmp_path, rtqual_cmd, browser):
    """A capacity bundle (capacity.json beside a run's cases): the Capacity section opens offline with its answer as
    `show --json` says it, the latency and queue figures drawn with both axis labels and the knee marked."""
    from rtqual.results.bundle import write_own

    script = tmp_path / "s.script"
    script.write_text("sample 0 5000\nsample 0 7000\nprogress\n")
    b = tmp_path / "b"
    assert rtqual_cmd("run", "fake", "--script", script, "-o", b, "-q", "--store", "off").returncode == 0
    q = {
        "size": 2000,
        **{p: {"used": 0, "high_water": i, "overflows": 0} for i, p in enumerate(("low", "medium", "high"))},
    }
    steps = [{"value": v, "case": "001-fake", "stats": {"count": 2, "p50_ns": 5000 * v, "p99_ns": 7000 * v,
              "max_ns": 9000 * v}, "queues": q, "cpu": {}, "verdict": "pass" if v < 8 else "fail", "cause": "x"}
             for v in (1, 2, 4, 6, 7, 8)]  # fmt: skip
    doc = {"dimension": "records", "unit": "records", "requirements": ["p99 <= 50us"], "steps": steps}
    doc.update(carries=7, breaks_at=8, cause="x", answer="carries up to 7 records; breaks at 8 records because x")
    write_own(b, "capacity.json", json.dumps(doc))
    out = tmp_path / "report.html"
    assert rtqual_cmd("report", b, "-o", out).returncode == 0
    ctx, page, errors, requests = open_offline(browser, out)
    try:
        assert errors == [] and requests == []
        shown = json.loads(rtqual_cmd("show", b, "--json").stdout)["capacity"]
        assert page.locator("#capacity-answer").text_content() == shown["answer"]
        figs = [f for f in drawn_figures(page) if f["title"].startswith("Capacity")]
        assert len(figs) == 2
        for f in figs:
            assert f["width"] > 100 and f["paths"] >= 1 and len(f["labels"]) == 2 and all(f["labels"]), f
        marks = page.evaluate("() => [...document.querySelectorAll('#capacity-figures text.mark-label')]"
                              ".map(t => t.textContent)")  # fmt: skip
        assert "knee: carries 7, breaks 8" in marks
    finally:
        ctx.close()

"""The HTML report in a real browser: Debian's chromium driven by playwright (no browser download).
Offline, no console error, every figure drawn with its axis labels, and the numbers shown equal to
`rtqual show --json`."""

import json
import shutil
from pathlib import Path

import pytest

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
        want = json.loads(rtqual_cmd("show", DATA / "scenario", "--json").stdout)["answer"]
        assert lines == [f"{a['question']}: {a['answer']} — {a['evidence']}" for a in want] and lines
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

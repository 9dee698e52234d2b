"""`rtqual check BUNDLE`: a bundle against a baseline, exit 2 naming each statistic that regressed (a CI gate)."""

from __future__ import annotations

from rtqual.answers.verdict import exit_code
from rtqual.commands.common import add_store_option, emit, input_files, load_bundle
from rtqual.errors import RtqError

NAME = "check"
HELP = "compare a bundle with a baseline: exit 2 naming each statistic that regressed (a CI gate)"


def add_arguments(p) -> None:
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--baseline", default="default", metavar="N", help="baseline name (default 'default')")
    p.add_argument(
        "--tolerance",
        default="10%",
        help="how far above the baseline's value a statistic (max, p99.99, p99, mean) may be (default 10%%)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable")
    add_store_option(p)


def run(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    tolerance = trend.parse_tolerance(a.tolerance)
    input_files([a.bundle], "check:", folders=True)
    data = load_bundle(a.bundle)
    if data["damage"]:
        raise RtqError(f"{a.bundle}: damaged (rtqual verify {a.bundle}): not checked")
    with store.open_store(a.store, write=False) as s:
        base = s.baseline(a.baseline)
    findings = trend.check(base, data.as_dict(), tolerance)
    args = (findings, a.baseline, base, a.bundle, tolerance)
    emit(a.json, lambda: trend.check_json(*args), lambda: trend.check_text(*args))
    return exit_code("fail" if any(f["verdict"] == "regressed" for f in findings) else "pass")

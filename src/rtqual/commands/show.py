"""`rtqual show BUNDLE`: the results of a bundle again, from disk (text, or --json for programs)."""

from __future__ import annotations

from rtqual.commands.common import damage_exit, emit, load_bundle
from rtqual.publish import views

NAME = "show"
HELP = "print the results of a bundle"


def add_arguments(p) -> None:
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true", help="machine-readable statistics")
    p.add_argument(
        "--table",
        choices=["cases", *views.PAPER_TABLES],
        help="summary layout: one row per case, or a seed paper's columns (default: the scenario's)",
    )


def run(a, argv: list[str]) -> int:
    from rtqual.answers.evidence import selftest
    from rtqual.publish import report

    data = load_bundle(a.bundle)
    st = selftest.stored(data)
    view = report.bundle_view(data)
    emit(
        a.json,
        lambda: {**report.show_json(view), **({"selftest": st} if st is not None else {})},
        lambda: report.show_text(view, a.table) + ("\n\n" + selftest.text(st) if st is not None else ""),
    )
    return damage_exit([data])

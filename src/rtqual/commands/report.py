"""`rtqual report BUNDLE...`: a self-contained HTML report of bundles (figures, verdicts, host facts)."""

from __future__ import annotations

from pathlib import Path

from rtqual.commands.common import add_store_option, damage_exit, load_bundle, output_file
from rtqual.errors import RtqError
from rtqual.results.bundle.names import REPORT
from rtqual.util import outside_system_trees

MAX_SHADOWS = 50  # grey lines a histogram can carry and still be read
NAME = "report"
HELP = "a self-contained HTML report of bundles (figures, verdicts, host facts)"


def add_arguments(p) -> None:
    p.add_argument("bundles", metavar="BUNDLE", nargs="+")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="report file (default: BUNDLE/report.html of one bundle, else rtqual-report.html)",
    )
    p.add_argument("--png", metavar="DIR", help="also write every figure as PNG (matplotlib) and SVG into DIR")
    p.add_argument(
        "--shadows",
        metavar="N",
        type=int,
        default=0,
        help="draw the baseline's and the last N stored runs' histograms of the same case on the same host as grey "
        "shadows behind each case's own (from the history store; docs/report.md)",
    )
    add_store_option(p, " (--shadows)")


def run(a, argv: list[str]) -> int:
    from rtqual.publish import htmlreport, svgplot

    output_file(a.output, "-o")
    outside_system_trees(a.png, "--png")
    if a.png:
        svgplot.require_png()
    if a.png and Path(a.png).exists() and not Path(a.png).is_dir():
        raise RtqError(f"--png {a.png}: exists and is not a folder")
    if not 0 <= a.shadows <= MAX_SHADOWS:
        raise RtqError(f"--shadows {a.shadows}: from 0 to {MAX_SHADOWS}")
    bundles = [load_bundle(p) for p in a.bundles]  # checked first: damage said on stderr, the report warns too
    out = Path(a.output) if a.output else bundles[0].path / REPORT if len(bundles) == 1 else None
    grey = shadows_of(bundles, a.shadows, a.store) if a.shadows else None
    path = htmlreport.write_report(
        bundles, out or Path("rtqual-report.html"), Path(a.png) if a.png else None, tail=True, shadows=grey
    )
    print(path)
    return damage_exit(bundles)


def shadows_of(bundles: list, n: int, url: str | None) -> list[dict] | None:
    """Each bundle's shadows from the history store; what kept some out is a warning on stderr."""
    import sys

    from rtqual.publish.store.shadows import for_bundles

    grey, notes = for_bundles(bundles, n, url)
    for note in notes:
        print(f"rtqual: warning: --shadows: {note}", file=sys.stderr)
    return grey

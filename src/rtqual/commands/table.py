"""`rtqual table LAYOUT BUNDLE...`: a seed paper's table, the paper's published values beside the bundles'."""

from __future__ import annotations

from pathlib import Path

from rtqual.commands.common import damage_exit, load_bundle
from rtqual.publish import tables

NAME = "table"
HELP = "a seed paper's table: the paper's published values beside the bundles' (docs/tables.md)"


def add_arguments(p) -> None:
    p.add_argument("layout", metavar="LAYOUT", choices=list(tables.LAYOUTS), help=", ".join(tables.LAYOUTS))
    p.add_argument("bundles", metavar="BUNDLE", nargs="+")
    p.add_argument("--csv", action="store_true", help="the same rows as CSV on stdout (no title, no notes)")


def run(a, argv: list[str]) -> int:
    models = [load_bundle(p) for p in a.bundles]  # damage said on stderr; the intact cases are tabulated
    names = [Path(p).resolve().name for p in a.bundles]
    names = names if len(set(names)) == len(names) else list(a.bundles)  # same folder names: the paths
    t = tables.build_models(a.layout, list(zip(names, models)))
    print(tables.csv_text(t) if a.csv else tables.text(t), end="" if a.csv else "\n")
    return damage_exit(models)

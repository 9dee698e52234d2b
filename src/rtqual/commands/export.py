"""`rtqual export raw BUNDLE`: raw samples as CSV (case,cpu,time_ns,latency_ns) on stdout."""

from __future__ import annotations

import sys

from rtqual.commands.common import damage_exit, load_bundle

NAME = "export"
HELP = "export data from a bundle"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    raw = sub.add_parser("raw", help="raw samples as CSV: case,cpu,time_ns,latency_ns")
    raw.add_argument("bundle")


def run(a, argv: list[str]) -> int:
    from rtqual.publish import export

    model = load_bundle(a.bundle)
    return max(export.raw_csv(model, sys.stdout), damage_exit([model]))

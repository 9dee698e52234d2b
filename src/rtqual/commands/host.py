"""`rtqual host`: the facts of this host that matter for real-time behaviour."""

from __future__ import annotations

from rtqual import __version__
from rtqual.commands.common import emit

NAME = "host"
HELP = "host facts that matter for real-time behaviour"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true")


def run(a, argv: list[str]) -> int:
    from rtqual.measure.host import facts
    from rtqual.measure.run import native
    from rtqual.publish import report

    f = facts.collect(tools={"rtqual": __version__, "rtqual-probe": native.probe_version_or("not installed")})
    emit(a.json, f, lambda: report.format_host(f))
    return 0

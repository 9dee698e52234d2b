"""`rtqual monitor [--probe NAME] [the probe's options] [monitor options]`: one probe measuring without end, each
window published (docs/monitoring.md). The probe's options come from its table, so --probe is read first."""

from __future__ import annotations

import argparse

from rtqual.commands.common import STORE_HELP, Parser, add_param_options, add_require_options
from rtqual.probes.catalog import ALL_PROBES
from rtqual.util import outside_system_trees

NAME = "monitor"
HELP = "measure without end and publish each window: Prometheus, node_exporter textfile, store, EPICS PVs"
PARSER_KW = {"add_help": False}  # its own parser (parser() below), chosen before the others: `rtqual monitor --help`


def add_arguments(p) -> None:
    """Nothing here: `rtqual monitor …` is parsed by parser(argv), whose options depend on --probe."""


def parser(argv: list[str]) -> Parser:
    """The monitor's options for the probe --probe names (default timer)."""
    from rtqual.monitor.loop import monitorable
    from rtqual.probes.catalog import REQUIREMENTS

    names = [n for n in ALL_PROBES if monitorable(n)]
    pre = Parser(prog="rtqual monitor", add_help=False)
    pre.add_argument("--probe", default="timer", choices=names)
    known, _ = pre.parse_known_args(argv)
    probe = ALL_PROBES[known.probe]
    p = Parser(
        prog="rtqual monitor",
        description="Measure without end (until SIGINT/SIGTERM) and publish each window's statistics: Prometheus "
        "/metrics, a node_exporter textfile, the history store, EPICS PVs (docs/monitoring.md). "
        f"Options below are --probe {known.probe}'s (rtqual monitor --probe NAME --help for another).",
    )
    p.add_argument(
        "--probe",
        default="timer",
        choices=names,
        metavar="NAME",
        help=f"the probe measured (default timer; {', '.join(n for n in names if not ALL_PROBES[n].hidden)})",
    )
    add_param_options(p, probe, skip=tuple(REQUIREMENTS))
    for action in p._actions:  # a monitor has no end of its own
        if action.dest in ("duration", "loops"):
            what = "time" if action.dest == "duration" else "many periods"
            action.help = f"stop after this {what} (default: at SIGINT/SIGTERM)"
    p.add_argument("--window", default="1m", help="statistics window (default 1m, at least 1s)")
    p.add_argument(
        "--listen",
        default="127.0.0.1:9841",
        help="HOST:PORT of the Prometheus /metrics endpoint (default 127.0.0.1:9841, loopback; 'off': none)",
    )
    p.add_argument(
        "--textfile", metavar="DIR", help="also write DIR/rtqual.prom for node_exporter's textfile collector"
    )
    p.add_argument("--store", metavar="URL", help=STORE_HELP + "; every window is stored, buffered while unreachable")
    p.add_argument("--pvs", metavar="PREFIX", help="publish each window as EPICS PVs PREFIX:LAT_MAX, ... (loopback)")
    p.add_argument("--json", action="store_true", help="print each window as a JSON line (default: one text line)")
    add_require_options(p, "each window's PVs, as their alarm limits (docs/monitoring.md)")
    # compressed time for tests and benchmarks (a fake probe's day in minutes): a window per N progress records
    p.add_argument("--window-progress", type=int, default=0, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    """`rtqual monitor ARGV…` (argv after the command's name)."""
    from rtqual.monitor.loop import Monitor, Options
    from rtqual.scenario.single import probe_options_case

    a = parser(argv).parse_args(argv)
    outside_system_trees(a.textfile, "--textfile")
    case = probe_options_case(a.probe, a)
    return Monitor(case, Options.from_args(a, case)).run()


def run(a, argv: list[str]) -> int:
    return main(argv[2:])

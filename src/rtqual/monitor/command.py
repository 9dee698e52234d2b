"""`rtqual monitor [--probe NAME] [the probe's options] [monitor options]`: one probe measuring without end, each
window published (docs/monitoring.md). The probe's options come from its table, so --probe is read first."""

from __future__ import annotations

import argparse

from rtqual.commands.common import STORE_HELP, Parser, add_param_options, add_require_options
from rtqual.errors import RtqError
from rtqual.measure.host.trace import CAPTURE_PER_HOUR
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
    p.add_argument(
        "--capture-per-hour",
        type=int,
        default=CAPTURE_PER_HOUR,
        metavar="K",
        help=f"with --capture: at most K spikes captured an hour, the rest counted (default {CAPTURE_PER_HOUR})",
    )
    p.add_argument(
        "--on-spike",
        metavar="ACTION",
        help="with --capture, for each captured spike: 'CMD ARGS' runs CMD (no shell) with the spike's JSON on stdin, "
        "killed after --on-spike-timeout; 'signal:PID[:SIG]' sends SIG (default SIGUSR1) to PID",
    )
    p.add_argument("--on-spike-timeout", default="10s", metavar="DUR", help="bound of an --on-spike command (10s)")
    # compressed time for tests and benchmarks (a fake probe's day in minutes): a window per N progress records
    p.add_argument("--window-progress", type=int, default=0, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    """`rtqual monitor ARGV…` (argv after the command's name)."""
    from rtqual.monitor.loop import Monitor
    from rtqual.monitor.outputs import Outputs
    from rtqual.scenario.single import probe_options_case

    a = parser(argv).parse_args(argv)
    outside_system_trees(a.textfile, "--textfile")
    case = probe_options_case(a.probe, a)
    opts = options(a, case)
    return Monitor(case, opts, Outputs(opts)).run()


def options(a, case: dict):
    """The monitor's Options from its parsed arguments, for the probe's case: the window at least 1 s, `--listen
    off` for none, bounded when the user gave --duration or --loops, the requirements (--require, --profile) checked."""
    from rtqual.answers.requirements import gather
    from rtqual.monitor.loop import Options
    from rtqual.publish.store import is_off
    from rtqual.units import parse_duration_ns

    window_ns = parse_duration_ns(a.window, "--window")
    if window_ns < 10**9:
        raise RtqError(f"--window {a.window}: at least 1s")
    listen = None if a.listen in ("off", "") else a.listen
    bounded = any(getattr(a, k, None) is not None for k in ("duration", "loops"))
    opts = Options(window_ns, listen, a.textfile, not is_off(a.store), a.store, a.pvs, a.json, bounded)
    opts.every_progress = max(a.window_progress, 0)
    opts.trace = bool(case["params"].get("trace"))
    opts.capture_ns = case["params"].get("capture_ns")
    if not 1 <= a.capture_per_hour <= 3600:
        raise RtqError(f"--capture-per-hour {a.capture_per_hour}: give 1 to 3600")
    opts.capture_per_hour = a.capture_per_hour
    if a.on_spike is not None:
        from rtqual.monitor.actions import parse_action

        if not opts.capture_ns:
            raise RtqError("--on-spike: acts on captured spikes: give --capture OVER too")
        timeout_ns = parse_duration_ns(a.on_spike_timeout, "--on-spike-timeout")
        if not 10**6 <= timeout_ns <= 3600 * 10**9:
            raise RtqError(f"--on-spike-timeout {a.on_spike_timeout}: give 1ms to 1h")
        opts.on_spike = parse_action(a.on_spike, timeout_ns / 1e9)
    opts.require = gather(getattr(a, "require", None), getattr(a, "profile", None))
    return opts


def run(a, argv: list[str]) -> int:
    return main(argv[2:])

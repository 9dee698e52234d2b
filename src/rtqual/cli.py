"""rtqual command line: parse, dispatch to the module of the command (rtqual.commands and the command packages
advise, monitor, selftest: each declares its arguments and runs), turn an error into one line and its exit code.
Only main() prints errors and exits; everything else raises RtqError."""

from __future__ import annotations

import re
import signal
import sys

from rtqual import __version__
from rtqual.advise import command as advise
from rtqual.answers.verdict import exit_code
from rtqual.capacity import command as capacity
from rtqual.commands import (
    baseline,
    check,
    common,
    compare,
    export,
    fleet,
    history,
    host,
    importing,
    plan,
    report,
    restore,
    run,
    show,
    table,
    tail,
    verify,
)
from rtqual.errors import EXIT_ERROR, EXIT_SKIP, RtqError
from rtqual.monitor import command as monitor
from rtqual.selftest import command as selftest

# in the order `rtqual --help` lists them
COMMANDS = [run, plan, show, compare, importing, report, export, restore, verify, monitor, selftest, host, history]
COMMANDS += [baseline, check, table, tail, advise, fleet, capacity]


def build_parser() -> common.Parser:
    p = common.Parser(prog="rtqual", description="Qualify a Linux host for real-time control.")
    p.add_argument("--version", action="store_true", help="print rtqual's and the probes' versions")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP, **getattr(command, "PARSER_KW", {})))
    return p


def _terminated(signum: int, _frame) -> None:
    """SIGTERM before a run installs its own guard (or after it): stop like Ctrl-C, exit 4, no traceback."""
    raise KeyboardInterrupt


def stop_on_int_and_term() -> None:
    """SIGINT and SIGTERM stop the command at any moment (exit 4), as the run's guard does during the cases:
    also when started with SIGINT ignored (a background job of a script), which would otherwise lose it."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminated)


def dispatch(argv: list[str]) -> int:
    """`rtqual ARGV…`: the command's exit code. `monitor` and `run FILE` parse their own arguments (their options
    depend on --probe, or are a scenario's)."""
    if argv[:1] == ["monitor"]:
        return monitor.main(argv[1:])
    if run.is_scenario_target(argv):
        return run.run_scenario(argv)
    a = build_parser().parse_args(argv)
    if a.version:
        from rtqual.measure.run import native

        print(f"rtqual {__version__}\nrtqual-probe {native.probe_version_or('not installed')}")
        return 0
    by_name = {c.NAME: c for c in COMMANDS}
    if a.command not in by_name:
        build_parser().print_help()
        return EXIT_ERROR
    return by_name[a.command].run(a, ["rtqual", *argv])


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the command, not a caller's test
        stop_on_int_and_term()
    try:
        return dispatch(list(sys.argv[1:] if argv is None else argv))
    except RtqError as e:
        kind = "skip" if e.exit_code == EXIT_SKIP else "error"
        msg = str(e).removeprefix("error: ").removeprefix("skip: ")
        msg = re.sub(r"[\x00-\x1f\x7f]", lambda c: repr(c.group())[1:-1], msg)  # one line, whatever it quotes
        print(f"rtqual: {kind}: {msg}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("rtqual: interrupted", file=sys.stderr)
        return exit_code("inconclusive")
    except BrokenPipeError:
        return 0

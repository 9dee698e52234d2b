"""rtqual command line: parse, dispatch to the module of the command (rtqual.commands and the command packages
advise, monitor, selftest: each declares its arguments and runs), turn an error into one line and its exit code.
Only main() prints errors and exits; everything else raises RtqError."""

from __future__ import annotations

import importlib
import re
import signal
import sys
from types import ModuleType

from rtqual import __version__
from rtqual.errors import EXIT_ERROR, EXIT_SKIP, RtqError

# every command's module, in the order `rtqual --help` lists them; a command imports only its own module
COMMANDS = {
    "run": "rtqual.commands.run",
    "plan": "rtqual.commands.plan",
    "show": "rtqual.commands.show",
    "compare": "rtqual.commands.compare",
    "import": "rtqual.commands.importing",
    "report": "rtqual.commands.report",
    "export": "rtqual.commands.export",
    "restore": "rtqual.commands.restore",
    "verify": "rtqual.commands.verify",
    "monitor": "rtqual.monitor.command",
    "selftest": "rtqual.selftest.command",
    "host": "rtqual.commands.host",
    "history": "rtqual.commands.history",
    "baseline": "rtqual.commands.baseline",
    "check": "rtqual.commands.check",
    "table": "rtqual.commands.table",
    "tail": "rtqual.commands.tail",
    "advise": "rtqual.advise.command",
    "capacity": "rtqual.capacity.command",
    "fleet": "rtqual.commands.fleet",
}


def command(name: str) -> ModuleType:
    """The module of one command: NAME, HELP, add_arguments(parser), run(args, argv) (and PARSER_KW)."""
    return importlib.import_module(COMMANDS[name])


def build_parser(only: str | None = None):
    """rtqual's parser: every command (for --help), or only the one given (the others are not imported)."""
    from rtqual.commands.common import Parser

    p = Parser(prog="rtqual", description="Qualify a Linux host for real-time control.")
    p.add_argument("--version", action="store_true", help="print rtqual's and the probes' versions")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in COMMANDS else COMMANDS:
        c = command(name)
        c.add_arguments(sub.add_parser(c.NAME, help=c.HELP, **getattr(c, "PARSER_KW", {})))
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
        return command("monitor").main(argv[1:])
    if argv[:1] == ["run"] and command("run").is_scenario_target(argv):
        return command("run").run_scenario(argv)
    a = build_parser(argv[0] if argv else None).parse_args(argv)
    if a.version:
        from rtqual.measure.run import native

        print(f"rtqual {__version__}\nrtqual-probe {native.probe_version_or('not installed')}")
        return 0
    if a.command not in COMMANDS:
        build_parser().print_help()
        return EXIT_ERROR
    return command(a.command).run(a, ["rtqual", *argv])


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
        from rtqual.answers.verdict import exit_code

        print("rtqual: interrupted", file=sys.stderr)
        return exit_code("inconclusive")
    except BrokenPipeError:
        return 0

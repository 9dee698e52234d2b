"""What every command shares: the parser that turns argparse's errors into one line, the checks of paths given as
options, the option groups several commands declare (--require/--profile, --store, a probe's parameters), reading
a bundle for printing, and the one emitter of text or JSON."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtqual.answers.requirements import PROFILES
from rtqual.errors import EXIT_ERROR, RtqError
from rtqual.fields import suggest
from rtqual.probes.catalog import ALL_PROBES, Probe, fields_of
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.util import outside_system_trees

STORE_HELP = (
    "history store: a path, sqlite:///PATH or postgresql://... (default: $RTQUAL_STORE, else the default path; "
    "off: store nothing; docs/store.md)"
)


class Parser(argparse.ArgumentParser):
    """argparse that raises a one-line RtqError instead of printing usage and exiting 2; a value that
    starts with a dash and a digit (--duration -5s) is a value, so the range check can name it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message):
        where = self.prog.removeprefix("rtqual").strip()  # main() names the program once
        raise RtqError(f"{where + ': ' if where else ''}{_with_hint(message)} (see --help)")

    def parse_args(self, args=None, namespace=None):
        """argparse's parse_args, with "did you mean" for an unknown option: suggested from the options of
        the command it was given to (`run timer --duraton` -> --duration), not only the top-level ones."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            names = [s[2:] for s in _chosen(self, ns)._option_string_actions if s.startswith("--")]
            close = (suggest(x[2:].split("=")[0], names) for x in extras if x.startswith("--"))
            hints = "".join(h.replace("mean '", "mean '--") for h in close)  # compared without the dashes
            self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return ns


def _chosen(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the deepest command given: `rtqual run timer` -> run's timer parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(ns, action.dest, None) in action.choices:
            return _chosen(action.choices[getattr(ns, action.dest)], ns)
    return parser


def _with_hint(message: str) -> str:
    """An invalid choice said without the internal probes (fake, inject) and with a "did you mean"."""
    m = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if not m:
        return message
    shown = [c.strip(" '") for c in m[2].split(",") if not getattr(ALL_PROBES.get(c.strip(" '")), "hidden", False)]
    return f"{message[: m.start()]}invalid choice: '{m[1]}'{suggest(m[1], shown)} (choose from {', '.join(shown)})"


# ---------------------------------------------------------------- option groups


def add_require_options(sp, scope: str = "the measurement") -> None:
    """--require and --profile: requirements judged on `scope` (a probe's run, or every case of a scenario)."""
    sp.add_argument(
        "--require",
        action="append",
        metavar="EXPR",
        help=f"a requirement judged on {scope}: 'STAT OP DURATION' (min p50 mean p99 p99.9 p99.99 "
        "p99.999 max stddev), 'over(DURATION) OP PERCENT', 'overruns OP N', 'count OP N'; OP <= < >= > ==; "
        "e.g. 'p99.9 <= 100us'; repeatable (docs/requirements.md)",
    )
    sp.add_argument("--profile", choices=list(PROFILES), help="a named set of requirements (docs/requirements.md)")


def add_store_option(sp, extra: str = "", **kw: Any) -> None:
    """--store URL: the history store a command reads or writes."""
    sp.add_argument("--store", metavar="URL", help=STORE_HELP + extra, **kw)


def add_param_options(sp, probe: Probe, skip: tuple = ()) -> None:
    """The probe's parameters as options (`--interval 1ms`), those that exclude each other in one group."""
    groups = {k: sp.add_mutually_exclusive_group() for pair in probe.exclusive for k in pair[:1]}
    where = {k: groups[pair[0]] for pair in probe.exclusive for k in pair}
    for key, f in fields_of(probe).items():
        if key in skip:
            continue
        opt = "--" + key.replace("_", "-")
        default = f" (default {f.default})" if f.default not in (None, False) else ""
        target = where.get(key, sp)
        if f.kind == "bool":
            target.add_argument(opt, action="store_true", help=f.help)
        else:
            target.add_argument(
                opt, type=int if f.kind == "int" else str, help=f.help + default, choices=f.choices or None
            )


# ---------------------------------------------------------------- paths given as options


def output_file(path: str | None, option: str) -> None:
    """An output file option (FILE.html) must name a file, not a folder or a device, outside /proc, /sys, /dev."""
    outside_system_trees(path, option)
    if path is not None and Path(path).exists() and not Path(path).is_file():
        raise RtqError(f"{option} {path}: exists and is not a regular file")


def input_files(paths: list[str], what: str, folders: bool = False) -> None:
    """Input paths must exist and be regular files (or folders where the command reads one)."""
    for p in paths:
        f = Path(p)
        if not f.exists():
            raise RtqError(f"{what} {p}: no such file")
        if not (f.is_file() or (folders and f.is_dir())):
            raise RtqError(f"{what} {p}: not a regular file")


def output_dir(path: str | None, option: str = "-o") -> None:
    """-o must be a new or empty folder (the bundle's) outside /proc, /sys, /dev, said before anything runs."""
    outside_system_trees(path, option)
    p = Path(path) if path else None
    if p is not None and p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise RtqError(f"output {p} exists and is not an empty directory: choose another with -o")


# ---------------------------------------------------------------- bundles in, text or JSON out


def load_bundle(path: str) -> Model:
    """The bundle's model for the printers (a case no printer can show is damage too); the warnings the model
    gives (each damaged file, the cut case) are said on stderr, never printed as data."""
    from rtqual.publish import report

    model = bundle_mod.load(path, check=report.check_printable)
    for warning in model.warnings:
        print(f"rtqual: warning: {warning}", file=sys.stderr)
    return model


def damage_exit(bundles: list[Model]) -> int:
    """Exit 1 when any bundle read had damage (the intact part was printed), else 0; damage met after loading
    (a stream's records of the wrong shape, left out when read) is said here."""
    for b in bundles:
        for line in b.late_damage():
            print(f"rtqual: warning: {b.path}/{line}", file=sys.stderr)
    return EXIT_ERROR if any(b.damage or b.door_damage for b in bundles) else 0


def emit(as_json: bool, data: Any, text: Callable[[], str] | str) -> None:
    """The one way a command prints its answer: `data` as indented JSON with --json, else its text; either may be
    a function without arguments, so only the one printed is made."""
    if as_json:
        print(json.dumps(data() if callable(data) else data, indent=1))
    else:
        print(text() if callable(text) else text)

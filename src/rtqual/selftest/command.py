"""`rtqual selftest`: proof on this host that the probes catch injected stalls of known size (docs/selftest.md)."""

from __future__ import annotations

import argparse

from rtqual.commands.common import emit, output_dir

NAME = "selftest"
HELP = "prove on this host that the probes catch injected stalls of known size (docs/selftest.md)"


def add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="a subset: the timer at 2, 10, 50 ms, the others at 10 ms")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.add_argument("--probes", help="comma-separated subset of timer,event,switch,msg,ioc")
    p.add_argument("--sizes", help="comma-separated stall lengths, e.g. 2ms,10ms (default 2ms,10ms,50ms)")
    p.add_argument("--count", type=int, help="stalls per case (default 10; --quick 5)")
    p.add_argument("--claim", help=argparse.SUPPRESS)  # the injector lies: the tests' failing selftest
    p.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress")


def run(a, argv: list[str]) -> int:
    from rtqual.answers.evidence import selftest as judged
    from rtqual.selftest import run as selftest

    opts = selftest.parse_options(a.probes, a.sizes, a.count, a.claim)
    output_dir(a.output)
    result, code = selftest.run_selftest(a.quick, **opts, output=a.output, quiet=a.quiet or a.json, argv=argv)
    emit(a.json, result, lambda: judged.text(result))
    return code

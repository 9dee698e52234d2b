"""`python -m rtqual.publish.imports TOOL FILE... -o BUNDLE`: the import command before the CLI wires it in."""

from __future__ import annotations

import argparse
import sys

from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, RtqError
from rtqual.publish.imports import TOOLS, run


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise RtqError(f"{self.prog}: {message} (see --help)")


def main(argv: list[str] | None = None) -> int:
    """Parse, import, print the bundle path; one line on stderr ("rtqual: error: ...", as the CLI
    prints) and exit 1 for any mistake."""
    p = _Parser(prog="python -m rtqual.publish.imports", description="Import other tools' results as an rtqual bundle.")
    p.add_argument("tool", help=f"one of: {', '.join(TOOLS)}")
    p.add_argument("files", nargs="+", help="the tool's output files (jitterdebugger: its -o folder)")
    p.add_argument("-o", "--output", help="bundle directory (default rtqual-import-<tool>-<time>)")
    try:
        a = p.parse_args(argv)
        print(run(a.tool, a.files, a.output))
        return 0
    except RtqError as e:
        print(f"rtqual: error: {e}", file=sys.stderr)
        return e.exit_code or EXIT_ERROR
    except KeyboardInterrupt:  # the inputs are untouched; a bundle being written stays "running"
        print("rtqual: interrupted", file=sys.stderr)
        return EXIT_INCONCLUSIVE


if __name__ == "__main__":
    sys.exit(main())

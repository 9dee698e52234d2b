"""Other tools' results as ordinary rtqual bundles (`rtqual import TOOL FILE... --output BUNDLE`).

One module per tool reads its files into cases (`parse(path) -> list[Case]`); writer.py writes the
bundle that `rtqual show`, `show --json` and `compare` read like any other, marked with its source.
"""

from __future__ import annotations

import time
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.imports import cyclictest, jitterdebugger, rteval, rtla
from rtqual.publish.imports.writer import write_bundle

PARSERS = {
    "cyclictest": cyclictest.parse,
    "rtla": rtla.parse,
    "jitterdebugger": jitterdebugger.parse,
    "rteval": rteval.parse,
}
TOOLS = tuple(PARSERS)


def default_output(tool: str, now: float | None = None) -> Path:
    """rtqual-import-<tool>-<YYYYmmdd-HHMMSS> in the current directory."""
    return Path(f"rtqual-import-{tool}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}")


def run(tool: str, paths: list[str], output: str | None) -> Path:
    """Import `paths` (files, or jitterdebugger folders) of `tool` into a new bundle; returns its path.
    Every input is read and checked before anything is written; RtqError (one line) for any bad input."""
    if tool not in PARSERS:
        raise RtqError(f"import: unknown tool '{tool}' (one of: {', '.join(TOOLS)})")
    if not paths:
        raise RtqError(f"import {tool}: no input file given")
    cases = []
    for p in paths:
        cases += PARSERS[tool](Path(p))
    out = Path(output) if output else default_output(tool)
    argv = ["rtqual", "import", tool, *paths, "--output", str(out)]
    try:
        return write_bundle(tool, cases, out, argv)
    except OSError as e:  # disk full, permissions: the inputs were fine, the output could not be written
        raise RtqError(f"cannot write bundle {out}: {e.strerror or e}") from None

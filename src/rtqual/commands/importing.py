"""`rtqual import TOOL FILE...`: other tools' results (cyclictest, rtla, jitterdebugger, rteval) as a bundle."""

from __future__ import annotations

from pathlib import Path

from rtqual.commands.common import add_store_option, input_files, output_dir
from rtqual.commands.run import remember

NAME = "import"
HELP = "other tools' results as an rtqual bundle (cyclictest, rtla, jitterdebugger, rteval; docs/import.md)"


def add_arguments(p) -> None:
    p.add_argument("tool", metavar="TOOL", help="cyclictest, rtla, jitterdebugger or rteval")
    p.add_argument("files", metavar="FILE", nargs="+", help="the tool's output files (jitterdebugger: its -o folder)")
    p.add_argument("-o", "--output", help="bundle directory (default rtqual-import-<tool>-<time>)")
    add_store_option(p, "; the imported bundle is stored as a run")


def run(a, argv: list[str]) -> int:
    from rtqual.publish import imports
    from rtqual.publish.store import check_url, is_off

    input_files(a.files, f"import {a.tool}:", folders=True)
    _ = is_off(a.store) or check_url(a.store)
    output_dir(a.output, "--output")
    path = imports.run(a.tool, a.files, a.output)
    remember(Path(path), a.store)
    print(path)
    return 0

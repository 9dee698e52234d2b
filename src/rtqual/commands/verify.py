"""`rtqual verify BUNDLE`: every file of a bundle against the checksums in its manifest."""

from __future__ import annotations

from rtqual.errors import RtqError
from rtqual.results import bundle as bundle_mod

NAME = "verify"
HELP = "check every file of a bundle against the checksums in its manifest"


def add_arguments(p) -> None:
    p.add_argument("bundle")


def run(a, argv: list[str]) -> int:
    model = bundle_mod.load(a.bundle)
    problems, notes = model.verify()
    for note in notes:
        print(f"{a.bundle}: note: {note}")
    for p in problems:
        print(f"{a.bundle}/{p}")
    n = len(model.manifest.get(bundle_mod.CHECKSUMS, {}))
    if problems:
        raise RtqError(f"{a.bundle}: {len(problems)} damaged, missing or unexpected file(s)")
    print(f"{a.bundle}: intact ({n} file(s) checked)" if n else f"{a.bundle}: no checksums recorded")
    return 0

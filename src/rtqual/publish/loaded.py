"""Bundles as the printers read them: the result model (rtqual.results.bundle) with one more damage rule, the
printers' own: a result that `show` or `show --json` cannot print (a shape the model's checks did not foresee)
is damaged too, left out and named like any other damaged file."""

from __future__ import annotations

import json
from pathlib import Path

from rtqual.publish import report
from rtqual.results import bundle
from rtqual.results.bundle import Model


def printable(model: Model) -> Model:
    """The model with the printers' test of each result installed (before its cases are first read)."""

    def check(r: dict) -> None:
        one = {"path": str(model.path), "manifest": model.manifest, "cases": [r], "table": model.table,
               "damage": [], "cut": model.cut}  # fmt: skip
        report.show_text(one)
        json.dumps(report.show_json(one))

    model.check = check
    return model


def load(path: str | Path) -> Model:
    """bundle.load for the printers (printable): a damaged manifest is a one-line RtqError at once."""
    return printable(bundle.load(path))

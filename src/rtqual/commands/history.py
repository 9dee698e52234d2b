"""`rtqual history [add BUNDLE...]`: the trend of stored runs and monitor windows (docs/store.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtqual.commands.common import (
    STORE_HELP,
    add_require_options,
    add_store_option,
    damage_exit,
    emit,
    input_files,
    load_bundle,
    output_file,
)

NAME = "history"
HELP = "the trend of stored runs and monitor windows (docs/store.md)"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--host", metavar="H", help="only this host")
    p.add_argument("--case", metavar="LABEL", help="only cases with this label (or case id)")
    p.add_argument("--since", metavar="DUR", help="only runs and windows that started within DUR (e.g. 7d, 24h)")
    p.add_argument("--spikes", action="store_true", help="list the captured spikes (monitor --capture) instead")
    p.add_argument(
        "--report",
        metavar="FILE",
        help="write the long-term view as one self-contained HTML page: histograms per day (heat map and stacked), "
        "max and p99.99 over time with the requirement, spikes' causes and settings changes (docs/store.md)",
    )
    add_require_options(p, "the long-term view (its requirement lines; default: the stored runs' requirements)")
    add_store_option(p)
    sub = p.add_subparsers(dest="history_command", metavar="add")
    ha = sub.add_parser("add", help="store bundles (runs from before the store, copied from other hosts)")
    ha.add_argument("bundles", metavar="BUNDLE", nargs="+")
    ha.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help=STORE_HELP)


def run(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    if a.history_command == "add":
        input_files(a.bundles, "history add:", folders=True)
        models = []
        with store.open_store(a.store) as s:
            for b in a.bundles:
                models.append(load_bundle(b))  # damage said on stderr: the intact cases are stored
                s.add_run(models[-1])
                print(f"stored {b} in {s.where}")
        return damage_exit(models)
    since = trend.since(a.since)
    if a.spikes:
        from rtqual.publish.store import spikes

        with store.open_store(a.store, write=False) as s:
            rows = s.spikes(a.host, since)
        emit(a.json, lambda: spikes.spikes_json(rows), lambda: spikes.spikes_text(rows))
        return 0
    if a.report:
        return write_report(a, since)
    with store.open_store(a.store, write=False) as s:
        runs = s.history(a.host, a.case, since)
        windows = s.windows(a.host, since) if not a.case else []
    emit(a.json, lambda: trend.history_json(runs, windows), lambda: trend.history_text(runs, windows))
    return 0


def write_report(a, since: float | None) -> int:
    """`history --report FILE`: the long-term page (rtqual.publish.htmlreport.longview) from the store; a store
    with nothing in the range is one line (exit 1), never an empty page."""
    import time

    from rtqual.answers.requirements import gather
    from rtqual.publish import store
    from rtqual.publish.htmlreport.longview import render
    from rtqual.publish.store.longview import gather as gather_view
    from rtqual.util import write_text_atomic

    reqs = gather(a.require, a.profile)
    output_file(a.report, "--report")
    out = Path(a.report)
    began = time.monotonic()
    with store.open_store(a.store, write=False) as s:
        data = gather_view(s, a.host, since, reqs, a.case)
    html = render(data)
    write_text_atomic(out, html)
    print(f"wrote {out} ({len(html.encode()) / 1e6:.2f} MB, {time.monotonic() - began:.2f} s)")
    return 0

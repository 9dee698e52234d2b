"""`rtqual history [add BUNDLE...]`: the trend of stored runs and monitor windows (docs/store.md)."""

from __future__ import annotations

import argparse

from rtqual.commands.common import STORE_HELP, add_store_option, damage_exit, emit, input_files, load_bundle

NAME = "history"
HELP = "the trend of stored runs and monitor windows (docs/store.md)"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--host", metavar="H", help="only this host")
    p.add_argument("--case", metavar="LABEL", help="only cases with this label (or case id)")
    p.add_argument("--since", metavar="DUR", help="only runs and windows that started within DUR (e.g. 7d, 24h)")
    p.add_argument("--spikes", action="store_true", help="list the captured spikes (monitor --capture) instead")
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
    with store.open_store(a.store, write=False) as s:
        runs = s.history(a.host, a.case, since)
        windows = s.windows(a.host, since) if not a.case else []
    emit(a.json, lambda: trend.history_json(runs, windows), lambda: trend.history_text(runs, windows))
    return 0

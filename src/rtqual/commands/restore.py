"""`rtqual restore BUNDLE`: the bundle's journal undone (rtqual.measure.conditions.restore checks every record first:
refused means nothing touched), then what killed runs and monitors leave without a journal: an IOC's folder made
before its bundle's journal, a monitor's work folder, a tracefs instance of a dead rtqual."""

from __future__ import annotations

import json
from pathlib import Path

from rtqual.errors import EXIT_ERROR
from rtqual.results.bundle import read_manifest
from rtqual.util import remove_orphan_dirs

NAME = "restore"
HELP = (
    "put back host settings a killed run left changed, remove its temp folders (only rtqual's own, "
    "only a journal written on this host in this boot: docs/bundle.md)"
)


def add_arguments(p) -> None:
    p.add_argument("bundle")
    p.add_argument("--dry-run", action="store_true", help="print what would be done (one line each), change nothing")


def run(a, argv: list[str]) -> int:
    actions, line, failed = restore(a.bundle, dry_run=a.dry_run)
    for act in actions:
        print(json.dumps(act))
    print(line)
    return EXIT_ERROR if failed else 0


def restore(bundle: str, dry_run: bool = False) -> tuple[list[dict], str, bool]:
    """(actions, the closing line, whether any undo failed); with dry_run nothing is changed, the actions say
    what would be done."""
    from rtqual.measure.conditions.restore import restore_from_bundle
    from rtqual.measure.epics.ioc import TEMP_PREFIX as IOC_PREFIX
    from rtqual.measure.host.trace import remove_orphan_instances, remove_orphan_mounts
    from rtqual.monitor.loop import TEMP_PREFIX as MONITOR_PREFIX

    actions = restore_from_bundle(bundle, dry_run=dry_run)
    if not actions:  # a folder that is no bundle says so (one-line RtqError), never "nothing to restore"
        read_manifest(Path(bundle))
    orphans = [
        *remove_orphan_dirs(IOC_PREFIX, dry_run=dry_run),
        *remove_orphan_dirs(MONITOR_PREFIX, dry_run=dry_run),
        *remove_orphan_instances(dry_run=dry_run),
        *remove_orphan_mounts(dry_run=dry_run),
    ]
    done = {"action": "would remove"} if dry_run else {"action": "removed", "restored": True}
    actions += [{"knob": str(d), **done} for d in orphans if str(d) not in {x["knob"] for x in actions}]
    if not actions:
        line = f"{bundle}: nothing to restore"
    elif dry_run:
        line = f"{len(actions)} action(s) would restore from {bundle}"
    else:
        line = f"{len(actions)} setting(s) restored from {bundle}"
    if dry_run:
        line += " (dry run: nothing changed)"
    return actions, line, any(x.get("restored") is False for x in actions)

"""`rtqual restore BUNDLE`: the bundle's journal undone (rtqual.measure.conditions checks every record first:
refused means nothing touched), then what killed runs and monitors leave without a journal: an IOC's folder made
before its bundle's journal, a monitor's work folder, a tracefs instance of a dead rtqual."""

from __future__ import annotations

from pathlib import Path

from rtqual.measure.conditions import restore_from_bundle
from rtqual.measure.epics.ioc import TEMP_PREFIX as IOC_PREFIX
from rtqual.measure.monitor.loop import TEMP_PREFIX as MONITOR_PREFIX
from rtqual.measure.trace import remove_orphan_instances
from rtqual.results.bundle import read_manifest
from rtqual.util import remove_orphan_dirs


def restore(bundle: str, dry_run: bool = False) -> tuple[list[dict], str, bool]:
    """(actions, the closing line, whether any undo failed); with dry_run nothing is changed, the actions say
    what would be done."""
    actions = restore_from_bundle(bundle, dry_run=dry_run)
    if not actions:
        read_manifest(
            Path(bundle)
        )  # a folder that is no bundle says so (one-line RtqError), never "nothing to restore"
    orphans = [
        *remove_orphan_dirs(IOC_PREFIX, dry_run=dry_run),
        *remove_orphan_dirs(MONITOR_PREFIX, dry_run=dry_run),
        *remove_orphan_instances(dry_run=dry_run),
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

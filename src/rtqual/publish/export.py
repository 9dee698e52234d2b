"""`rtqual export raw`: every raw sample of a bundle's model as CSV (case,cpu,time_ns,latency_ns)."""

from __future__ import annotations

import sys
from typing import TextIO

from rtqual.errors import EXIT_ERROR, RtqError
from rtqual.results import rawfile
from rtqual.results.bundle import Model, Unreadable


def raw_csv(model: Model, out: TextIO) -> int:
    """Write the CSV of every intact raw.bin; a raw.bin that is damaged (or not a regular file of the bundle) is
    said on stderr, never printed as data, and makes the exit 1. No raw samples at all is a one-line error."""
    files, unread = [], 0
    for r in model.cases:
        try:
            f = model.raw_file(r["id"])
        except Unreadable as e:
            unread += 1
            if str(e) not in model.damage:  # else said already
                print(f"rtqual: warning: {model.path}/{e}", file=sys.stderr)
            continue
        if f is not None:
            files.append((r["id"], f))
    if not files and unread:
        return EXIT_ERROR  # the damage was said; nothing intact to export
    if not files:
        raise RtqError(f"{model.path}: no raw samples (run with --raw)")
    out.write("case,cpu,time_ns,latency_ns\n")
    for cid, f in files:
        for cpu, time_ns, latency_ns, _ in rawfile.samples(f):
            out.write(f"{cid},{cpu},{time_ns},{latency_ns}\n")
    return EXIT_ERROR if unread else 0

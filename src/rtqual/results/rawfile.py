"""Reader of the probes' raw sample file (docs/protocol.md "Raw sample file")."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from rtqual.errors import RtqError

MAGIC = b"RTQRAW1\0"
HEADER = struct.Struct("<8sIIQqqI20x")
RECORD = struct.Struct("<qIHH")
LATENCY_SATURATED = 0xFFFFFFFF


def read_header(path: Path) -> dict:
    with open(path, "rb") as f:
        data = f.read(HEADER.size)
    if len(data) < HEADER.size:
        raise RtqError(f"{path}: raw file shorter than its header")
    magic, version, rec_size, interval_ns, start_mono_ns, start_real_ns, ncpus = HEADER.unpack(data)
    if magic != MAGIC or version != 1 or rec_size != RECORD.size:
        raise RtqError(f"{path}: not an rtqual raw file version 1")
    return {"interval_ns": interval_ns, "start_mono_ns": start_mono_ns, "start_real_ns": start_real_ns, "ncpus": ncpus}


def samples(path: Path) -> Iterator[tuple[int, int, int, int]]:
    """Yield (cpu, time_ns, latency_ns, skipped) for every whole record; a torn last record is ignored."""
    read_header(path)
    with open(path, "rb") as f:
        f.seek(HEADER.size)
        while chunk := f.read(RECORD.size * 4096):
            usable = len(chunk) - len(chunk) % RECORD.size
            for time_ns, latency_ns, cpu, skipped in RECORD.iter_unpack(chunk[:usable]):
                yield cpu, time_ns, latency_ns, skipped

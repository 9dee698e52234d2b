"""Host facts as a bundle stores them (host/facts-*.json): how values are written and read back."""

from __future__ import annotations

import re
from typing import Any

UNLIMITED = "unlimited"
"""How an RLIM_INFINITY limit is recorded (None would read as 'unknown')."""


def get_fact(facts: dict, dotted: str) -> Any:
    """facts['a']['b'] for 'a.b', or None when any level is missing (old or partial snapshots)."""
    value: Any = facts
    for key in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


RPI_THROTTLED_BITS = {0: "under-voltage", 1: "ARM frequency capped", 2: "throttled", 3: "soft temperature limit"}
"""A Raspberry Pi firmware's throttled flags (`vcgencmd get_throttled`, the firmware's sysfs get_throttled): bit n
set is the condition now, bit n + 16 that it has occurred since boot (the Raspberry Pi documentation's table)."""
RPI_SINCE_BOOT_SHIFT = 16


def parse_throttled(text: str | None) -> int | None:
    """The flag word of `vcgencmd get_throttled` ('throttled=0x50005') or of the firmware's sysfs file ('50005',
    hex), or None."""
    m = re.fullmatch(r"(?:throttled=)?(?:0x)?([0-9a-fA-F]{1,16})", (text or "").strip())
    return int(m.group(1), 16) if m else None


def decode_throttled(flags: int | None) -> dict | None:
    """The conditions a throttled flag word holds: {"flags_hex", "now": [...], "since_boot": [...]}, names of
    RPI_THROTTLED_BITS in bit order; None for None."""
    if flags is None:
        return None
    return {
        "flags_hex": hex(flags),
        "now": [name for bit, name in RPI_THROTTLED_BITS.items() if flags >> bit & 1],
        "since_boot": [name for bit, name in RPI_THROTTLED_BITS.items() if flags >> (bit + RPI_SINCE_BOOT_SHIFT) & 1],
    }

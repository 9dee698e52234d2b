"""Host facts as a bundle stores them (host/facts-*.json): how values are written and read back."""

from __future__ import annotations

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

"""The fake probe (pipeline tests, no root): replays a script of samples; hidden from help and scenario files."""

from __future__ import annotations

from pathlib import Path

from rtqual.errors import RtqError

HIDDEN = True
SCRIPT = "script"  # its one option rtqual does not manage itself


def build(p: dict, defaults: dict) -> tuple[list[str], dict, dict]:
    """The script (absolute: the probe runs from anywhere) and the threshold in ns."""
    if not p.get(SCRIPT):
        raise RtqError("--script: required (a script of samples to replay)")
    args = ["--script", str(Path(p[SCRIPT]).resolve()), "--threshold", f"{p['threshold']}ns"]
    return args, {"script": p[SCRIPT], "threshold_ns": p["threshold"]}, {}


def label(params: dict) -> str:
    """'fake NAME-OF-SCRIPT'."""
    return f"fake {Path(params['script']).name}"

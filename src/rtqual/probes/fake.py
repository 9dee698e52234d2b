"""The fake probe (pipeline tests, no root): replays a script of samples; hidden from help and scenario files."""

from __future__ import annotations

from pathlib import Path

from rtqual.errors import RtqError

HIDDEN = True
SCRIPT = "script"  # its one option rtqual does not manage itself
EXTRAS = ("max_events",)  # passed on only when not the probe's default (a compressed day emits every event)


def build(p: dict, defaults: dict) -> tuple[list[str], dict, dict]:
    """The script (absolute: the probe runs from anywhere), the threshold in ns, and --max-events when
    not the default."""
    if not p.get(SCRIPT):
        raise RtqError("--script: required (a script of samples to replay)")
    args = ["--script", str(Path(p[SCRIPT]).resolve()), "--threshold", f"{p['threshold']}ns"]
    params = {"script": p[SCRIPT], "threshold_ns": p["threshold"]}
    for key in EXTRAS:
        if p.get(key) not in (None, defaults.get(key)):
            args += ["--" + key.replace("_", "-"), str(p[key])]
            params[key] = p[key]
    return args, params, {}


def label(params: dict) -> str:
    """'fake NAME-OF-SCRIPT'."""
    return f"fake {Path(params['script']).name}"

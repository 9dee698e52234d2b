"""Background loads that stress the host while a probe measures (hackbench, pi_stress, stress-ng, ...).

Adding a load = one module with a Load subclass + one line in LOADS.
"""

from rtqual.errors import RtqError
from rtqual.loads.base import COMMON_OPTIONS, Load, LoadSet
from rtqual.loads.command import Command
from rtqual.loads.cpu_hog import CpuHog
from rtqual.loads.hackbench import Hackbench
from rtqual.loads.pi_stress import PiStress
from rtqual.loads.stress_ng import StressNg

LOADS: dict[str, type[Load]] = {
    "hackbench": Hackbench,
    "pi_stress": PiStress,
    "stress-ng": StressNg,
    "cpu-hog": CpuHog,
    "command": Command,
}

__all__ = ["COMMON_OPTIONS", "LOADS", "Load", "LoadSet", "make_load"]


def make_load(spec: dict) -> Load:
    """A load from its spec: {"type": "hackbench", "groups": 4, "cpus": "1", ...}; keys and types checked."""
    if not isinstance(spec, dict):
        raise RtqError(f"load: expected a table of options, got {spec!r}")
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind not in LOADS:
        what = "missing 'type'" if kind is None else f"unknown type '{kind}'"
        raise RtqError(f"load: {what} (one of: {', '.join(LOADS)})")
    return LOADS[kind](**spec)

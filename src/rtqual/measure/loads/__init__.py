"""Background loads that stress the host while a probe measures (hackbench, pi_stress, stress-ng, ...): the drivers.

What a load type is to users (its doc line, options and pure checks) is declared in rtqual.loadspec; a driver
here takes its OPTIONS from there and says how to run it. Adding a load = its LoadType in rtqual.loadspec.TYPES +
one module with a Load subclass + one line in LOADS; then `python -m rtqual.measure.loads > docs/loads.md`.
"""

from rtqual.loadspec import load_type
from rtqual.measure.loads.base import Load, LoadSet
from rtqual.measure.loads.command import Command
from rtqual.measure.loads.cpu_hog import CpuHog
from rtqual.measure.loads.hackbench import Hackbench
from rtqual.measure.loads.inject import Inject
from rtqual.measure.loads.network import Network
from rtqual.measure.loads.pi_stress import PiStress
from rtqual.measure.loads.stress_ng import StressNg

LOADS: dict[str, type[Load]] = {
    "hackbench": Hackbench,
    "pi_stress": PiStress,
    "stress-ng": StressNg,
    "cpu-hog": CpuHog,
    "command": Command,
    "network": Network,
    "inject": Inject,
}
"""A driver per load type of rtqual.loadspec.TYPES, in its order."""

__all__ = ["LOADS", "Load", "LoadSet", "make_load"]


def make_load(spec: dict) -> Load:
    """A load from its spec: {"type": "hackbench", "groups": 4, "cpus": "1", ...}; keys and types checked."""
    kind = load_type(spec)
    return LOADS[kind](**{k: v for k, v in spec.items() if k != "type"})

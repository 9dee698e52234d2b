"""pi_stress (rt-tests): priority-inversion groups of SCHED_FIFO threads, run until SIGINT."""

from typing import Any

from rtqual.errors import RtqError
from rtqual.fields import Field
from rtqual.measure.loads.base import Load


class PiStress(Load):
    """pi_stress places its threads on CPUs itself and makes them SCHED_FIFO (priorities 1-4 here).

    Under a narrower CPU affinity it fails ("creating low_priority thread: Invalid argument"),
    and with --uniprocessor it still moves its threads to CPU 0: `cpus` is refused. It is an RT
    load on every CPU, so it needs force = true (DESIGN.md, Safety).
    """

    type = "pi_stress"
    tool = "pi_stress"
    package = "rt-tests"
    rt_inherent = True
    OPTIONS = {
        "groups": Field("int", "inversion groups (default chosen by pi_stress)", lo=1, hi=1024),
        "rr": Field("bool", "SCHED_RR instead of SCHED_FIFO for the test threads", default=False),
        "uniprocessor": Field("bool", "all groups on one CPU (pi_stress --uniprocessor)", default=False),
        "mlockall": Field("bool", "lock pi_stress's memory", default=False),
    }

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        if self.cpus is not None:
            raise RtqError(
                f"load '{self.name}': option 'cpus' is not supported: pi_stress pins its threads "
                "itself (use groups or uniprocessor)"
            )

    def argv(self, index: int) -> list[str]:
        o = self.options
        args = [self.exe, "--quiet"]
        if o["groups"] is not None:
            args.append(f"--groups={o['groups']}")
        args += [
            flag
            for flag, key in (("--rr", "rr"), ("--uniprocessor", "uniprocessor"), ("--mlockall", "mlockall"))
            if o[key]
        ]
        return args

"""pi_stress (rt-tests): priority-inversion groups of SCHED_FIFO threads, run until SIGINT."""

from rtqual.loadspec import TYPES
from rtqual.measure.loads.base import Load


class PiStress(Load):
    """pi_stress, which places its threads on CPUs itself and makes them SCHED_FIFO.

    Under a narrower CPU affinity it fails ("creating low_priority thread: Invalid argument"),
    and with --uniprocessor it still moves its threads to CPU 0: `cpus` is refused (loadspec). It is an RT
    load on every CPU, so it needs force = true (DESIGN.md, Safety).
    """

    type = "pi_stress"
    tool = "pi_stress"
    package = "rt-tests"
    rt_inherent = True
    OPTIONS = TYPES[type].options

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

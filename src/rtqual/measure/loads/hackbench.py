"""hackbench (rt-tests): groups of senders and receivers passing messages (scheduler + IPC load)."""

import sys

from rtqual.loadspec import TYPES
from rtqual.measure.loads.base import Load, python_env


class Hackbench(Load):
    """hackbench run again each time it ends, until stopped.

    hackbench ends after `loops` messages per sender. Rather than a huge --loops (which still
    ends in a long run, and removes hackbench's process creation and teardown from the load),
    a small supervisor (rtqual.measure.loads.respawn) starts it again each time it exits 0 and passes
    any failure on, so poll() still sees a broken hackbench as a dead load.
    """

    type = "hackbench"
    tool = "hackbench"
    package = "rt-tests"
    OPTIONS = TYPES[type].options

    def argv(self, index: int) -> list[str]:
        o = self.options
        args = [self.exe, "-T" if o["mode"] == "thread" else "-P"]
        if o["transport"] == "pipe":
            args.append("-p")
        for flag, key in (("-g", "groups"), ("-f", "fds"), ("-l", "loops"), ("-s", "datasize")):
            if o[key] is not None:
                args += [flag, str(o[key])]
        return [sys.executable, "-m", "rtqual.measure.loads.respawn", *args]

    def env(self) -> dict:
        return python_env()

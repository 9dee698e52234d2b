"""hackbench (rt-tests): groups of senders and receivers passing messages (scheduler + IPC load)."""

import sys

from rtqual.fields import Field
from rtqual.measure.loads.base import Load, python_env


class Hackbench(Load):
    """hackbench in a restart loop until stopped.

    hackbench ends after `loops` messages per sender. Rather than a huge --loops (which still
    ends in a long run, and removes hackbench's process creation and teardown from the load),
    a small supervisor (rtqual.measure.loads.respawn) starts it again each time it exits 0 and passes
    any failure on, so poll() still sees a broken hackbench as a dead load.
    """

    type = "hackbench"
    tool = "hackbench"
    package = "rt-tests"
    OPTIONS = {
        "groups": Field("int", "groups of senders and receivers (hackbench default 10)", lo=1, hi=10000),
        "fds": Field("int", "senders and receivers per group (hackbench default 20)", lo=1, hi=1000),
        "mode": Field("enum", "senders/receivers as processes or threads", ("process", "thread"), default="process"),
        "transport": Field("enum", "Unix socket pairs or pipes", ("socket", "pipe"), default="socket"),
        "loops": Field("int", "messages per sender in one run (hackbench default 100)", lo=1),
        "datasize": Field("int", "bytes per message (hackbench default 100)", lo=1),
    }

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

"""hackbench (rt-tests): groups of senders and receivers passing messages (scheduler + IPC load)."""

import sys

from rtqual.loads.base import Load, Option, python_env


class Hackbench(Load):
    """hackbench in a restart loop until stopped.

    hackbench ends after `loops` messages per sender. Rather than a huge --loops (which still
    ends in a long run, and removes hackbench's process creation and teardown from the load),
    a small supervisor (rtqual.loads.respawn) starts it again each time it exits 0 and passes
    any failure on, so poll() still sees a broken hackbench as a dead load.
    """

    type = "hackbench"
    tool = "hackbench"
    package = "rt-tests"
    OPTIONS = (
        Option("groups", "int", None, "groups of senders and receivers (hackbench default 10)", min=1, max=10000),
        Option("fds", "int", None, "senders and receivers per group (hackbench default 20)", min=1, max=1000),
        Option("mode", "str", "process", "senders/receivers as processes or threads", choices=("process", "thread")),
        Option("transport", "str", "socket", "Unix socket pairs or pipes", choices=("socket", "pipe")),
        Option("loops", "int", None, "messages per sender in one run (hackbench default 100)", min=1),
        Option("datasize", "int", None, "bytes per message (hackbench default 100)", min=1),
    )

    def argv(self, index: int) -> list[str]:
        o = self.options
        args = [self.exe, "-T" if o["mode"] == "thread" else "-P"]
        if o["transport"] == "pipe":
            args.append("-p")
        for flag, key in (("-g", "groups"), ("-f", "fds"), ("-l", "loops"), ("-s", "datasize")):
            if o[key] is not None:
                args += [flag, str(o[key])]
        return [sys.executable, "-m", "rtqual.loads.respawn", *args]

    def env(self) -> dict:
        return python_env()

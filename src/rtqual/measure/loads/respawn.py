"""Run a command again each time it exits 0; pass on any failure. Stopped by signalling its session.

Used for tools that end by themselves but must load the host until rtqual stops them
(hackbench ends after its loops). Only the first run's stdout is kept, so a day of restarts
does not fill the log; stderr (errors) is always kept.
Usage: python -m rtqual.measure.loads.respawn PROGRAM [ARG...]
"""

import os
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM):  # die at once with the group, no traceback
        signal.signal(sig, signal.SIG_DFL)
    stdout = None
    while True:
        rc = subprocess.call(argv, stdout=stdout)
        if rc > 0:
            return rc
        if rc < 0:  # the program was killed: die the same way so the load reports the signal
            signal.signal(-rc, signal.SIG_DFL)
            os.kill(os.getpid(), -rc)
            return 128 - rc
        stdout = subprocess.DEVNULL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The monitor's PV server: `python -m rtqual.monitor.pvserver --db FILE`. A real EPICS 7 IOC (base
records only, from the epicscorelibs wheel or the site base rtqual was built against) serving FILE's
records over Channel Access on loopback; each stdin line {"PV": value, ...} (a number, or a string PV's text)
is written with dbpf.
Prints {"type": "ready", "pid", "ca_server_port"} on stdout once serving; exits at EOF on stdin,
SIGINT or SIGTERM (through epicsExit)."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
from typing import NoReturn


def _stop(signum: int, _frame: object) -> NoReturn:
    sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rtqual.monitor.pvserver")
    ap.add_argument("--db", required=True)
    args = ap.parse_args(argv)
    from rtqual.measure.epics import env as epics_env
    from rtqual.measure.epics.iocmain import load_epics, start_ioc
    from rtqual.measure.run import native

    epics_env.apply()  # loopback even when started by hand
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # dbpf prints every value on stdout: not for us, not for the log
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        epics, base_dbd = load_epics(native.epics_site())
        start_ioc(epics, [base_dbd], args.db, "")
    except (OSError, AttributeError, RuntimeError) as e:
        print(f"rtqual.monitor.pvserver: {e}", file=sys.stderr, flush=True)
        return 1
    dbpf = epics.dbCore.dbpf
    dbpf.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    proto.write(
        json.dumps({"type": "ready", "pid": os.getpid(), "ca_server_port": os.environ.get("EPICS_CA_SERVER_PORT")})
        + "\n"
    )
    for line in sys.stdin:
        try:
            update = json.loads(line)
        except ValueError:
            continue
        for pv, value in update.items():  # a number, or a string PV's text (rtqual.monitor.pvs.cause_text)
            text = value if isinstance(value, str) else repr(float(value))
            if dbpf(str(pv).encode(), text.encode()):
                print(f"rtqual.monitor.pvserver: cannot write {pv}", file=sys.stderr, flush=True)
    return 0  # atexit: epicsExitCallAtExits stops the CA server


if __name__ == "__main__":
    sys.exit(main())

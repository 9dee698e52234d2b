"""The IOC process: `python -m rtqual.measure.epics.iocmain --db FILE --prefix P --fifo-in PATH --fifo-out PATH`.

--cpus and --rtprio apply to the process before EPICS creates any thread, like
`taskset -c LIST chrt -f N softIoc`: every thread inherits the CPU set; EPICS threads then set
their own SCHED_FIFO priorities (docs/epics.md), non-EPICS threads keep N.

One EPICS 7 IOC per process (iocInit cannot be repeated), from the epicscorelibs wheel or from
the site base rtqual was built against (epics_site.json), with rtqual's device support loaded
RTLD_GLOBAL before registerAllRecordDeviceDrivers. stdout carries
only JSON lines for rtqual (first: {"type": "ready", ...}); the IOC's own console output goes to
stderr. SIGINT or SIGTERM stops it through epicsExit (the device support joins its threads)."""

from __future__ import annotations

import argparse
import atexit
import ctypes
import importlib.metadata
import json
import os
import select
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from rtqual.measure.epics import env as epics_env


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 1 (not argparse's usage + exit 2)
        self.exit(1, f"{self.prog}: {message}\n")


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = _Parser(prog="python -m rtqual.measure.epics.iocmain", description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="database file (macros P, IN, OUT, MODE, PRIO)")
    ap.add_argument("--prefix", default="rtq:", help="PV prefix (macro P)")
    inp = ap.add_mutually_exclusive_group(required=True)
    inp.add_argument("--fifo-in", help="input line: a FIFO carrying int64 stimulus times")
    inp.add_argument("--eventfd-in", type=int, metavar="FD", help="input line: an inherited eventfd")
    inp.add_argument(
        "--gpio-in",
        metavar="CHIP:LINE",
        help="input line: a GPIO line with edge events, '/dev/gpiochip0:3 [edge=rising|falling|both]'",
    )
    inp.add_argument(
        "--uio-in",
        metavar="DEV",
        help="input line: a Linux UIO device's interrupt, /dev/uioN (the harness raises, acknowledges and unmasks it)",
    )
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--fifo-out", help="output line: a FIFO receiving 4 x int64 per response")
    out.add_argument("--eventfd-out", type=int, metavar="FD", help="output line: an inherited eventfd")
    out.add_argument("--gpio-out", metavar="CHIP:LINE", help="output line: a GPIO line set to the bo's value")
    ap.add_argument(
        "--times-out",
        metavar="FIFO",
        help="with --eventfd-out or --gpio-out: also write each "
        "response's four times (4 x int64) to this FIFO, for a harness watching the line",
    )
    ap.add_argument(
        "--mode",
        choices=("callback", "immediate"),
        default="callback",
        help="process the records in the callback threads (scanIoRequest) or in the reader thread (scanIoImmediate)",
    )
    ap.add_argument("--prio", type=int, default=90, help="reader thread EPICS priority 0..99 (default 90)")
    ap.add_argument("--macros", default="", help="extra macros for the database, a=1,b=2")
    ap.add_argument("--cpus", metavar="LIST", help="CPU affinity of the whole IOC process, e.g. 0-1 or 1")
    ap.add_argument("--rtprio", type=int, metavar="N", help="SCHED_FIFO priority 1..99 of the IOC process")
    ap.add_argument(
        "--orphan-removes",
        metavar="DIR",
        help="remove DIR at exit if the parent died first (rtqual killed: nobody else is left to clean its IOC folder)",
    )
    ap.add_argument("--reader-cpu", type=int, metavar="CPU", help="pin the bi's reader thread to this CPU")
    args = ap.parse_args(argv)
    if args.times_out and args.fifo_out:
        ap.error("--times-out goes with --eventfd-out or --gpio-out (a --fifo-out carries the times itself)")
    return args


def place_process(cpus: str | None, rtprio: int | None) -> None:
    """CPU affinity and SCHED_FIFO for this (still single-threaded) process; RtqError if refused."""
    from rtqual.errors import RtqError
    from rtqual.units import parse_cpulist

    if cpus is not None:
        wanted = parse_cpulist(cpus)  # checks that every CPU is online
        try:
            os.sched_setaffinity(0, wanted)
        except OSError as e:
            raise RtqError(f"--cpus {cpus}: cannot set the IOC's CPU affinity: {e.strerror}") from None
    if rtprio is not None:
        lo, hi = os.sched_get_priority_min(os.SCHED_FIFO), os.sched_get_priority_max(os.SCHED_FIFO)
        if not lo <= rtprio <= hi:
            raise RtqError(f"--rtprio {rtprio}: a SCHED_FIFO priority is {lo}..{hi}")
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(rtprio))
        except PermissionError:
            raise RtqError(
                f"--rtprio {rtprio}: SCHED_FIFO not permitted (needs root, CAP_SYS_NICE or RLIMIT_RTPRIO)"
            ) from None


class _Epics:
    """libCom, libdbCore and libdbRecStd, loaded RTLD_GLOBAL (the device support and
    registerAllRecordDeviceDrivers find their symbols there)."""

    def __init__(self, path_of: Callable[[str], str]):
        self.Com, self.dbCore, self.dbRecStd = (
            ctypes.CDLL(path_of(n), mode=ctypes.RTLD_GLOBAL) for n in ("Com", "dbCore", "dbRecStd")
        )
        _ = self.dbCore.registerAllRecordDeviceDrivers  # AttributeError now, on a base without it
        self.dbCore.dbLoadDatabase.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        self.dbCore.dbLoadRecords.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self.dbCore.registerAllRecordDeviceDrivers.argtypes = [ctypes.c_void_p]


def load_epics(site: dict | None) -> tuple[_Epics, Path]:
    """EPICS from the site base rtqual was built against (site: lib_dir, dbd_dir), else from the
    epicscorelibs wheel; and its base.dbd. One copy of each library per process: the device
    support links the same files (its rpath)."""
    if site:
        return _Epics(lambda n: os.path.join(site["lib_dir"], f"lib{n}.so")), Path(site["dbd_dir"]) / "base.dbd"
    import epicscorelibs.path

    return _Epics(epicscorelibs.path.get_lib), Path(epicscorelibs.path.base_path) / "dbd" / "base.dbd"


def start_ioc(epics: _Epics, dbds: list[Path], db: str, macros: str) -> None:
    """Like softIoc with `st.cmd`: dbLoadDatabase each dbd, registerAllRecordDeviceDrivers,
    dbLoadRecords, iocInit. RuntimeError if a step fails."""
    atexit.register(epics.Com.epicsExitCallAtExits)
    epics.dbCore.iocshRegisterCommon()
    for dbd in dbds:
        if epics.dbCore.dbLoadDatabase(dbd.name.encode(), str(dbd.parent).encode(), None):
            raise RuntimeError(f"cannot load {dbd}")
    pdbbase = ctypes.c_void_p.in_dll(epics.dbCore, "pdbbase")
    if epics.dbCore.registerAllRecordDeviceDrivers(pdbbase):
        raise RuntimeError("registerAllRecordDeviceDrivers failed")
    if epics.dbCore.dbLoadRecords(db.encode(), macros.encode()):
        raise RuntimeError(f"Error loading {db} with {macros}")
    if epics.dbCore.iocInit():
        raise RuntimeError("iocInit failed")


def pvxs_ioc() -> tuple[Path, str] | None:
    """pvxsIoc.dbd and the libpvxsIoc path from the pvxslibs wheel (QSRV2: every record served over
    PVA too), with QSRV2 enabled unless the environment says otherwise; None without pvxslibs."""
    try:
        import pvxslibs.path
        from setuptools_dso import find_dso
    except ImportError:
        return None
    os.environ.setdefault("PVXS_QSRV_ENABLE", "YES")
    return Path(pvxslibs.path.dbd_path) / "pvxsIoc.dbd", find_dso("pvxslibs.lib.pvxsIoc")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from rtqual.errors import RtqError

    try:
        place_process(args.cpus, args.rtprio)
    except RtqError as e:
        print(f"rtqual.measure.epics.iocmain: {e}", file=sys.stderr)
        return 1
    epics_env.apply()  # loopback even when started by hand; ports come from the parent
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # EPICS prints to stdout: send it to stderr, keep stdout for JSON lines

    from rtqual.measure.run import native

    lib, dbd = native.epics_devsup()
    site = native.epics_site()
    try:
        epics, base_dbd = load_epics(site)
    except (OSError, AttributeError) as e:
        print(
            f"rtqual.measure.epics.iocmain: EPICS {site['lib_dir'] if site else 'epicscorelibs'}: {e}", file=sys.stderr
        )
        return 1
    devsup = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)  # pvar_dset_*/pvar_func_* for registerAll…
    devsup.rtqualEpicsVersion.restype = ctypes.c_char_p

    line_in = (
        f"fifo:{args.fifo_in}"
        if args.fifo_in
        else f"gpio:{args.gpio_in}"
        if args.gpio_in
        else f"uio:{args.uio_in}"
        if args.uio_in
        else f"eventfd:{args.eventfd_in}"
    )
    line_out = (
        f"fifo:{args.fifo_out}"
        if args.fifo_out
        else f"gpio:{args.gpio_out}"
        if args.gpio_out
        else f"eventfd:{args.eventfd_out}"
    )
    if args.times_out:
        line_out += f" times={args.times_out}"
    opts = f"cpu={args.reader_cpu}" if args.reader_cpu is not None else ""
    macros = f"P={args.prefix},IN={line_in},OUT={line_out},MODE={args.mode},PRIO={args.prio},OPTS={opts}"
    if args.macros:
        macros += "," + args.macros

    parent = os.getppid()
    stop = {"sig": 0}

    def on_signal(signum: int, frame: object) -> None:
        stop["sig"] = signum

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    # A signal may land in any thread that does not block it, and between a check and pause();
    # the wakeup fd is written by whichever thread takes it, so the main thread always sees it.
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)

    dbds = [base_dbd, dbd]
    pva = None if site else pvxs_ioc()  # the wheel's pvxs links the wheel's EPICS libraries
    if pva:
        ctypes.CDLL(pva[1], mode=ctypes.RTLD_GLOBAL)
        dbds.append(pva[0])
    try:
        start_ioc(epics, dbds, args.db, macros)
    except RuntimeError as e:  # e.g. the database did not load; EPICS said why just above
        print(f"rtqual.measure.epics.iocmain: {e}", file=sys.stderr, flush=True)
        return 1
    if devsup.rtqualDevsupErrors():
        print(
            f"rtqual.measure.epics.iocmain: {devsup.rtqualDevsupErrors()} record(s) could not use rtqual's "
            "device support (see above)",
            file=sys.stderr,
            flush=True,
        )
        os._exit(2)  # no clean epicsExit: the IOC is half set up
    proto.write(
        json.dumps(
            {
                "type": "ready",
                "pid": os.getpid(),
                "prefix": args.prefix,
                "mode": args.mode,
                "epics_version": devsup.rtqualEpicsVersion().decode(),
                "epics_libs": str(Path(epics.dbCore._name).parent),
                "epicscorelibs": None if site else importlib.metadata.version("epicscorelibs"),
                "ca_server_port": os.environ.get("EPICS_CA_SERVER_PORT"),
                "pva_server_port": os.environ.get("EPICS_PVA_SERVER_PORT") if pva else None,
                "cpus": args.cpus,
                "rtprio": args.rtprio,
                "reader_cpu": args.reader_cpu,
            }
        )
        + "\n"
    )
    ca_server = CaServerStats(epics)
    while not stop["sig"]:
        if select.select([wake_r], [], [], CA_STATS_PERIOD_S)[0]:
            os.read(wake_r, 512)
        else:
            ca_server.sample()
    if args.orphan_removes and orphaned(parent, stop["sig"]):
        shutil.rmtree(args.orphan_removes, ignore_errors=True)
        return 0
    try:
        ca_server.sample()
        end = {
            "type": "end",
            "signal": stop["sig"],
            "callback_queues": callback_queues(epics),
            "ca_server": ca_server.doc(),
        }
        proto.write(json.dumps(end) + "\n")
    except BrokenPipeError:
        pass
    return 0  # atexit: epicsExitCallAtExits stops the device support threads and the servers


CALLBACK_PRIORITIES = ("low", "medium", "high")  # callback.h: priorityLow, priorityMedium, priorityHigh


class _QueueStats(ctypes.Structure):
    """callback.h's callbackQueueStats (EPICS 7.0.2 and later)."""

    _fields_ = [
        ("size", ctypes.c_int),
        ("numUsed", ctypes.c_int * 3),
        ("maxUsed", ctypes.c_int * 3),
        ("numOverflow", ctypes.c_int * 3),
    ]


def callback_queues(epics: _Epics) -> dict | None:
    """The callback queues as the IOC ran them (callbackQueueStatus, like iocsh's callbackQueueShow): their size
    and, per priority, the entries in use now, the high-water mark since iocInit and the overflows (requests
    refused: queue full); None on a base without callbackQueueStatus."""
    status = getattr(epics.dbCore, "callbackQueueStatus", None)
    if status is None:
        return None
    q = _QueueStats()
    if status(0, ctypes.byref(q)):
        return None
    return {
        "size": q.size,
        **{
            name: {"used": q.numUsed[i], "high_water": q.maxUsed[i], "overflows": q.numOverflow[i]}
            for i, name in enumerate(CALLBACK_PRIORITIES)
        },
    }


CA_STATS_PERIOD_S = 1.0  # the CA server's channel and client counts sampled this often while the IOC runs


class CaServerStats:
    """The CA server's channels and client circuits (rsrv.h's casStatsFetch, what iocsh's casr prints first): the
    most seen at once, sampled every CA_STATS_PERIOD_S while the IOC runs, and at its end. None on a base without
    casStatsFetch."""

    def __init__(self, epics: _Epics):
        self.fetch = getattr(epics.dbCore, "casStatsFetch", None)
        self.most = {"channels_max": 0, "clients_max": 0}
        self.samples = 0

    def sample(self) -> None:
        if self.fetch is None:
            return
        chans, clients = ctypes.c_uint(0), ctypes.c_uint(0)
        self.fetch(ctypes.byref(chans), ctypes.byref(clients))
        self.samples += 1
        self.most = {
            "channels_max": max(self.most["channels_max"], chans.value),
            "clients_max": max(self.most["clients_max"], clients.value),
        }

    def doc(self) -> dict | None:
        return {**self.most, "samples": self.samples, "period_s": CA_STATS_PERIOD_S} if self.fetch else None


def orphaned(parent: int, sig: int, wait_s: float = 2.0) -> bool:
    """rtqual (pid `parent`) died: our SIGTERM was its PR_SET_PDEATHSIG. That signal comes as
    soon as the thread that started us exits, while rtqual's other threads may still be dying
    (getppid() still `parent`): wait a moment for the reparenting. rtqual's own stop is SIGINT."""
    deadline = time.monotonic() + (wait_s if sig == signal.SIGTERM else 0)
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.02)
    return os.getppid() != parent


if __name__ == "__main__":
    sys.exit(main())

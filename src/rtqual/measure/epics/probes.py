"""The IOC as a service kind: its parameters, its spec in the plan, and the labels and help of the probes
measured through it (ioc = iocresp, ca-rtt, pva-rtt: the native table's "service"). Imports no EPICS: the
service itself (rtqual.measure.epics.service.IocService) is imported only when a case runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rtqual import services
from rtqual.fields import Field

S = 1_000_000_000
EPICS_SCANS = ("10 second", "5 second", "2 second", "1 second", ".5 second", ".2 second", ".1 second")
IOC_PARAMS = {
    "preset": Field(
        "enum",
        "record chain: kek = bi -> bo (KEK's two records), aps = bi -> calc -> bo",
        ("kek", "aps"),
        default="kek",
    ),
    "mode": Field(
        "enum",
        "process the records in the callback thread (scanIoRequest) or in the reader thread (scanIoImmediate)",
        ("callback", "immediate"),
        default="callback",
    ),
    "ioc_chain": Field(
        "int",
        "calc records between bi and bo, each passing the value on (default: the preset's, kek 0, aps 1)",
        lo=0,
        hi=10_000,
    ),
    "ioc_db": Field(
        "str",
        "a database file appended to the IOC's (macro P is the prefix): your own records "
        "(a relative path is taken from the current directory)",
    ),
    "ioc_prefix": Field("str", "PV prefix of the IOC's records (default: rtq<random hex>:, new each case)"),
    "ioc_priority": Field("int", "EPICS priority (0-99) of the IOC's input reader thread", lo=0, hi=99, default=90),
    "ioc_rtprio": Field(
        "int", "run the IOC process SCHED_FIFO at this priority, like chrt -f (default: as rtqual runs)", lo=1, hi=99
    ),
    "ioc_cpus": Field("cpulist", "CPU affinity of the IOC process, all its threads (default: all)"),
    "reader_cpu": Field("int", "CPU of the IOC's input reader thread (default: the IOC's affinity)", lo=0, hi=8191),
    "gpio": Field(
        "str",
        "a board's GPIO lines instead of the FIFOs, CHIP:STIM,IN,OUT,RESP (e.g. "
        "/dev/gpiochip0:17,27,22,23) with jumper wires STIM -> IN and OUT -> RESP: rtqual toggles "
        "STIM, the IOC's bi waits on IN, its bo drives OUT, rtqual timestamps RESP's edges "
        "(kernel timestamps)",
    ),
    "input": Field(
        "str",
        "the IOC's input instead of the FIFO: uio:/dev/uioN, a device's interrupt through Linux UIO (the bi "
        "processes when the UIO read returns; rtqual raises the interrupt with --trigger BAR:OFFSET=VALUE, or "
        "without it (passive) the interrupt comes from outside and t0 is the kernel's irq_handler_entry; --ack "
        "acknowledges it; the kernel's stages from tracefs split the wake stage: docs/interrupts.md)",
    ),
    "records": Field(
        "int",
        "CA load: records in the IOC scanned periodically and served to the CA clients (0: none)",
        lo=0,
        hi=100_000,
        default=0,
    ),
    "scan": Field("enum", "CA load: scan period of the load records", EPICS_SCANS, default=".1 second"),
    "put_rate": Field(
        "int",
        "CA load: puts per second by the put client, round-robin over the records (0: no put client)",
        lo=0,
        hi=1_000_000,
        default=1000,
    ),
    "ca_monitor": Field("enum", "CA load: a client monitoring every load record", ("yes", "no"), default="yes"),
}
HELP = {
    "ioc": "EPICS IOC response latency: stimulus -> bi -> (chain) -> bo -> response, total and per stage",
    "ca-rtt": "Channel Access put -> monitor round trip through an IOC (rtqual's own unless --put names a PV)",
    "pva-rtt": "PV Access put -> monitor round trip through an IOC (rtqual's own unless --put names a PV)",
}


def ioc_spec(p: dict) -> dict:
    """The IOC service spec of a case (rtqual.measure.epics.service.IocService takes it)."""
    spec = {"type": "ioc", **{k: p.get(k) for k in IOC_PARAMS}}
    spec["ca_monitor"] = p.get("ca_monitor") == "yes"
    if spec["ioc_db"]:
        spec["ioc_db"] = str(Path(spec["ioc_db"]).absolute())  # the bundle names the file itself
    return spec


def _load_text(c: dict) -> str:
    return f" +{c['records']} records CA load" if c.get("records") else ""


def ioc_label(c: dict) -> str:
    """'ioc kek callback 50 Hz': the label of a one-case `rtqual run ioc`."""
    chain = f" chain {c['ioc_chain']}" if c.get("ioc_chain") is not None else ""
    gpio = " gpio" if c.get("gpio") else (" uio" if c.get("trigger") else " uio passive") if c.get("input") else ""
    return f"ioc {c['preset']}{chain} {c['mode']}{gpio} {c['rate']} Hz{_load_text(c)}"


def rtt_label(probe: str) -> Callable[[dict], str]:
    """'ca-rtt 50 Hz rtqual IOC' (or 'PV NAME' when --put names the user's own PV)."""

    def label(c: dict) -> str:
        where = f"PV {c['put']}" if c.get("put") else "rtqual IOC"
        return f"{probe} {c['rate']} Hz {where}{_load_text(c)}"

    return label


def label(run_as: str) -> Callable[[dict], str]:
    """The one-case label of a probe run through the IOC."""
    return ioc_label if run_as == "ioc" else rtt_label(run_as)


def help_of(run_as: str, summary: str) -> str:
    return HELP.get(run_as, summary)


services.register(
    services.ServiceKind(
        name="ioc",
        params=IOC_PARAMS,
        spec=ioc_spec,
        label=label,
        help=help_of,
        factory="rtqual.measure.epics.service:IocService",
        label_keys=("preset", "mode"),
        startup_ns=2 * S,  # the IOC starts in about a second
    )
)

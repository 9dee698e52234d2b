"""The IOC as a service of one measured case (case["service"] for the runner): rtqual's EPICS IOC
running just around the probe, and what the bundle records about it."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from rtqual.answers.requirements import texts, upper_limits_ns
from rtqual.errors import RtqError
from rtqual.measure.epics.ca import CaLoad, Repeater, ca_db
from rtqual.measure.epics.ioc import Ioc
from rtqual.results.bundle import write_json
from rtqual.units import format_cpulist, online_cpus

_POLICY = {0: "TS", 1: "FF", 2: "RR", 3: "B", 5: "IDL", 6: "DLN"}  # as ps -o cls


def ioc_threads(pid: int) -> list[dict]:
    """The process's threads like `ps -eLo tid,cls,rtprio,comm` (from /proc/PID/task/*/stat), with each one's
    allowed CPUs (status Cpus_allowed_list: the reader's own pinning; advise relates them to interrupt threads)."""
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            stat = (task / "stat").read_text()
            status = (task / "status").read_text()
        except OSError:
            continue
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is stat field 3 (state)
        rtprio, policy, cpu = int(fields[37]), int(fields[38]), int(fields[36])
        out.append(
            {
                "tid": int(task.name),
                "comm": comm,
                "cls": _POLICY.get(policy, str(policy)),
                "rtprio": rtprio if policy in (1, 2) else None,
                "last_cpu": cpu,
                "cpus": m.group(1) if m else None,
            }
        )
    return out


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the process's threads, summed per thread name (EPICS names its
    threads by role: cbLow, scan-0.1, CAS-client, ...); {} once the process is gone."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()  # fields[11], [12]: stat fields 14 utime, 15 stime
        out[comm] = out.get(comm, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_used(before: dict[str, float], after: dict[str, float], span_s: float) -> dict:
    """The IOC's CPU over a span, per thread name (seconds, busiest first) and in all (% of one CPU)."""
    used = {k: round(v - before.get(k, 0.0), 3) for k, v in after.items()}
    used = {k: v for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v > 0}
    total = sum(used.values())
    return {"span_s": round(span_s, 3), "cpu_pct": round(100 * total / span_s, 1) if span_s > 0 else None,
            "threads_s": used}  # fmt: skip


def ioc_process_facts(pid: int) -> dict:
    """Threads, locked memory and CPU affinity of the running IOC."""
    status = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            status[key] = value.strip()
    except OSError:
        pass
    try:
        affinity = sorted(os.sched_getaffinity(pid))
    except OSError:
        affinity = None
    return {
        "threads": ioc_threads(pid),
        "vm_lck": status.get("VmLck"),
        "cpus_allowed": status.get("Cpus_allowed_list"),
        "affinity": affinity,
    }


class IocService:
    """The "ioc" service (rtqual.services; registered by rtqual.measure.epics.probes): an IOC running around the
    probe (started before it, always stopped after it), with its CA load clients if the spec asks for
    them. The FIFOs exist from construction on, so the probe's options can name them ($(IOC_IN),
    $(IOC_OUT), $(P): fill()) and be checked before anything runs; the IOC's console goes to the case folder."""

    key = "ioc"

    def __init__(self, spec: dict):
        self.spec = dict(spec)
        online = online_cpus()
        wanted = list(spec.get("ioc_cpus") or []) + ([spec["reader_cpu"]] if spec.get("reader_cpu") is not None else [])
        if not set(wanted) <= set(online):
            raise RtqError(
                f"IOC CPUs (--ioc-cpus, --reader-cpu): {format_cpulist(sorted(set(wanted) - set(online)))} "
                f"not online (online: {format_cpulist(online)})"
            )
        extra_db = ca_db(spec.get("records") or 0, spec.get("scan") or ".1 second") + user_db(spec.get("ioc_db"))
        self.gpio = gpio_lines(spec.get("gpio"))
        self.uio = uio_input(spec.get("input"), bool(self.gpio))
        gpio: dict[str, Any] = (
            {"gpio_in": f"{self.gpio['in']} edge=both", "gpio_out": self.gpio["out"]} if self.gpio else {}
        )
        placement: dict[str, Any] = {
            k: spec[s]
            for k, s in (("cpus", "ioc_cpus"), ("rtprio", "ioc_rtprio"), ("reader_cpu", "reader_cpu"))
            if spec.get(s) is not None
        }
        self.ioc = Ioc(
            preset=spec.get("preset", "kek"),
            mode=spec.get("mode", "callback"),
            prio=spec.get("ioc_priority", 90),
            prefix=spec.get("ioc_prefix"),
            chain=spec.get("ioc_chain"),
            max_limit_us=max_limit_us(spec),
            extra_db=extra_db,
            **gpio,
            uio_in=self.uio,
            **placement,
        )
        for fifo in (self.ioc.fifo_in, self.ioc.fifo_out):  # in the Ioc's own temp folder
            os.mkfifo(fifo, 0o600)
        self.env = self.ioc.env  # the probe's too: a CA client (ca-rtt) finds the IOC on loopback

    def fill(self, fixed: dict[str, str]) -> dict[str, str]:
        """The probe options this IOC fills ({param: value}) from the table's `fixed` ones ({param: macro}):
        macros $(P), $(IOC_IN), $(IOC_OUT) replaced; on GPIO lines the stimulus is not the input FIFO but
        our line wired to the IOC's input (gpio_stim), and the response is timestamped on gpio_resp; on a UIO input
        the stimulus is the device's interrupt (uio: the probe raises it with its --trigger, or waits for it)."""
        macros = {"$(P)": self.ioc.prefix, "$(IOC_IN)": str(self.ioc.fifo_in), "$(IOC_OUT)": str(self.ioc.fifo_out)}
        out: dict[str, str] = {}
        for key, value in fixed.items():
            if self.gpio and value == "$(IOC_IN)":
                out.update(gpio_stim=self.gpio["stim"], gpio_resp=self.gpio["resp"])
                continue
            if value == "$(IOC_UIO)":  # the IOC's UIO input, the device the probe raises (none: no option)
                if self.uio:
                    out["uio"] = self.uio
                continue
            if self.uio and value == "$(IOC_IN)":
                continue
            for macro, text in macros.items():
                value = value.replace(macro, text)
            out[key] = value
        return out

    def resolve(self, args: list[str]) -> list[str]:
        """Probe options with the IOC's macros filled in: the options whose value holds a macro go
        through fill(), the others stay as they are (after them)."""
        fixed: dict[str, str] = {}
        rest: list[str] = []
        i = 0
        while i < len(args):
            if args[i].startswith("--") and i + 1 < len(args) and "$(" in args[i + 1]:
                fixed[args[i][2:].replace("-", "_")] = args[i + 1]
                i += 2
            else:
                rest.append(args[i])
                i += 1
        return [x for k, v in self.fill(fixed).items() for x in ("--" + k.replace("_", "-"), v)] + rest

    def __call__(self, case_dir: Path):
        @contextmanager
        def running():
            self.ioc.log = Path(case_dir) / "ioc.stderr"
            info = {
                "preset": self.ioc.preset,
                "mode": self.ioc.mode,
                "reader_priority": self.ioc.prio,
                "prefix": self.ioc.prefix,
                "spec": {k: texts(v) if k == "require" else v for k, v in self.spec.items() if k != "type"},
            }
            spec, load = self.spec, None
            with ExitStack() as clients:
                try:
                    (Path(case_dir) / "ioc.db").write_text(self.ioc.database())  # kept, also if it fails to load
                    # the repeater first (epicscorelibs ships no caRepeater): else the IOC's own CA client (dbCa)
                    # may be first on the port and fork libca's repeater from the IOC, bound to the wildcard
                    clients.enter_context(Repeater(self.ioc.env))
                    self.ioc.start()
                    r = self.ioc.ready
                    info.update(
                        {
                            k: r.get(k)
                            for k in (
                                "pid",
                                "epics_version",
                                "epicscorelibs",
                                "epics_libs",
                                "ca_server_port",
                                "pva_server_port",
                                "rtprio",
                                "reader_cpu",
                            )
                        }
                    )
                    assert self.ioc.proc is not None  # started
                    info.update(ioc_process_facts(self.ioc.proc.pid))
                    if spec.get("records") and (spec.get("put_rate") or spec.get("ca_monitor")):
                        load = clients.enter_context(
                            CaLoad(
                                self.ioc.prefix,
                                spec["records"],
                                spec.get("put_rate", 0),
                                bool(spec.get("ca_monitor")),
                                env=self.ioc.env,
                            )
                        )
                    write_json(Path(case_dir) / "ioc.json", info)  # ready, clients too: for displays
                    pva = (
                        f" and PVA on {self.ioc.env.get('EPICS_PVAS_INTF_ADDR_LIST')}:{info['pva_server_port']}"
                        if info.get("pva_server_port")
                        else ""
                    )
                    print(
                        f"rtqual: IOC {self.ioc.prefix} serving CA on "
                        f"{self.ioc.env.get('EPICS_CAS_INTF_ADDR_LIST')}:{info['ca_server_port']}{pva} "
                        f"(operator PVs {self.ioc.prefix}stat:N, {self.ioc.prefix}lat:total:median, ...; "
                        f"display rtqual/epics/rtqual.bob P={self.ioc.prefix})",
                        file=sys.stderr,
                        flush=True,
                    )
                    cpu0, t0 = thread_cpu_s(self.ioc.proc.pid), time.monotonic()
                    yield info
                    info["alive_at_end"] = self.ioc.alive()
                    info["cpu"] = cpu_used(cpu0, thread_cpu_s(self.ioc.proc.pid), time.monotonic() - t0)
                finally:
                    clients.close()  # the CA clients first, while the IOC still serves them
                    if load:
                        try:
                            info["ca_load"] = load.result()
                        except RtqError as e:
                            info["ca_load"] = {"records": spec["records"], "error": str(e)}
                    info["exit_code"] = self.ioc.stop()
                    for key in ("callback_queues", "ca_server"):  # queues' high-water marks, CA server's most
                        if self.ioc.end.get(key):  # (iocmain's end)
                            info[key] = self.ioc.end[key]

        return running()

    def temp_paths(self) -> list[Path]:
        """What this service made outside the bundle (its temp folder), for the run's change journal."""
        return [self.ioc.dir] if self.ioc._own_dir else []

    def discard(self) -> None:
        """The case never ran: remove the FIFOs' folder."""
        if self.ioc.proc is None:
            shutil.rmtree(self.ioc.dir, ignore_errors=True)


def max_limit_us(spec: dict) -> float | None:
    """The tightest `max` requirement (µs) of an `ioc` case (spec["require"], spec["run_as"]: rtqual.measure.run.session
    .prepare): lat:total's alarm limits. None for other probes (ca-rtt's samples are not lat:total) or none given."""
    limits = upper_limits_ns(spec.get("require") or []) if spec.get("run_as") == "ioc" else {}
    return limits["max"] / 1000 if "max" in limits else None


def gpio_lines(spec: str | None) -> dict[str, str] | None:
    """--gpio CHIP:STIM,IN,OUT,RESP -> {"stim": "CHIP:STIM", "in": ..., "out": ..., "resp": ...}."""
    if not spec:
        return None
    chip, _, lines = spec.rpartition(":")
    names = ("stim", "in", "out", "resp")
    offsets = lines.split(",")
    if not chip or len(offsets) != 4 or not all(o.isdigit() for o in offsets) or len(set(offsets)) != 4:
        raise RtqError(
            f"--gpio {spec}: want CHIP:STIM,IN,OUT,RESP, four different line numbers (e.g. /dev/gpiochip0:17,27,22,23)"
        )
    return {name: f"{chip}:{o}" for name, o in zip(names, offsets)}


def uio_input(spec: str | None, gpio: bool) -> str | None:
    """--input uio:/dev/uioN -> "/dev/uioN" (None without --input); the device itself is checked by the probe."""
    if not spec:
        return None
    kind, _, dev = spec.partition(":")
    if kind != "uio" or not dev.startswith("/") or any(c.isspace() for c in dev):
        raise RtqError(f"--input {spec}: want uio:/dev/uioN (a Linux UIO device; the FIFO is the default input)")
    if gpio:
        raise RtqError("--input and --gpio: one input, a UIO device's interrupt or a board's GPIO lines")
    return dev


def user_db(path: str | None) -> str:
    """The text of a user's database file for the IOC ('' for none); a clear error if unreadable."""
    if not path:
        return ""
    try:
        return "\n" + Path(path).read_text() + "\n"
    except (OSError, UnicodeDecodeError) as e:
        raise RtqError(f"--ioc-db {path}: {getattr(e, 'strerror', None) or e}") from None

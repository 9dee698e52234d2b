"""`rtqual monitor --pvs PREFIX`: the windows as EPICS PVs, named as devIocStats names its own
(PREFIX:LAT_MAX, PREFIX:SAMPLES, PREFIX:CPU0:LAT_MAX, PREFIX:HEARTBEAT, PREFIX:UPTIME, ...), served over Channel
Access by a real EPICS 7 IOC from the epicscorelibs wheel (rtqual.measure.epics.iocmain's loader, base records only)
in its own process: an IOC cannot live in the monitor's process beside prometheus-client's threads and
must not stall it, and iocInit runs once per process. The monitor sends each window's values as one
JSON line on the server's stdin; the server writes them with dbpf (records process, alarms and
monitors follow). Loopback by default (rtqual.measure.epics.env, never overriding the user's EPICS_*).

PVS is the one list of the PVs: the database and docs/monitoring.md's table (`python -m
rtqual.monitor.pvs`) are made from it. Latencies are in µs (EGU us). A latency PV's alarm limits come
from the monitor's requirements (--require, --profile) on its statistic: HIHI (MAJOR) at the limit, HIGH (MINOR)
at half of it (rtqual.measure.epics.ioc.alarm_fields); without one, none. Settable at run time like any field:
caput PREFIX:LAT_MAX.HIHI 500.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rtqual.answers.requirements import Requirement, upper_limits_ns
from rtqual.errors import RtqError
from rtqual.measure.epics.ioc import ALARM_STATS, OPERATOR_PVS, alarm_fields, operator_db, uptime_db


@dataclass(frozen=True)
class Pv:
    """One ai record of the monitor, PREFIX:name (per_cpu: PREFIX:CPU<n>:name): the window's key it shows (ns
    keys in µs), its EGU, PREC and DESC (at most 40 characters, CPU<n>'s filled in), and the requirement
    statistic whose limit sets its alarm fields (None: no alarm fields)."""

    name: str
    key: str
    egu: str
    prec: int
    desc: str
    stat: str | None = None
    per_cpu: bool = False


def _latency(name: str, key: str, stat: str, what: str, per_cpu: bool = False) -> Pv:
    where = "CPU <n>" if per_cpu else "all CPUs"
    return Pv(name, key, "us", 1, f"{what} latency, last window, {where}", stat, per_cpu)


PVS = (
    _latency("LAT_MIN", "min_ns", "min", "minimum"),
    _latency("LAT_MEAN", "mean_ns", "mean", "mean"),
    _latency("LAT_P50", "p50_ns", "p50", "median"),
    _latency("LAT_P99", "p99_ns", "p99", "p99"),
    _latency("LAT_P9999", "p9999_ns", "p99.99", "p99.99"),
    _latency("LAT_MAX", "max_ns", "max", "maximum"),
    _latency("LAT_MAX", "max_ns", "max", "maximum", per_cpu=True),
    _latency("LAT_P99", "p99_ns", "p99", "p99", per_cpu=True),
    Pv("SAMPLES", "samples", "samples", 0, "samples in the last window"),
    Pv("OVERRUNS", "overruns", "periods", 0, "periods missed in the last window"),
    Pv("OVER_THRESH", "over_threshold", "samples", 0, "samples over --threshold, last window"),
    Pv("WINDOW_S", "duration_s", "s", 1, "length of the last window"),
    Pv("HEARTBEAT", "heartbeat", "windows", 0, "windows published since start"),
)
CAPTURE_PVS = (  # --capture: (name, record, EGU, PREC, DESC)
    ("SPIKES", "ai", "spikes", 0, "spikes captured since start (--capture)"),
    ("SPIKE_LAT", "ai", "us", 1, "latency of the last captured spike"),
    ("SPIKE_CAUSE", "waveform", "text", 0, "what held the CPU, last captured spike"),
)
CAUSE_CHARS = (
    127  # SPIKE_CAUSE is a long string (a CHAR waveform of 128, its NUL included): caget -S PREFIX:SPIKE_CAUSE
)
READY_TIMEOUT_S = 30.0


def capture_db(prefix: str) -> str:
    """The records of CAPTURE_PVS."""
    out = []
    for name, rtype, egu, prec, desc in CAPTURE_PVS:
        fields = [f'    field(DESC, "{desc[:40]}")', f'    field(EGU, "{egu}")', f'    field(PREC, "{prec}")']
        if rtype == "waveform":
            fields += ['    field(FTVL, "CHAR")', f'    field(NELM, "{CAUSE_CHARS + 1}")']
        out.append(f'record({rtype}, "{prefix}:{name}") {{\n' + "\n".join(fields) + "\n}\n")
    return "".join(out)


def cause_text(words: str) -> str:
    """A cause as SPIKE_CAUSE holds it: printable ASCII (anything else as '?'), at most CAUSE_CHARS characters."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in words)[:CAUSE_CHARS]


def database(prefix: str, cpus: Sequence[int | str], limits_ns: dict[str, float], start_unix_s: float) -> str:
    """The records of PVS (per CPU for each of `cpus`), with alarm fields where `limits_ns` ({STAT: ns},
    rtqual.answers.requirements.upper_limits_ns) has their statistic, and UPTIME counting from start_unix_s."""
    text = []
    for pv in PVS:
        for cpu in cpus if pv.per_cpu else [None]:
            name = f"CPU{cpu}:{pv.name}" if pv.per_cpu else pv.name
            limit_ns = limits_ns.get(pv.stat or "")
            text.append(
                f'record(ai, "{prefix}:{name}") {{\n    field(DESC, "{pv.desc.replace("<n>", str(cpu))[:40]}")\n'
                f'    field(EGU, "{pv.egu}")\n    field(PREC, "{pv.prec}")\n'
                f"{alarm_fields(None if limit_ns is None else limit_ns / 1000)}}}\n"
            )
    return "".join(text) + capture_db(prefix) + uptime_db(f"{prefix}:", "the monitor", start_unix_s)


def values(prefix: str, all_cpus: dict, per_cpu: list[dict], heartbeat: int) -> dict[str, float]:
    """{PV: value} of one window (latencies in µs; an empty window leaves its latency PVs unchanged)."""
    out: dict[str, float] = {}
    for pv in PVS:
        for w in per_cpu if pv.per_cpu else [{**all_cpus, "heartbeat": heartbeat}]:
            name = f"{prefix}:CPU{w['cpu']}:{pv.name}" if pv.per_cpu else f"{prefix}:{pv.name}"
            if pv.egu == "us":
                if w.get(pv.key) is not None:
                    out[name] = w[pv.key] / 1000
            else:
                out[name] = float(w.get(pv.key) or 0)
    return out


_RECORD = re.compile(r'record\((\w+), "([^"]+)"\) \{(.*?)\n\}', re.S)
_FIELD = re.compile(r'field\((\w+), "([^"]*)"\)')
ALARM_RULE = "`{}` requirement"


def pv_table() -> str:
    """docs/monitoring.md's tables of the monitor's PVs and the IOC's operator PVs, read from the databases
    themselves (so they cannot drift): name, record type, EGU, PREC, DESC and where the alarm limits come from."""

    def rows(db: str, names: list[str], alarm: dict[str, str]) -> list[str]:
        records = {name: (rtype, dict(_FIELD.findall(body))) for rtype, name, body in _RECORD.findall(db)}
        out = ["| PV | record | EGU | PREC | DESC | alarm limits from |", "|---|---|---|---|---|---|"]
        for name in names:
            rtype, f = records[name]
            source = ALARM_RULE.format(alarm[name]) if name in alarm else "none"
            out.append(
                f"| `{name}` | {rtype} | {f.get('EGU', '')} | {f.get('PREC', '')} | {f.get('DESC', '')} | {source} |"
            )
        return out

    mon = [f"PREFIX:{f'CPU<n>:{pv.name}' if pv.per_cpu else pv.name}" for pv in PVS]
    mon += [f"PREFIX:{c[0]}" for c in CAPTURE_PVS] + ["PREFIX:UPTIME"]
    mon_alarm = {n: pv.stat for n, pv in zip(mon, PVS) if pv.stat}
    ioc = [f"$(P){n}" for n in OPERATOR_PVS]
    return "\n".join(
        [
            "The monitor's PVs (`rtqual monitor --pvs PREFIX`):",
            "",
            *rows(database("PREFIX", ["<n>"], {}, 0.0), mon, mon_alarm),
            "",
            "The IOC's operator PVs (macro `P`, the IOC's prefix: `rtqual run ioc`, `rtqual monitor --probe ioc`):",
            "",
            *rows(operator_db(), ioc, {f"$(P){k}": v for k, v in ALARM_STATS.items()}),
        ]
    )


class PvServer:
    """The PV server process (python -m rtqual.monitor.pvserver): start() waits for its ready line,
    publish() sends a window, stop() ends it."""

    def __init__(self, prefix: str, cpus: list[int], require: list[Requirement], folder: Path, start_unix_s: float):
        """require: the monitor's requirements (parsed) (--require, --profile), the latency PVs' alarm limits;
        start_unix_s: when the monitor started (UPTIME)."""
        if not prefix or any(c.isspace() or c in "\"'$(){}," for c in prefix):
            raise RtqError(f"--pvs {prefix!r}: a PV prefix without spaces, quotes, commas or macros")
        self.prefix, self.cpus, self.heartbeat = prefix, cpus, 0
        self.db = folder / "monitor-pvs.db"
        self.db.write_text(database(prefix, cpus, upper_limits_ns(require), start_unix_s))
        self.log = folder / "pvserver.stderr"
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}

    def start(self) -> None:
        """Start the IOC and wait for it to serve (one-line RtqError if it does not)."""
        from rtqual.measure.epics import env as epics_env
        from rtqual.procs import die_with_parent

        env = epics_env.epics_env(ports=False)  # loopback; the user's EPICS_* kept, CA port 5064 by default
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rtqual.monitor.pvserver", "--db", str(self.db)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                start_new_session=True,
                preexec_fn=lambda: die_with_parent(15),
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        try:
            self.ready = json.loads(line)
        except ValueError:
            self.stop()
            tail = self.log.read_text(errors="replace").strip().splitlines()[-1:]
            raise RtqError(f"--pvs: the PV server did not start: {tail[0] if tail else 'no output'}") from None
        print(
            f"rtqual: PVs {self.prefix}:LAT_MAX, ... on CA {env.get('EPICS_CAS_INTF_ADDR_LIST')}:"
            f"{self.ready.get('ca_server_port') or 5064}",
            file=sys.stderr,
            flush=True,
        )

    def publish(self, all_cpus: dict, per_cpu: list[dict]) -> None:
        """One window's values to the server (a dead server is said once by stop's exit code, never raised)."""
        self.heartbeat += 1
        self._send(values(self.prefix, all_cpus, per_cpu, self.heartbeat))

    def publish_capture(self, spike: dict | None, count: int, words: str) -> None:
        """The capture PVs: the count, the last captured spike's latency (when given) and its cause in words."""
        update: dict[str, float | str] = {
            f"{self.prefix}:SPIKES": float(count),
            f"{self.prefix}:SPIKE_CAUSE": cause_text(words),
        }
        if spike is not None:
            update[f"{self.prefix}:SPIKE_LAT"] = spike["latency_ns"] / 1000
        self._send(update)

    def _send(self, update: dict) -> None:
        """One line of {PV: value} to the server (a dead server is said once by stop's exit code, never raised)."""
        if self.proc is None or self.proc.poll() is not None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(json.dumps(update) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stop(self) -> int | None:
        """Close its stdin (it exits through epicsExit) and wait; kill it if it does not go."""
        if self.proc is None:
            return None
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            return self.proc.wait()


if __name__ == "__main__":
    print(pv_table())

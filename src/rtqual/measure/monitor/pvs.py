"""`rtqual monitor --pvs PREFIX`: the windows as EPICS PVs, named as devIocStats names its own
(PREFIX:LAT_MAX, PREFIX:SAMPLES, PREFIX:CPU0:LAT_MAX, ...), served over Channel Access by a real
EPICS 7 IOC from the epicscorelibs wheel (rtqual.measure.epics.iocmain's loader, base records only) in its
own process: an IOC cannot live in the monitor's process beside prometheus-client's threads and
must not stall it, and iocInit runs once per process. The monitor sends each window's values as one
JSON line on the server's stdin; the server writes them with dbpf (records process, alarms and
monitors follow). Loopback by default (rtqual.measure.epics.env, never overriding the user's EPICS_*).

Latencies are in µs (EGU us). HIGH/HIHI of every latency PV start at the probe's threshold and ten
times it (MINOR, MAJOR) and can be changed at run time: caput PREFIX:LAT_MAX.HIHI 500.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rtqual.errors import RtqError

LATENCY_PVS = {  # PV suffix -> window key (ns); µs on the wire
    "LAT_MIN": "min_ns",
    "LAT_MEAN": "mean_ns",
    "LAT_P50": "p50_ns",
    "LAT_P99": "p99_ns",
    "LAT_P9999": "p9999_ns",
    "LAT_MAX": "max_ns",
}
PER_CPU_PVS = ("LAT_MAX", "LAT_P99")
COUNT_PVS = {"SAMPLES": "samples", "OVERRUNS": "overruns", "OVER_THRESH": "over_threshold"}
READY_TIMEOUT_S = 30.0


def database(prefix: str, cpus: list[int], threshold_us: float) -> str:
    """The records: ai latencies (all CPUs and per CPU) with alarm limits, counters of the last window,
    the window length and a heartbeat (windows published)."""

    def ai(name: str, desc: str, egu: str, alarms: bool) -> str:
        limits = (
            f'  field(HIGH, "{threshold_us:g}")\n  field(HSV, "MINOR")\n'
            f'  field(HIHI, "{10 * threshold_us:g}")\n  field(HHSV, "MAJOR")\n'
            if alarms
            else ""
        )
        return (
            f'record(ai, "{prefix}:{name}") {{\n  field(DESC, "{desc[:40]}")\n  field(EGU, "{egu}")\n'
            f'  field(PREC, "1")\n{limits}}}\n'
        )

    text = [ai(n, f"window {k.removesuffix('_ns')} latency", "us", True) for n, k in LATENCY_PVS.items()]
    for cpu in cpus:
        text += [ai(f"CPU{cpu}:{n}", f"CPU {cpu} window {n.lower()}", "us", True) for n in PER_CPU_PVS]
    text += [ai(n, f"window {k.replace('_', ' ')}", "", False) for n, k in COUNT_PVS.items()]
    text += [ai("WINDOW_S", "window length", "s", False), ai("HEARTBEAT", "windows published", "", False)]
    return "".join(text)


def values(prefix: str, all_cpus: dict, per_cpu: list[dict], heartbeat: int) -> dict[str, float]:
    """{PV: value} of one window (latencies in µs; an empty window leaves its latency PVs unchanged)."""
    out: dict[str, float] = {}
    for name, key in LATENCY_PVS.items():
        if all_cpus.get(key) is not None:
            out[f"{prefix}:{name}"] = all_cpus[key] / 1000
    for w in per_cpu:
        for name in PER_CPU_PVS:
            if w.get(LATENCY_PVS[name]) is not None:
                out[f"{prefix}:CPU{w['cpu']}:{name}"] = w[LATENCY_PVS[name]] / 1000
    out.update({f"{prefix}:{name}": float(all_cpus.get(key) or 0) for name, key in COUNT_PVS.items()})
    out[f"{prefix}:WINDOW_S"] = float(all_cpus.get("duration_s") or 0)
    out[f"{prefix}:HEARTBEAT"] = float(heartbeat)
    return out


class PvServer:
    """The PV server process (python -m rtqual.measure.monitor.pvserver): start() waits for its ready line,
    publish() sends a window, stop() ends it."""

    def __init__(self, prefix: str, cpus: list[int], threshold_ns: int, folder: Path):
        if not prefix or any(c.isspace() or c in "\"'$(){}," for c in prefix):
            raise RtqError(f"--pvs {prefix!r}: a PV prefix without spaces, quotes, commas or macros")
        self.prefix, self.cpus, self.heartbeat = prefix, cpus, 0
        self.db = folder / "monitor-pvs.db"
        self.db.write_text(database(prefix, cpus, threshold_ns / 1000))
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
                [sys.executable, "-m", "rtqual.measure.monitor.pvserver", "--db", str(self.db)],
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
        if self.proc is None or self.proc.poll() is not None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(json.dumps(values(self.prefix, all_cpus, per_cpu, self.heartbeat)) + "\n")
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

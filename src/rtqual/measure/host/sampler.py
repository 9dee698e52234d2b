"""What the host does while a case runs: temperatures, CPU frequencies, load, runnable tasks and
firmware throttling (about 1 Hz), the CPU time counters of /proc/stat at the case's start and end, and
the other real-time tasks at case start.

Sampler appends one JSON line per sample to a file in the case directory, line-buffered so a
killed run keeps every sample written:

    {"t_ns": 123, "real_ns": 1700000000000000000, "temps_c": {"cpu_thermal": 48.3},
     "freq_khz": {"0": 1500000, "1": 600000}, "loadavg": [0.12, 0.2, 0.16],
     "procs_running": 3, "own_running": 1, "throttled": 0}

procs_running is /proc/stat's count of runnable tasks, own_running how many of them are rtqual's own
(this process and its children: the probe, the loads, the sampler itself); throttled is a Raspberry
Pi firmware's flag word where the board has one. With a record path, the sampler also keeps the
case's environment record (environment.json, rewritten after every sample so a killed run keeps the
latest): the measured CPUs, their SMT siblings, thermal trip points, and two snapshots ("start",
"end") of the /proc/stat CPU counters of the measured CPUs, their siblings and all CPUs, the x86
thermal throttle counters, the firmware's throttled flags and the temperatures (a Raspberry Pi's SoC
temperature before and after the case, as seed 000 records it); rtqual.answers.environment turns it
into steal and busy percentages.

t_ns is CLOCK_MONOTONIC (the probes' clock), real_ns wall time. A value that cannot be
read is left out; when nothing is readable the dict is empty. summarize() is pure.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from rtqual.results.facts import parse_throttled
from rtqual.units import SCHED_POLICY_NAMES, format_cpulist, parse_kernel_cpulist
from rtqual.util import read_text, write_text_atomic

RT_POLICIES = (1, 2, 6)
"""The real-time scheduling policies by number (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE): other policies are not
reported."""
_PF_KTHREAD = 0x00200000


def _read(path: Path) -> str | None:
    """Stripped text of a small kernel file, or None (rtqual.util.read_text without the reason)."""
    return read_text(path)[0]


# ---------------------------------------------------------------- sources, found once


def temp_sources(root: Path) -> dict[str, Path]:
    """Temperature name -> file in milli-degC: thermal zones (named by type) and hwmon temp*_input
    (named 'chip/label'). Duplicate names get the zone directory appended."""
    sources: dict[str, Path] = {}

    def add(name: str, path: Path, tag: str) -> None:
        sources[name if name not in sources else f"{name}.{tag}"] = path

    for name, zone in thermal_zones(root).items():
        sources[name] = zone / "temp"
    for hw in sorted((root / "sys/class/hwmon").glob("hwmon*"), key=_index):
        chip = _read(hw / "name") or hw.name
        for temp in sorted(hw.glob("temp*_input"), key=_index):
            label = _read(temp.with_name(temp.name.replace("_input", "_label"))) or temp.name[:-6]
            add(f"{chip}/{label}", temp, hw.name)
    return sources


def thermal_zones(root: Path) -> dict[str, Path]:
    """Thermal zone name (its type; a duplicate gets the zone directory appended) -> zone directory,
    for the zones with a temperature."""
    zones: dict[str, Path] = {}
    for zone in sorted((root / "sys/class/thermal").glob("thermal_zone*"), key=_index):
        if (zone / "temp").exists():
            name = _read(zone / "type") or zone.name
            zones[name if name not in zones else f"{name}.{zone.name}"] = zone
    return zones


THROTTLING_TRIPS = ("passive", "hot", "critical")
"""Trip point types at which the kernel slows or stops the CPU (an 'active' trip only starts a fan)."""


def trip_points_c(root: Path) -> dict[str, float]:
    """Thermal zone name -> its lowest throttling trip point (passive, hot or critical) in degC, for
    the zones that have one: where a temperature starts to cost speed."""
    out = {}
    for name, zone in thermal_zones(root).items():
        trips = []
        for kind_file in zone.glob("trip_point_*_type"):
            temp = _read(kind_file.with_name(kind_file.name.replace("_type", "_temp")))
            if _read(kind_file) in THROTTLING_TRIPS and temp and temp.lstrip("-").isdigit():
                trips.append(int(temp) / 1000)
        if trips:
            out[name] = min(trips)
    return out


FIRMWARE_THROTTLED = "sys/devices/platform/soc/soc:firmware/get_throttled"
"""A Raspberry Pi's firmware throttled flags (hex, as `vcgencmd get_throttled` prints them)."""


def read_throttled(root: Path, program: bool = False) -> int | None:
    """The firmware's throttled flags: the sysfs file where present, else (program=True, the live root
    only) `vcgencmd get_throttled`; None on a board without them."""
    text = _read(root / FIRMWARE_THROTTLED)
    if text is None and program and root.resolve() == Path("/") and shutil.which("vcgencmd"):
        try:
            done = subprocess.run(
                ["vcgencmd", "get_throttled"], capture_output=True, text=True, timeout=2, stdin=subprocess.DEVNULL
            )
            text = done.stdout if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            text = None
    return parse_throttled(text)


STAT_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The /proc/stat cpu columns kept (guest time is already counted in user and nice)."""


def parse_proc_stat(text: str) -> dict:
    """/proc/stat: {"cpu": {"all": [ticks per STAT_COLUMNS], "0": [...], ...}, "procs_running": n}; a
    column an old kernel lacks is 0, a malformed line is skipped."""
    cpus: dict[str, list[int]] = {}
    out: dict = {"cpu": cpus}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu"):
            try:
                ticks = [int(x) for x in rest.split()[: len(STAT_COLUMNS)]]
            except ValueError:
                continue
            cpus[name[3:] or "all"] = ticks + [0] * (len(STAT_COLUMNS) - len(ticks))
        elif name == "procs_running" and rest.strip().isdigit():
            out["procs_running"] = int(rest)
    return out


def thread_siblings(root: Path, cpus: Iterable[int]) -> dict[str, list[int]]:
    """CPU (as text) -> its SMT siblings (the other hardware threads of its core), from sysfs topology;
    a CPU without topology is left out, one without siblings maps to []."""
    out = {}
    for cpu in cpus:
        text = _read(root / f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        siblings = parse_kernel_cpulist(text) if text else None
        if siblings is not None:
            out[str(cpu)] = [c for c in siblings if c != cpu]
    return out


def thermal_throttle_counts(root: Path, cpus: Iterable[int]) -> dict[str, int]:
    """CPU (as text) -> its x86 thermal throttle events so far (core + package counters), for the CPUs
    that have them."""
    out = {}
    for cpu in cpus:
        base = root / f"sys/devices/system/cpu/cpu{cpu}/thermal_throttle"
        counts = [_read(base / f"{kind}_throttle_count") for kind in ("core", "package")]
        if any(c and c.isdigit() for c in counts):
            out[str(cpu)] = sum(int(c) for c in counts if c and c.isdigit())
    return out


def running_threads(root: Path, pid: int) -> int:
    """Threads in state R (running or runnable) of process pid and all its descendants (through
    /proc/PID/task/TID/children): rtqual's own share of /proc/stat's procs_running."""
    count, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            tids = os.listdir(root / f"proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            text = _read(root / f"proc/{p}/task/{tid}/stat")
            if text and text.rpartition(")")[2].split()[:1] == ["R"]:
                count += 1
            children = _read(root / f"proc/{p}/task/{tid}/children")
            todo.extend(int(c) for c in (children or "").split() if c.isdigit())
    return count


def freq_sources(root: Path) -> dict[str, Path]:
    """CPU number (as text) -> its scaling_cur_freq, for the online CPUs that have one."""
    out = {}
    for cpu_dir in sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*"), key=_index):
        cur = cpu_dir / "cpufreq/scaling_cur_freq"
        if cur.exists():
            out[cpu_dir.name[3:]] = cur
    return out


def _index(path: Path) -> int:
    """Trailing number of a name, for natural order (cpu2 before cpu10)."""
    m = re.search(r"(\d+)(?:_input)?$", path.name)
    return int(m.group(1)) if m else 0


def cpuinfo_mhz(text: str) -> dict[str, int]:
    """/proc/cpuinfo 'cpu MHz' per processor, in kHz: {'0': 2596122}."""
    out, cpu = {}, None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            cpu = value.strip()
        elif key == "cpu MHz" and cpu is not None:
            try:
                out[cpu] = round(float(value) * 1000)
            except ValueError:
                pass
    return out


def parse_loadavg(text: str | None) -> list[float] | None:
    """The three load averages of /proc/loadavg."""
    try:
        return [float(x) for x in (text or "").split()[:3]] or None
    except ValueError:
        return None


# ---------------------------------------------------------------- the sampling thread


class Sampler(threading.Thread):
    """Samples temperatures, frequencies and load every period_s into a JSON Lines file.

    start() / stop(); a read or write error is counted in `errors`, never ends the thread.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        period_s: float = 1.0,
        root: str | os.PathLike = "/",
        record: str | os.PathLike | None = None,
        cpus: Iterable[int] = (),
        own_pid: int | None = None,
    ):
        """path: the samples file; record: the case's environment record (None: none kept); cpus: the
        measured CPUs; own_pid: the process whose tree is rtqual's own (default this one)."""
        super().__init__(name="rtqual-sampler", daemon=True)
        self.path = Path(path)
        self.period_s = period_s
        self.root = Path(root)
        self.record_path = Path(record) if record is not None else None
        self.own_pid = own_pid if own_pid is not None else os.getpid()
        self.samples = 0
        self.errors = 0
        self.last_error: str | None = None
        self._stop_event = threading.Event()
        self._temps = temp_sources(self.root)
        self._freqs = freq_sources(self.root)
        self._throttled = (self.root / FIRMWARE_THROTTLED).exists()
        self.record: dict | None = None
        if self.record_path is not None:
            measured = sorted(set(cpus))
            siblings = thread_siblings(self.root, measured)
            self._stat_cpus = {"all", *map(str, measured), *(str(c) for s in siblings.values() for c in s)}
            self.record = {
                "cpus": measured,
                "siblings": siblings,
                "trip_points_c": trip_points_c(self.root),
                "start": None,
                "end": None,
            }

    def _temps_now(self) -> dict[str, float]:
        """Each temperature sensor now, in degC (a sensor that cannot be read is left out)."""
        temps = {}
        for name, path in self._temps.items():
            text = _read(path)
            if text and text.lstrip("-").isdigit():
                temps[name] = int(text) / 1000
        return temps

    def sample(self) -> dict:
        """One sample now."""
        temps = self._temps_now()
        freqs = {}
        for cpu, path in self._freqs.items():
            text = _read(path)
            if text and text.isdigit():
                freqs[cpu] = int(text)
        if not self._freqs:
            freqs = cpuinfo_mhz(_read(self.root / "proc/cpuinfo") or "")
        stat = parse_proc_stat(_read(self.root / "proc/stat") or "")
        t_ns = time.monotonic_ns()
        out: dict = {
            "t_ns": t_ns,
            "real_ns": time.time_ns(),
            "temps_c": temps,
            "freq_khz": freqs,
            "loadavg": parse_loadavg(_read(self.root / "proc/loadavg")),
        }
        if "procs_running" in stat:
            out["procs_running"] = stat["procs_running"]
            out["own_running"] = running_threads(self.root, self.own_pid)
        if self._throttled:
            out["throttled"] = read_throttled(self.root)
        if self.record is not None:
            self._snapshot("end", stat, t_ns, temps=temps)
        return out

    def _snapshot(
        self, key: str, stat: dict, t_ns: int, program: bool = False, temps: dict[str, float] | None = None
    ) -> None:
        """Keep the CPU counters, throttle counters, throttled flags and temperatures (temps: as just read)
        now as the record's start or end."""
        assert self.record is not None
        cpus = sorted(int(c) for c in self._stat_cpus if c != "all")
        self.record[key] = {
            "t_ns": t_ns,
            "cpu_ticks": {c: v for c, v in stat.get("cpu", {}).items() if c in self._stat_cpus},
            "thermal_throttle": thermal_throttle_counts(self.root, cpus),
            "throttled": read_throttled(self.root, program),
            "temps_c": self._temps_now() if temps is None else temps,
        }

    def _write_record(self) -> None:
        """Rewrite the environment record (a new file renamed over the old: a kill leaves the last whole one)."""
        if self.record is None or self.record_path is None:
            return
        text = json.dumps({"stat_columns": list(STAT_COLUMNS), **self.record}, separators=(",", ":"))
        write_text_atomic(self.record_path, text, sync=False)

    def begin(self) -> None:
        """The record's start snapshot (the firmware asked with vcgencmd where it has no sysfs file)."""
        if self.record is not None:
            try:
                self._snapshot(
                    "start", parse_proc_stat(_read(self.root / "proc/stat") or ""), time.monotonic_ns(), True
                )
                self._write_record()
            except Exception as e:  # noqa: BLE001 - the case runs without its record rather than not at all
                self._error(f"{type(e).__name__}: {e}")

    def start(self) -> None:
        """Take the record's start snapshot, then sample in the thread."""
        self.begin()
        super().start()

    def run(self) -> None:
        """Sample on a fixed grid (no drift) until stop(), then the record's end snapshot."""
        try:
            out = open(self.path, "a", buffering=1)
        except OSError as e:
            self._error(f"{self.path}: {e.strerror or e}")
            return
        with out:
            start = time.monotonic()
            n = 0
            while not self._stop_event.is_set():
                try:
                    out.write(json.dumps(self.sample(), separators=(",", ":")) + "\n")
                    self.samples += 1
                    self._write_record()
                except Exception as e:  # noqa: BLE001 - a sampler must outlive any odd file
                    self._error(f"{type(e).__name__}: {e}")
                n += 1
                self._stop_event.wait(max(0.0, start + n * self.period_s - time.monotonic()))
        self.finish()

    def finish(self) -> None:
        """The record's end snapshot at the case's end (no sample line: the samples stay on their grid)."""
        if self.record is not None:
            try:
                stat = parse_proc_stat(_read(self.root / "proc/stat") or "")
                self._snapshot("end", stat, time.monotonic_ns(), program=True)
                self._write_record()
            except Exception as e:  # noqa: BLE001 - a sampler must outlive any odd file
                self._error(f"{type(e).__name__}: {e}")

    def _error(self, text: str) -> None:
        self.errors += 1
        self.last_error = text

    def stop(self, timeout_s: float = 2.0) -> None:
        """Ask the thread to end and wait for it (returns at once when it was never started)."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout_s)


def read_samples(path: str | os.PathLike) -> list[dict]:
    """Samples of a sampler file; a truncated or corrupt line (a killed run) is skipped."""
    return list(iter_samples(path))


def iter_samples(path: str | os.PathLike) -> Iterator[dict]:
    """read_samples one at a time: a day of samples (86 400) is summarized without holding them."""
    try:
        with open(path, errors="replace") as f:
            yield from _parse_lines(f)
    except OSError:
        return


def _parse_lines(lines: Iterable[str | dict]) -> Iterator[dict]:
    for line in lines:
        if isinstance(line, dict):
            yield line
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


class _Range:
    """Running min, max and mean of numbers (the same floats as over a list, in the same order)."""

    def __init__(self) -> None:
        self.lo, self.hi = math.inf, -math.inf  # the first value replaces both (ints stay ints)
        self.total, self.n = 0.0, 0

    def add(self, value: float) -> None:
        self.lo, self.hi = min(self.lo, value), max(self.hi, value)
        self.total, self.n = self.total + value, self.n + 1

    def as_dict(self) -> dict:
        return {"min": self.lo, "max": self.hi, "mean": round(self.total / self.n, 3)}


def summarize(lines: Iterable[str | dict]) -> dict:
    """Summary of samples (JSON lines or dicts): count, time span, min/max/mean temperature per
    sensor, frequency range per CPU and overall, highest 1-minute load; where the samples hold them,
    the other runnable tasks (procs_running less rtqual's own: min/max/mean) and the firmware's
    throttled flags seen (OR of every sample). Pure; reads the samples once, one at a time (memory
    does not grow with the run's length)."""
    temps: dict[str, _Range] = {}
    freqs: dict[str, _Range] = {}
    load1, times, others, n = _Range(), _Range(), _Range(), 0
    throttled: int | None = None
    for s in _parse_lines(lines):
        if isinstance(s.get("procs_running"), int) and isinstance(s.get("own_running"), int):
            others.add(max(0, s["procs_running"] - s["own_running"]))
        if isinstance(s.get("throttled"), int):
            throttled = (throttled or 0) | s["throttled"]
        n += 1
        for name, value in (s.get("temps_c") or {}).items():
            temps.setdefault(name, _Range()).add(value)
        for cpu, value in (s.get("freq_khz") or {}).items():
            freqs.setdefault(cpu, _Range()).add(value)
        if s.get("loadavg"):
            load1.add(s["loadavg"][0])
        if isinstance(s.get("t_ns"), int):
            times.add(s["t_ns"])
    return {
        "samples": n,
        "span_ns": times.hi - times.lo if times.n else 0,
        "temps_c": {name: r.as_dict() for name, r in temps.items()},
        "temp_max_c": max((r.hi for r in temps.values()), default=None),
        "freq_khz": {cpu: {"min": r.lo, "max": r.hi} for cpu, r in freqs.items()},
        "freq_khz_range": [min(r.lo for r in freqs.values()), max(r.hi for r in freqs.values())] if freqs else None,
        "loadavg1_max": load1.hi if load1.n else None,
        **({"others_running": others.as_dict()} if others.n else {}),
        **({"throttled_flags": throttled} if throttled is not None else {}),
    }


# ---------------------------------------------------------------- other real-time tasks


def parse_stat(text: str) -> dict | None:
    """comm, flags, rt_priority and policy of a /proc/<pid>/task/<tid>/stat line (the comm may
    hold spaces and parentheses: the fields follow the last ')'), or None when malformed."""
    head, sep, rest = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    fields = rest.split()
    try:  # field numbers of proc(5): flags 9, rt_priority 40, policy 41; fields[0] is field 3
        return {
            "comm": head.partition("(")[2],
            "flags": int(fields[6]),
            "rt_priority": int(fields[37]),
            "policy": int(fields[38]),
        }
    except (IndexError, ValueError):
        return None


def rt_tasks(exclude: Iterable[int] = ()) -> list[dict]:
    """Real-time threads (FIFO, RR, deadline) now on this machine, one dict per thread:
    name, pid, tid, policy, priority, affinity (cpulist), kernel (a kernel thread).
    exclude: pids whose threads are left out (ours, the probe's). Vanished tasks are skipped."""
    skip = {int(p) for p in exclude}
    out = []
    for pid_name in os.listdir("/proc"):
        if not pid_name.isdigit() or int(pid_name) in skip:
            continue
        try:
            tids = os.listdir(f"/proc/{pid_name}/task")
        except OSError:
            continue
        for tid_name in tids:
            text = _read(Path(f"/proc/{pid_name}/task/{tid_name}/stat"))
            stat = parse_stat(text) if text else None
            if stat is None or stat["policy"] not in RT_POLICIES:
                continue
            try:
                affinity = format_cpulist(sorted(os.sched_getaffinity(int(tid_name))))
            except OSError:
                continue
            out.append(
                {
                    "name": stat["comm"],
                    "pid": int(pid_name),
                    "tid": int(tid_name),
                    "policy": SCHED_POLICY_NAMES[stat["policy"]],
                    "priority": stat["rt_priority"],
                    "affinity": affinity,
                    "kernel": bool(stat["flags"] & _PF_KTHREAD),
                }
            )
    return sorted(out, key=lambda t: (-t["priority"], t["pid"], t["tid"]))

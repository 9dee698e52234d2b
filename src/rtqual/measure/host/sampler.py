"""What the host does while a case runs: temperatures, CPU frequencies, load (about 1 Hz), and
the other real-time tasks at case start.

Sampler appends one JSON line per sample to a file in the case directory, line-buffered so a
killed run keeps every sample written:

    {"t_ns": 123, "real_ns": 1700000000000000000, "temps_c": {"cpu_thermal": 48.3},
     "freq_khz": {"0": 1500000, "1": 600000}, "loadavg": [0.12, 0.2, 0.16]}

t_ns is CLOCK_MONOTONIC (the probes' clock), real_ns wall time. A value that cannot be
read is left out; when nothing is readable the dict is empty. summarize() is pure.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from rtqual.units import format_cpulist
from rtqual.util import read_text

POLICY_NAMES = {1: "fifo", 2: "rr", 6: "deadline"}
"""RT scheduling policies by number (linux/sched.h); other policies are not reported."""
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

    for zone in sorted((root / "sys/class/thermal").glob("thermal_zone*"), key=_index):
        if (zone / "temp").exists():
            add(_read(zone / "type") or zone.name, zone / "temp", zone.name)
    for hw in sorted((root / "sys/class/hwmon").glob("hwmon*"), key=_index):
        chip = _read(hw / "name") or hw.name
        for temp in sorted(hw.glob("temp*_input"), key=_index):
            label = _read(temp.with_name(temp.name.replace("_input", "_label"))) or temp.name[:-6]
            add(f"{chip}/{label}", temp, hw.name)
    return sources


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

    def __init__(self, path: str | os.PathLike, period_s: float = 1.0, root: str | os.PathLike = "/"):
        super().__init__(name="rtqual-sampler", daemon=True)
        self.path = Path(path)
        self.period_s = period_s
        self.root = Path(root)
        self.samples = 0
        self.errors = 0
        self.last_error: str | None = None
        self._stop_event = threading.Event()
        self._temps = temp_sources(self.root)
        self._freqs = freq_sources(self.root)

    def sample(self) -> dict:
        """One sample now."""
        temps = {}
        for name, path in self._temps.items():
            text = _read(path)
            if text and text.lstrip("-").isdigit():
                temps[name] = int(text) / 1000
        freqs = {}
        for cpu, path in self._freqs.items():
            text = _read(path)
            if text and text.isdigit():
                freqs[cpu] = int(text)
        if not self._freqs:
            freqs = cpuinfo_mhz(_read(self.root / "proc/cpuinfo") or "")
        return {
            "t_ns": time.monotonic_ns(),
            "real_ns": time.time_ns(),
            "temps_c": temps,
            "freq_khz": freqs,
            "loadavg": parse_loadavg(_read(self.root / "proc/loadavg")),
        }

    def run(self) -> None:
        """Sample on a fixed grid (no drift) until stop()."""
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
                except Exception as e:  # noqa: BLE001 - a sampler must outlive any odd file
                    self._error(f"{type(e).__name__}: {e}")
                n += 1
                self._stop_event.wait(max(0.0, start + n * self.period_s - time.monotonic()))

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
    sensor, frequency range per CPU and overall, highest 1-minute load. Pure; reads the samples
    once, one at a time (memory does not grow with the run's length)."""
    temps: dict[str, _Range] = {}
    freqs: dict[str, _Range] = {}
    load1, times, n = _Range(), _Range(), 0
    for s in _parse_lines(lines):
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
            if stat is None or stat["policy"] not in POLICY_NAMES:
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
                    "policy": POLICY_NAMES[stat["policy"]],
                    "priority": stat["rt_priority"],
                    "affinity": affinity,
                    "kernel": bool(stat["flags"] & _PF_KTHREAD),
                }
            )
    return sorted(out, key=lambda t: (-t["priority"], t["pid"], t["tid"]))

"""Durations with units and CPU lists: the same grammar as the native probes (docs/protocol.md); the kernel's
scheduling policies by name."""

import os
import re

from rtqual.errors import RtqError
from rtqual.util import read_text

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}
SCHED_POLICY_NAMES = {0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle", 6: "deadline"}
"""The kernel's policy numbers (sched_getscheduler, /proc/PID/stat field 41) by the names rtqual records."""
MAX_CPUS = 8192
"""The most CPUs a Linux kernel supports (NR_CPUS at most 8192): no CPU number is this or larger."""
MAX_CPULIST_CHARS = 8 * MAX_CPUS
"""The longest CPU list text read ('0,1,2,...,8191' is under 40,000 characters)."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|ms|s|m|h|d)\s*$", re.ASCII)  # ASCII digits only


def parse_duration_ns(text: str, what: str = "duration") -> int:
    """'1.5ms' -> 1500000. A bare number is rejected: the unit must be said."""
    m = _DURATION.match(str(text).replace("\u00b5", "u").replace("\u03bc", "u"))  # 200µs, 200μs: micro signs
    if not m:
        raise RtqError(f"{what}: {str(text)!r} is not a duration (use a unit: 500us, 1ms, 10s, 5m, 24h)")
    number, unit = m.groups()
    whole, _, frac = number.partition(".")
    scale = _UNIT_NS[unit]
    ns = int(whole or 0) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    return ns


def format_ns(ns: int | float | None) -> str:
    """Human form of a duration in ns with 3-4 significant digits: 812ns, 45.2us, 6.01ms, 1.20s."""
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            v = ns / scale
            return f"{v:.3g}{unit}" if v < 100 else f"{v:.0f}{unit}"
    return f"{ns:.0f}ns"


def format_duration(ns: int) -> str:
    """Compact duration for labels and plans: 10s, 1ms, 5m, 250us."""
    for unit in ("h", "m", "s", "ms", "us"):
        if ns % _UNIT_NS[unit] == 0 and ns >= _UNIT_NS[unit]:
            return f"{ns // _UNIT_NS[unit]}{unit}"
    return f"{ns}ns"


def format_hms(ns: int | float) -> str:
    """Rounded to seconds, for estimates and time left: '45s', '2m30s', '1h05m', '1h05m05s', '2d03h'."""
    s = round(ns / _UNIT_NS["s"])
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m" + (f"{s:02d}s" if s else "")
    return f"{m}m{s:02d}s" if m else f"{s}s"


def online_cpus() -> list[int]:
    """CPUs the kernel has online (falls back to our affinity when sysfs is absent or unreadable)."""
    cpus = parse_kernel_cpulist(read_text("/sys/devices/system/cpu/online")[0])
    return cpus if cpus else sorted(os.sched_getaffinity(0))


def parse_cpulist(text: str, check_online: bool = True) -> list[int]:
    """'0-3,8' or '0-7:2' -> sorted CPU numbers; every CPU must be online when check_online. Bounded: CPU
    numbers below MAX_CPUS (the kernel's most), the text at most MAX_CPULIST_CHARS, so a list read from a
    bundle or a tree never builds more than MAX_CPUS numbers."""
    text = str(text)
    shown = text if len(text) <= 40 and text.isprintable() else repr(text[:40]) + "..."
    if len(text) > MAX_CPULIST_CHARS:
        raise RtqError(f"--cpus: '{shown}' is longer than {MAX_CPULIST_CHARS} characters: not a CPU list")
    cpus: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"([0-9]{1,20})(?:-([0-9]{1,20})(?::([0-9]{1,20}))?)?", part.strip())
        if not m:
            raise RtqError(f"--cpus: '{shown}' is not a CPU list (e.g. 0-3,8; CPUs 0..{MAX_CPUS - 1})")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1:
            raise RtqError(f"--cpus: bad range '{part.strip()}' in '{shown}'")
        if hi >= MAX_CPUS:
            raise RtqError(f"--cpus: CPU {hi} in '{shown}' is beyond the kernel's {MAX_CPUS} CPUs")
        cpus.update(range(lo, hi + 1, step))
    if check_online:
        online = set(online_cpus())
        missing = sorted(cpus - online)
        if missing:
            raise RtqError(f"--cpus: CPU {missing[0]} is not online (online: {format_cpulist(sorted(online))})")
    return sorted(cpus)


def parse_kernel_cpulist(text: str | None) -> list[int] | None:
    """A CPU list as the kernel writes it ('0-3,8', '' for none, possibly several lines) -> sorted CPUs;
    None for None, garbage or a list beyond MAX_CPUS. The tolerant reader of kernel files (and of the CPU lists
    a bundle or a recorded tree holds), on the same grammar as parse_cpulist."""
    if not isinstance(text, str):
        return None
    parts = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
    if not parts:
        return []
    try:
        return parse_cpulist(",".join(parts), check_online=False)
    except RtqError:
        return None


def format_cpulist(cpus: list[int]) -> str:
    """[0,1,2,5] -> '0-2,5'."""
    out: list[str] = []
    cpus = sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)

"""What `rtqual advise` reads of a host besides its facts (facts.collect): interrupts and their threads, the
real-time tasks, the threads of one process, limits, the Raspberry Pi firmware's state; below a `root` (default "/")
like the facts, so recorded trees read the same way."""

import os
import re

from rtqual.measure.host.facts import RPI_SOC_TEMP, _Reader, rpi_throttled
from rtqual.results.facts import UNLIMITED
from rtqual.units import SCHED_POLICY_NAMES, parse_kernel_cpulist

RPI_CONFIG_FILES = ("/boot/firmware/config.txt", "/boot/config.txt")
RPI_CONFIG_KEYS = ("arm_freq", "arm_freq_min", "force_turbo", "arm_boost", "core_freq", "temp_limit", "initial_turbo")
_LIMITS_LINES = {"rtprio": "Max realtime priority", "memlock_bytes": "Max locked memory"}


def parse_task_stat(text: str) -> dict | None:
    """comm, policy and rt priority of a /proc/PID/task/TID/stat line (comm may hold spaces and ')'), or None."""
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    fields = tail.split()  # fields[0] is field 3 (state): rt_priority is field 40, policy field 41
    try:
        return {
            "comm": head.partition("(")[2],
            "rt_priority": int(fields[37]),
            "policy": SCHED_POLICY_NAMES.get(int(fields[38]), fields[38]),
        }
    except (IndexError, ValueError):
        return None


def parse_interrupts(text: str | None) -> dict[str, dict]:
    """/proc/interrupts: IRQ number (or name, e.g. LOC) -> {"counts": per CPU, "name": the actions column}."""
    lines = (text or "").splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    out = {}
    for line in lines[1:]:
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        words = rest.split()
        counts = [int(w) for w in words[:ncpu] if w.isdigit()]
        out[key.strip()] = {"counts": counts, "name": " ".join(words[len(counts) :])}
    return out


def parse_limits(text: str | None) -> dict:
    """Soft and hard rtprio and memlock from /proc/PID/limits text ('unlimited' kept as UNLIMITED)."""
    out: dict = {}
    for key, label in _LIMITS_LINES.items():
        m = re.search(rf"^{label}\s+(\S+)\s+(\S+)", text or "", re.M)
        out[key] = {
            side: (UNLIMITED if v == "unlimited" else int(v)) if m and (v := m.group(i)) else None
            for i, side in ((1, "soft"), (2, "hard"))
        }
    return out


def _irqs(r: _Reader) -> dict:
    """Each IRQ's affinity (set and effective), name and per-CPU count; the default affinity; irqbalance."""
    names = parse_interrupts(r.text("irqs.interrupts", "/proc/interrupts", optional=True))
    irqs = []
    try:
        numbers = sorted(int(p.name) for p in r.path("/proc/irq").iterdir() if p.name.isdigit())
    except OSError as e:
        r.miss("irqs", f"/proc/irq: {e.strerror or e}")
        numbers = []
    for n in numbers:
        info = names.get(str(n), {})
        irqs.append(
            {
                "irq": n,
                "name": info.get("name"),
                "counts": info.get("counts"),
                "affinity": r.text(f"irqs[{n}].affinity", f"/proc/irq/{n}/smp_affinity_list", optional=True),
                "effective": r.text(f"irqs[{n}].effective", f"/proc/irq/{n}/effective_affinity_list", optional=True),
            }
        )
    return {
        "default_affinity": r.text("irqs.default_affinity", "/proc/irq/default_smp_affinity", optional=True),
        "irqbalance": any(t["comm"] == "irqbalance" for t in _tasks(r, rt_only=False, comm="irqbalance")),
        "irqs": irqs,
    }


def _tasks(r: _Reader, rt_only: bool = True, comm: str | None = None, pid: int | None = None) -> list[dict]:
    """Threads below /proc (of one process: pid): pid, tid, comm, policy, rt priority and allowed CPUs; only
    real-time ones by default (the allowed CPUs read only for those kept)."""
    out: list[dict] = []
    try:
        pids = [p for p in r.path("/proc").iterdir() if p.name.isdigit() and pid in (None, int(p.name))]
    except OSError:
        return out
    for pid_dir in pids:
        try:
            tids = [t for t in (pid_dir / "task").iterdir() if t.name.isdigit()]
        except OSError:
            continue
        for tid_dir in tids:
            text, _ = r.read(tid_dir / "stat")
            stat = parse_task_stat(text or "")
            if stat is None or (rt_only and stat["policy"] not in ("fifo", "rr", "deadline")):
                continue
            if comm is not None and stat["comm"] != comm:
                continue
            status, _ = r.read(tid_dir / "status")
            m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status or "", re.M)
            out.append({"pid": int(pid_dir.name), "tid": int(tid_dir.name), **stat, "cpus": m.group(1) if m else None})
    return sorted(out, key=lambda t: (-t["rt_priority"], t["tid"]))


def threads_of(pid: int, root: str | os.PathLike = "/") -> list[dict]:
    """Every thread of one process below root (an IOC's: `rtqual advise --ioc PID`), as _tasks gives them."""
    return _tasks(_Reader(root), rt_only=False, pid=pid)


def _bracketed(text: str | None) -> str | None:
    """The selected word of a sysfs choice file ('always [madvise] never' -> 'madvise'); other text as is."""
    m = re.search(r"\[([^\]]+)\]", text or "")
    return m.group(1) if m else text


def _rpi(r: _Reader) -> dict | None:
    """Raspberry Pi firmware facts (None on other boards): the throttled flags and the frequency settings."""
    model = r.text("rpi.model", "/proc/device-tree/model", optional=True) or ""
    if "raspberry pi" not in model.lower():
        return None
    throttled, source = rpi_throttled(r)
    if source == "vcgencmd get_throttled" and throttled:
        throttled = throttled.partition("=")[2]
    config_path = next((p for p in RPI_CONFIG_FILES if r.exists(p)), None)
    config: dict = {}
    for line in (r.text("rpi.config", config_path, optional=True) or "").splitlines() if config_path else []:
        key, sep, value = line.split("#")[0].strip().partition("=")
        if sep and key.strip() in RPI_CONFIG_KEYS:
            config[key.strip()] = value.strip()
    temp = r.int("rpi.temp_mc", RPI_SOC_TEMP, optional=True)
    return {
        "model": model.strip("\x00"),
        "throttled": throttled,
        "config_file": config_path,
        "config": config,
        "temp_mc": temp,
    }


def tuning(root: str | os.PathLike = "/") -> dict:
    """The facts `rtqual advise` checks beyond collect(): IRQs and irqbalance, real-time threads, watchdogs,
    memory (THP, KSM, swap), the workqueue mask, boost, PM QoS, SMT siblings, the kernel's own version and
    limits as the tree says (a recorded tree is not this kernel), Raspberry Pi firmware. Never raises."""
    r = _Reader(root)
    k, mm, cpu = "/proc/sys/kernel", "/sys/kernel/mm", "/sys/devices/system/cpu"
    online = parse_kernel_cpulist(r.text("cpu.online", f"{cpu}/online")) or []
    swaps = (r.text("memory.swaps", "/proc/swaps", optional=True) or "").splitlines()[1:]
    return {
        "kernel_version": r.text("kernel.version", f"{k}/version", optional=True),
        "kernel_release": r.text("kernel.osrelease", f"{k}/osrelease", optional=True),
        "irqs": _irqs(r),
        "rt_tasks": _tasks(r),
        "watchdog": {
            name: r.int(f"watchdog.{name}", f"{k}/{name}", optional=True)
            for name in ("watchdog", "nmi_watchdog", "soft_watchdog")
        }
        | {"cpumask": r.text("watchdog.cpumask", f"{k}/watchdog_cpumask", optional=True)},
        "memory": {
            "thp": _bracketed(r.text("memory.thp", f"{mm}/transparent_hugepage/enabled", optional=True)),
            "thp_defrag": _bracketed(r.text("memory.thp_defrag", f"{mm}/transparent_hugepage/defrag", optional=True)),
            "ksm_run": r.int("memory.ksm_run", f"{mm}/ksm/run", optional=True),
            "swaps": [line.split()[0] for line in swaps if line.split()],
            "swappiness": r.int("memory.swappiness", "/proc/sys/vm/swappiness", optional=True),
        },
        "workqueue_cpumask": r.text("workqueue.cpumask", "/sys/devices/virtual/workqueue/cpumask", optional=True),
        "boost": r.int("cpufreq.boost", f"{cpu}/cpufreq/boost", optional=True),
        "no_turbo": r.int("cpufreq.no_turbo", f"{cpu}/intel_pstate/no_turbo", optional=True),
        "per_cpu": [
            {
                "cpu": c,
                "siblings": r.text(f"cpu{c}.siblings", f"{cpu}/cpu{c}/topology/thread_siblings_list", optional=True),
                "pm_qos_resume_latency_us": r.text(
                    f"cpu{c}.pm_qos", f"{cpu}/cpu{c}/power/pm_qos_resume_latency_us", optional=True
                ),
            }
            for c in online
        ],
        "self_limits": parse_limits(r.text("limits", "/proc/self/limits", optional=True)),
        "rpi": _rpi(r),
        "unavailable": r.unavailable,
    }

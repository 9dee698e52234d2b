"""Host facts relevant to real-time latency: one JSON-serialisable snapshot per call.

Every /proc, /sys and /dev path is read below a `root` (default "/"), so tests can
point collect() at a fake tree. uname, resource limits, euid and the external
programs (systemd-detect-virt, cyclictest) come from the live process; the
programs are run only for the live root. A fact that cannot be read is None and
is listed in `unavailable` with the reason: collecting facts never raises.
"""

import datetime
import errno
import glob
import gzip
import os
import platform
import re
import resource
import shutil
import subprocess
import time
import zlib
from pathlib import Path

from rtqual.results import tree
from rtqual.results.facts import UNLIMITED, decode_throttled, get_fact, parse_throttled
from rtqual.units import format_cpulist, parse_kernel_cpulist
from rtqual.util import cap_eff_hex, read_text

PROGRAM_TIMEOUT_S = 2.0

CMDLINE_KEYS = (
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "threadirqs",
    "irqaffinity",
    "preempt",
    "idle",
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "nosmt",
    "mitigations",
)

CAP_NAMES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
)
"""Capability names by bit number (linux/capability.h)."""


_CPUFREQ_FILES = {
    "governor": "scaling_governor",
    "scaling_cur_freq_khz": "scaling_cur_freq",
    "scaling_min_freq_khz": "scaling_min_freq",
    "scaling_max_freq_khz": "scaling_max_freq",
    "cpuinfo_min_freq_khz": "cpuinfo_min_freq",
    "cpuinfo_max_freq_khz": "cpuinfo_max_freq",
    "available_governors": "scaling_available_governors",
}
_CPUFREQ_TEXT = {"governor"}
_CPUFREQ_LIST = {"available_governors"}

RPI_THROTTLED_FILES = (
    "/sys/devices/platform/soc/soc:firmware/get_throttled",
    "/sys/devices/platform/soc/soc:firmware/throttled",
)
"""Where a Raspberry Pi's firmware driver shows the throttled flag word (hex, as `vcgencmd get_throttled`)."""
RPI_CMDLINE_FILES = ("/boot/firmware/cmdline.txt", "/boot/cmdline.txt")
"""The firmware's kernel command line file: Raspberry Pi OS bookworm and later, then the older place."""
RPI_SOC_TEMP = "/sys/class/thermal/thermal_zone0/temp"
"""The SoC temperature (milli-degC) of a Raspberry Pi: its one thermal zone, cpu-thermal."""

_TRACEFS_PATHS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

_VM_DMI_VENDORS = ("qemu", "vmware", "innotek", "xen", "bochs", "parallels", "amazon ec2", "google", "firecracker")


# ---------------------------------------------------------------- reading


def _run(argv: list[str]) -> tuple[str | None, str]:
    """Stdout of a quick program (whatever its exit status), or None and why; bounded by a timeout."""
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", timeout=PROGRAM_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        return None, f"{argv[0]}: not installed"
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]}: no answer within {PROGRAM_TIMEOUT_S:g} s"
    except OSError as e:
        return None, f"{argv[0]}: {e.strerror or e}"
    out = (done.stdout or done.stderr).strip()
    return (out, "") if out else (None, f"{argv[0]}: no output (exit status {done.returncode})")


class _Reader:
    """Reads files below one root and notes every fact it could not read."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.live = self.root.resolve() == Path("/")
        self.unavailable: list[dict] = []

    def path(self, abs_path: str) -> Path:
        """The file that stands for the absolute path abs_path under this root."""
        return self.root / abs_path.lstrip("/")

    def miss(self, fact: str, reason: str) -> None:
        """Record that a fact could not be read and why."""
        self.unavailable.append({"fact": fact, "reason": reason})

    def text(self, fact: str, abs_path: str, optional: bool = False) -> str | None:
        """Text of a file, or None (noted unless the fact is optional on some hosts)."""
        text, reason = self.read(self.path(abs_path))
        if text is None and not optional:
            self.miss(fact, reason)
        return text

    def int(self, fact: str, abs_path: str, optional: bool = False) -> int | None:
        """Integer content of a file, or None (noted as for text)."""
        text = self.text(fact, abs_path, optional)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            self.miss(fact, f"{abs_path}: not an integer: {text[:40]!r}")
            return None

    def read(self, path: Path) -> tuple[str | None, str]:
        """(text, why not) of a file below this root: a recorded tree through the confined reader
        (rtqual.results.tree: inside the tree, regular files, capped), the live root as it is."""
        return read_text(path) if self.live else tree.read_text(self.root, path)

    def exists(self, abs_path: str) -> bool:
        """Whether the path exists under this root (inside it, for a recorded tree)."""
        return self.path(abs_path).exists() if self.live else tree.exists(self.root, self.path(abs_path))

    def run(self, fact: str, argv: list[str]) -> str | None:
        """Output of a live program, only when collecting the live root (a fake tree has none)."""
        if not self.live:
            self.miss(fact, f"{argv[0]}: not run for a non-live root {self.root}")
            return None
        out, reason = _run(argv)
        if out is None:
            self.miss(fact, reason)
        return out


# ---------------------------------------------------------------- pure parsers


def parse_cmdline(cmdline: str) -> dict:
    """The real-time options of a kernel command line: value string, True for a bare flag, None if
    absent; threadirqs is always a bool. Words after '--' belong to init and are ignored."""
    picked: dict = {key: None for key in CMDLINE_KEYS}
    for word in cmdline.split():
        if word == "--":
            break
        key, sep, value = word.partition("=")
        if key in picked:
            picked[key] = value if sep else True
    picked["threadirqs"] = picked["threadirqs"] is not None
    return picked


def parse_dynamic_mode(text: str | None) -> str | None:
    """Current mode of /sys/kernel/debug/sched/preempt: 'none (voluntary) full' -> 'voluntary'."""
    m = re.search(r"\(([\w-]+)\)", text or "")
    return m.group(1) if m else None


def preempt_model(realtime: str | None, uname_version: str, config: str | None) -> tuple[str, str]:
    """Preemption model and its source: /sys/kernel/realtime, then the kernel config, then uname -v.
    uname -v cannot tell NONE from VOLUNTARY, so without a config that case is 'unknown'."""
    if realtime == "1":
        return "PREEMPT_RT", "/sys/kernel/realtime"
    if config:
        enabled = set(re.findall(r"^(CONFIG_PREEMPT\w*)=y\s*$", config, re.M))
        for option, model in (
            ("CONFIG_PREEMPT_RT", "PREEMPT_RT"),
            ("CONFIG_PREEMPT_DYNAMIC", "PREEMPT_DYNAMIC"),
            ("CONFIG_PREEMPT", "PREEMPT"),
            ("CONFIG_PREEMPT_VOLUNTARY", "VOLUNTARY"),
            ("CONFIG_PREEMPT_NONE", "NONE"),
        ):
            if option in enabled:
                return model, "kernel config"
    words = uname_version.split()
    if "PREEMPT_RT" in words or "PREEMPT RT" in uname_version:
        return "PREEMPT_RT", "uname -v"
    if "PREEMPT_DYNAMIC" in words:
        return "PREEMPT_DYNAMIC", "uname -v"
    if "PREEMPT" in words:
        return "PREEMPT", "uname -v"
    return "unknown", "uname -v"


def decode_caps(mask_hex: str) -> list[str]:
    """Capability names set in a hex mask such as /proc/self/status CapEff; unknown bits as CAP_<n>."""
    mask = int(mask_hex, 16)
    return [
        CAP_NAMES[bit] if bit < len(CAP_NAMES) else f"CAP_{bit}" for bit in range(mask.bit_length()) if mask >> bit & 1
    ]


def _cpuinfo_field(cpuinfo: str | None, name: str) -> str | None:
    """First value of a 'name : value' line of /proc/cpuinfo."""
    m = re.search(rf"^{re.escape(name)}\s*:\s*(.*)$", cpuinfo or "", re.M)
    return m.group(1).strip() if m else None


# ---------------------------------------------------------------- sections


def _kernel() -> dict:
    """uname of the live kernel."""
    u = os.uname()
    return {"release": u.release, "version": u.version, "machine": u.machine}


def _preempt(r: _Reader, kernel: dict, cmdline: dict) -> dict:
    """Preemption model, current dynamic mode (debugfs, never mounted here) and preempt= option."""
    realtime = r.text("preempt.realtime", "/sys/kernel/realtime", optional=True)
    config = r.text("preempt.kernel_config", f"/boot/config-{kernel['release']}", optional=True)
    if config is None:
        config = _read_config_gz(r)
    model, source = preempt_model(realtime, kernel["version"], config)
    mode_text = r.text("preempt.dynamic_mode", "/sys/kernel/debug/sched/preempt", optional=model != "PREEMPT_DYNAMIC")
    return {
        "model": model,
        "model_source": source,
        "dynamic_mode": parse_dynamic_mode(mode_text),
        "cmdline_preempt": cmdline["preempt"],
    }


def _read_config_gz(r: _Reader) -> str | None:
    """Kernel config from /proc/config.gz when /boot has none (common on boards)."""
    try:
        if not r.live:  # a recorded tree's: confined and capped, packed and unpacked
            packed = tree.read_bytes(r.root, r.path("/proc/config.gz"))
            unpacked = (
                zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(packed, tree.MAX_TREE_BYTES) if packed else None
            )
            return unpacked.decode(errors="replace") if unpacked is not None else None
        with gzip.open(r.path("/proc/config.gz"), "rt", errors="replace") as f:
            return f.read()
    except (OSError, EOFError, zlib.error):
        return None


def _cpu(r: _Reader, cpuinfo: str | None) -> dict:
    """CPU model, online/possible/isolated CPUs, SMT and per-CPU cpufreq settings."""
    board = r.text("cpu.board", "/proc/device-tree/model", optional=True) or _cpuinfo_field(cpuinfo, "Model")
    model = _cpuinfo_field(cpuinfo, "model name") or _cpuinfo_field(cpuinfo, "Hardware") or board
    if model is None:
        r.miss("cpu.model", "no 'model name', 'Hardware' or 'Model' in /proc/cpuinfo, no device-tree model")
    online_text = r.text("cpu.online", "/sys/devices/system/cpu/online")
    online = parse_kernel_cpulist(online_text)
    possible = parse_kernel_cpulist(r.text("cpu.possible_count", "/sys/devices/system/cpu/possible"))
    nohz_full = r.text("cpu.nohz_full", "/sys/devices/system/cpu/nohz_full", optional=True)
    per_cpu = [_cpufreq(r, cpu) for cpu in online or []]
    no_cpufreq = [e["cpu"] for e in per_cpu if e["reason"]]
    if no_cpufreq:
        r.miss("cpu.per_cpu.cpufreq", f"no cpufreq for CPU {format_cpulist(no_cpufreq)}")
    smt = r.text("cpu.smt_active", "/sys/devices/system/cpu/smt/active", optional=True)
    return {
        "model": model,
        "board": board,
        "online": online_text,
        "online_cpus": online,
        "possible_count": len(possible) if possible is not None else None,
        "isolated": r.text("cpu.isolated", "/sys/devices/system/cpu/isolated", optional=True),
        "nohz_full": None if nohz_full is None else nohz_full.replace("(null)", ""),
        "smt_active": {"1": True, "0": False}.get(smt) if smt is not None else None,
        "smt_control": r.text("cpu.smt_control", "/sys/devices/system/cpu/smt/control", optional=True),
        "per_cpu": per_cpu,
    }


def _cpufreq(r: _Reader, cpu: int) -> dict:
    """cpufreq settings of one CPU; all None with reason 'no cpufreq' when the driver is absent."""
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
    entry: dict = {"cpu": cpu}
    if not r.exists(base):
        entry.update({key: None for key in _CPUFREQ_FILES}, reason="no cpufreq")
        return entry
    for key, name in _CPUFREQ_FILES.items():
        fact = f"cpu.per_cpu[{cpu}].{key}"
        if key in _CPUFREQ_TEXT:
            entry[key] = r.text(fact, f"{base}/{name}")
        elif key in _CPUFREQ_LIST:
            text = r.text(fact, f"{base}/{name}", optional=True)
            entry[key] = text.split() if text is not None else None
        else:
            entry[key] = r.int(fact, f"{base}/{name}")
    entry["reason"] = None
    return entry


def _clocksource(r: _Reader) -> dict:
    """Current and available clocksources."""
    base = "/sys/devices/system/clocksource/clocksource0"
    available = r.text("clocksource.available", f"{base}/available_clocksource")
    return {
        "current": r.text("clocksource.current", f"{base}/current_clocksource"),
        "available": available.split() if available is not None else None,
    }


def _cpuidle(r: _Reader, cpus: list[int]) -> dict:
    """cpuidle driver, governor and the idle states (exit latency, disabled) of each online CPU."""
    base = "/sys/devices/system/cpu/cpuidle"
    governor = r.text("cpuidle.governor", f"{base}/current_governor", optional=True) or r.text(
        "cpuidle.governor", f"{base}/current_governor_ro"
    )
    per_cpu = []
    for cpu in cpus:
        states = _idle_states(r, cpu)
        per_cpu.append({"cpu": cpu, "states": states})
    return {"driver": r.text("cpuidle.driver", f"{base}/current_driver"), "governor": governor, "per_cpu": per_cpu}


def _idle_states(r: _Reader, cpu: int) -> list[dict] | None:
    """Idle states of one CPU, deepest last; None when the CPU has no cpuidle directory."""
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
    try:
        names = [p.name for p in r.path(base).iterdir() if re.fullmatch(r"state\d+", p.name)]
    except OSError as e:
        r.miss(f"cpuidle.per_cpu[{cpu}].states", f"{base}: {e.strerror or e}")
        return None
    states = []
    for name in sorted(names, key=lambda n: int(n[5:])):
        fact = f"cpuidle.per_cpu[{cpu}].{name}"
        disabled = r.int(f"{fact}.disabled", f"{base}/{name}/disable")
        states.append(
            {
                "index": int(name[5:]),
                "name": r.text(f"{fact}.name", f"{base}/{name}/name"),
                "latency_us": r.int(f"{fact}.latency_us", f"{base}/{name}/latency"),
                "residency_us": r.int(f"{fact}.residency_us", f"{base}/{name}/residency", optional=True),
                "disabled": bool(disabled) if disabled is not None else None,
            }
        )
    return states


def _virtualization(r: _Reader, cpuinfo: str | None) -> dict:
    """Signs of a hypervisor, and a summary: True, False, or None when nothing says."""
    flags = _cpuinfo_field(cpuinfo, "flags")
    dmi = "/sys/class/dmi/id"
    facts: dict = {
        "cpuinfo_hypervisor_flag": ("hypervisor" in flags.split()) if flags is not None else None,
        "hypervisor_type": r.text("virtualization.hypervisor_type", "/sys/hypervisor/type", optional=True),
        "dmi_sys_vendor": r.text("virtualization.dmi_sys_vendor", f"{dmi}/sys_vendor", optional=True),
        "dmi_product_name": r.text("virtualization.dmi_product_name", f"{dmi}/product_name", optional=True),
        "systemd_detect_virt_vm": None,
        "systemd_detect_virt_container": None,
    }
    facts["systemd_detect_virt_vm"] = r.run("virtualization.systemd_detect_virt_vm", ["systemd-detect-virt", "--vm"])
    facts["systemd_detect_virt_container"] = r.run(
        "virtualization.systemd_detect_virt_container", ["systemd-detect-virt", "--container"]
    )
    facts["virtualized"] = _virtualized(facts)
    facts["container_files"] = _container_files(r)
    return facts


def _container_files(r: _Reader) -> dict:
    """The files that say a container (read when systemd-detect-virt is missing or for a recorded tree):
    /.dockerenv, /run/.containerenv (podman), /run/systemd/container and PID 1's container= variable
    (the manager's name), a container manager named in /proc/1/cgroup, and the root file system's type (a VM
    whose root is the host's tree over 9p or virtiofs, as scripts/kernel-lab's guests, sees the host's files)."""
    mounts = r.text("virtualization.mounts", "/proc/self/mounts", optional=True) or ""
    root_fs = [w[2] for w in (line.split() for line in mounts.splitlines()) if len(w) > 2 and w[1] == "/"]
    environ = r.text("virtualization.pid1_environ", "/proc/1/environ", optional=True)
    pid1 = next((w[10:] for w in (environ or "").split("\0") if w.startswith("container=")), None)
    cgroup = (r.text("virtualization.pid1_cgroup", "/proc/1/cgroup", optional=True) or "").lower()
    return {
        "dockerenv": r.exists("/.dockerenv"),
        "containerenv": r.exists("/run/.containerenv"),
        "run_systemd_container": r.text(
            "virtualization.run_systemd_container", "/run/systemd/container", optional=True
        ),
        "pid1_container": pid1 or None,
        "pid1_cgroup": next((n for n in ("docker", "lxc", "libpod", "kubepods") if f"/{n}" in cgroup), None),
        "root_fstype": root_fs[-1] if root_fs else None,
    }


def _virtualized(v: dict) -> bool | None:
    """Whether we run under a hypervisor: systemd-detect-virt first, then cpuinfo, sysfs and DMI."""
    if v["systemd_detect_virt_vm"] is not None:
        return v["systemd_detect_virt_vm"] != "none"
    vendor = f"{v['dmi_sys_vendor'] or ''} {v['dmi_product_name'] or ''}".lower()
    if (
        v["cpuinfo_hypervisor_flag"]
        or v["hypervisor_type"]
        or any(name in vendor for name in _VM_DMI_VENDORS)
        or "virtual machine" in vendor
    ):
        return True
    if v["cpuinfo_hypervisor_flag"] is False:
        return False
    return None


def _sched(r: _Reader) -> dict:
    """RT throttling, timer migration, NUMA balancing and the fair (deadline) server of cpu0."""
    k = "/proc/sys/kernel"
    fair = "/sys/kernel/debug/sched/fair_server/cpu0"
    fair_present = r.exists("/sys/kernel/debug/sched/fair_server")
    return {
        "rt_runtime_us": r.int("sched.rt_runtime_us", f"{k}/sched_rt_runtime_us"),
        "rt_period_us": r.int("sched.rt_period_us", f"{k}/sched_rt_period_us"),
        "timer_migration": r.int("sched.timer_migration", f"{k}/timer_migration", optional=True),
        "numa_balancing": r.int("sched.numa_balancing", f"{k}/numa_balancing", optional=True),
        "fair_server_cpu0_runtime_ns": r.int(
            "sched.fair_server_cpu0_runtime_ns", f"{fair}/runtime", optional=not fair_present
        ),
        "fair_server_cpu0_period_ns": r.int(
            "sched.fair_server_cpu0_period_ns", f"{fair}/period", optional=not fair_present
        ),
    }


def _limits(r: _Reader) -> dict:
    """Soft and hard resource limits that decide whether RT priority and mlock work."""
    out: dict[str, dict[str, int | str | None]] = {}
    for key, name in (
        ("rtprio", "RLIMIT_RTPRIO"),
        ("memlock_bytes", "RLIMIT_MEMLOCK"),
        ("rttime_us", "RLIMIT_RTTIME"),
        ("nice", "RLIMIT_NICE"),
    ):
        try:
            soft, hard = resource.getrlimit(getattr(resource, name))
        except (AttributeError, OSError, ValueError) as e:
            r.miss(f"limits.{key}", f"{name}: {e}")
            out[key] = {"soft": None, "hard": None}
            continue
        out[key] = {
            "soft": UNLIMITED if soft == resource.RLIM_INFINITY else soft,
            "hard": UNLIMITED if hard == resource.RLIM_INFINITY else hard,
        }
    return out


def _privileges(r: _Reader, limits: dict) -> dict:
    """euid, effective capabilities, and whether SCHED_FIFO and mlockall can be expected to work.
    With capabilities known, root alone is not enough (containers drop CAP_SYS_NICE)."""
    euid = os.geteuid()
    status = r.text("privileges.cap_eff", "/proc/self/status")
    cap_hex = cap_eff_hex(status)
    caps = None
    if cap_hex is not None:
        try:
            caps = decode_caps(cap_hex)
        except ValueError:
            r.miss("privileges.capabilities", f"CapEff is not hex: {cap_hex!r}")
    elif status is not None:
        r.miss("privileges.capabilities", "no CapEff line in /proc/self/status")
    rtprio = limits["rtprio"]["soft"]
    memlock = limits["memlock_bytes"]["soft"]
    has = (lambda cap: cap in caps) if caps is not None else (lambda cap: euid == 0)
    return {
        "euid": euid,
        "root": euid == 0,
        "cap_eff_hex": cap_hex,
        "capabilities": caps,
        "can_sched_fifo": has("CAP_SYS_NICE") or rtprio == UNLIMITED or (rtprio or 0) > 0,
        "can_mlock": has("CAP_IPC_LOCK") or memlock == UNLIMITED,
    }


def _devices(r: _Reader) -> dict:
    """/dev/cpu_dma_latency, tracefs and its tracers, GPIO chips and UIO devices."""
    tracefs = next((p for p in _TRACEFS_PATHS if r.exists(f"{p}/trace_marker")), None)
    tracers = None
    if tracefs is None:
        r.miss("devices.tracefs", "tracefs not mounted (no trace_marker in " + " or ".join(_TRACEFS_PATHS) + ")")
    else:
        text = r.text("devices.available_tracers", f"{tracefs}/available_tracers")
        tracers = text.split() if text is not None else None
    return {
        "cpu_dma_latency": r.exists("/dev/cpu_dma_latency"),
        "tracefs": tracefs,
        "available_tracers": tracers,
        "timerlat": ("timerlat" in tracers) if tracers is not None else None,
        "osnoise": ("osnoise" in tracers) if tracers is not None else None,
        "gpiochips": _dev_glob(r, "gpiochip*"),
        "uio": _dev_glob(r, "uio*"),
    }


def _dev_glob(r: _Reader, pattern: str) -> list[str]:
    """Names of /dev entries matching pattern, in natural order."""
    names = [Path(p).name for p in glob.glob(f"{glob.escape(str(r.path('/dev')))}/{pattern}")]
    return sorted(names, key=lambda n: (len(n), n))


def _meminfo_kb(r: _Reader, meminfo: str | None, name: str) -> int | None:
    """A 'Name: N kB' field of /proc/meminfo."""
    m = re.search(rf"^{name}:\s*(\d+)", meminfo or "", re.M)
    if m is None and meminfo is not None:
        r.miss(f"memory.{name}", f"no {name} in /proc/meminfo")
    return int(m.group(1)) if m else None


def _load(r: _Reader) -> dict:
    """Load averages from /proc/loadavg."""
    text = r.text("load", "/proc/loadavg")
    parts = (text or "").split()
    avg: list[float | None]
    try:
        avg = [float(x) for x in parts[:3]]
    except ValueError:
        avg = []
    if text is not None and len(avg) != 3:
        r.miss("load", f"/proc/loadavg: unexpected {text[:40]!r}")
    if len(avg) != 3:
        avg = [None, None, None]
    return {"avg_1m": avg[0], "avg_5m": avg[1], "avg_15m": avg[2]}


def _uptime_s(r: _Reader) -> float | None:
    """Seconds since boot."""
    text = r.text("uptime_s", "/proc/uptime")
    if not text:
        return None
    try:
        return float(text.split()[0])
    except ValueError:
        r.miss("uptime_s", f"/proc/uptime: unexpected {text[:40]!r}")
        return None


def _tools(r: _Reader, tools: dict | None) -> dict:
    """Versions passed by the caller plus cyclictest (path and version) when on PATH."""
    out = dict(tools or {})
    path = shutil.which("cyclictest")
    if path is None:
        out["cyclictest"] = None
        return out
    text = r.run("tools.cyclictest.version", [path, "--help"])
    m = re.search(r"\bV\s*(\d[\w.-]*)", (text or "").splitlines()[0] if text else "")
    out["cyclictest"] = {"path": path, "version": m.group(1) if m else None}
    return out


MSR_SMI_COUNT = 0x34  # Intel: System Management Interrupts since reset, per CPU (8 bytes at this offset)


def smi_counts(cpus: list[int], root: str | os.PathLike = "/") -> dict:
    """Each CPU's SMI count (MSR_SMI_COUNT through /dev/cpu/N/msr: the msr module, root, an Intel CPU), or
    {"counts": None, "note": "not readable: ..."} where it cannot be read (no msr device, no permission, AMD)."""
    counts: dict[str, int] = {}
    for cpu in cpus:
        path = Path(root) / "dev" / "cpu" / str(cpu) / "msr"
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                raw = os.pread(fd, 8, MSR_SMI_COUNT)
            finally:
                os.close(fd)
        except OSError as e:
            why = "no /dev/cpu/N/msr (modprobe msr)" if e.errno == errno.ENOENT else e.strerror or str(e)
            return {"counts": None, "note": f"not readable: {why}"}
        if len(raw) != 8:
            return {"counts": None, "note": "not readable: short read of MSR_SMI_COUNT"}
        counts[str(cpu)] = int.from_bytes(raw, "little") & 0xFFFFFFFF  # the count is the low 32 bits
    return {"counts": counts, "note": None}


def smi_delta(before: dict, after: dict) -> dict:
    """A case's SMIs: the counts before and after it and each CPU's difference (None where not readable)."""
    b, a = before.get("counts"), after.get("counts")
    if not b or not a:
        return {"before": b, "after": a, "per_cpu": None, "note": before.get("note") or after.get("note")}
    per_cpu = {c: (a[c] - b[c]) % (1 << 32) for c in b if c in a}  # a 32-bit counter may wrap once
    return {"before": b, "after": a, "per_cpu": per_cpu, "total": sum(per_cpu.values()), "note": None}


def rpi_throttled(r: _Reader) -> tuple[str | None, str | None]:
    """(the firmware's throttled flag word as text, where it was read): the sysfs file, else on the live root
    `vcgencmd get_throttled`; (None, None) where neither answers."""
    for path in RPI_THROTTLED_FILES:
        text = r.text("rpi.throttled", path, optional=True)
        if text:
            return text, path
    text = r.run("rpi.throttled", ["vcgencmd", "get_throttled"])
    return (text, "vcgencmd get_throttled") if text else (None, None)


def _rpi(r: _Reader, board: str | None) -> dict | None:
    """A Raspberry Pi's own facts (None on other boards): the firmware's throttled flags decoded (now and since
    boot, and where they were read), the SoC temperature and the firmware's cmdline file (cmdline.txt: what the
    next boot's kernel command line will be; /proc/cmdline is this boot's, with the firmware's additions)."""
    if "raspberry pi" not in (board or "").lower():
        return None
    text, source = rpi_throttled(r)
    flags = parse_throttled(text)
    if text is not None and flags is None:
        r.miss("rpi.throttled", f"{source}: not a flag word: {text[:40]!r}")
    temp = r.int("rpi.soc_temp_c", RPI_SOC_TEMP, optional=True)
    cmdline_file = next((p for p in RPI_CMDLINE_FILES if r.exists(p)), None)
    if cmdline_file is None:
        r.miss("rpi.firmware_cmdline", f"none of {', '.join(RPI_CMDLINE_FILES)}")
    throttled = decode_throttled(flags)
    return {
        "model": board,
        "throttled": {**throttled, "source": source} if throttled else None,
        "soc_temp_c": temp / 1000 if temp is not None else None,
        "firmware_cmdline": (
            {"path": cmdline_file, "text": r.text("rpi.firmware_cmdline", cmdline_file)} if cmdline_file else None
        ),
    }


def collect(root: str | os.PathLike = "/", tools: dict | None = None) -> dict:
    """Snapshot of the host facts that decide real-time latency, for bundles and reports.
    Never raises for an environmental problem: unreadable facts are None, listed in 'unavailable'."""
    r = _Reader(root)
    time_ns = time.time_ns()
    kernel = _kernel()
    cmdline_text = r.text("cmdline", "/proc/cmdline")
    cmdline = parse_cmdline(cmdline_text or "")
    cpuinfo = r.text("cpuinfo", "/proc/cpuinfo")
    cpu = _cpu(r, cpuinfo)
    limits = _limits(r)
    meminfo = r.text("memory", "/proc/meminfo")
    return {
        "time_utc": datetime.datetime.fromtimestamp(time_ns / 1e9, datetime.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "time_ns": time_ns,
        "hostname": os.uname().nodename,
        "python_version": platform.python_version(),
        "kernel": kernel,
        "preempt": _preempt(r, kernel, cmdline),
        "cmdline": {"full": cmdline_text, "rt_options": cmdline},
        "cpu": cpu,
        "clocksource": _clocksource(r),
        "cpuidle": _cpuidle(r, cpu["online_cpus"] or []),
        "virtualization": _virtualization(r, cpuinfo),
        "sched": _sched(r),
        "limits": limits,
        "privileges": _privileges(r, limits),
        "devices": _devices(r),
        "smi": smi_counts(cpu["online_cpus"] or [], root),
        "memory": {"mem_total_kb": _meminfo_kb(r, meminfo, "MemTotal")},
        "load": _load(r),
        "uptime_s": _uptime_s(r),
        "rpi": _rpi(r, cpu["board"]),
        "tools": _tools(r, tools),
        "unavailable": r.unavailable,
    }


# ---------------------------------------------------------------- derived views


def tunables(facts: dict) -> dict:
    """The settings rtqual may change and must restore, keyed by the file that holds them."""
    out: dict = {}
    for entry in get_fact(facts, "cpu.per_cpu") or []:
        base = f"/sys/devices/system/cpu/cpu{entry.get('cpu')}/cpufreq"
        for key, name in (
            ("governor", "scaling_governor"),
            ("scaling_min_freq_khz", "scaling_min_freq"),
            ("scaling_max_freq_khz", "scaling_max_freq"),
        ):
            if entry.get(key) is not None:
                out[f"{base}/{name}"] = entry[key]
    for key, name in (("rt_runtime_us", "sched_rt_runtime_us"), ("timer_migration", "timer_migration")):
        value = get_fact(facts, f"sched.{key}")
        if value is not None:
            out[f"/proc/sys/kernel/{name}"] = value
    return out

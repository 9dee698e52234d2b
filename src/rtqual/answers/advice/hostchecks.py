"""The checks of `rtqual advise`: one function per check over a host's facts, registered in CHECKS.

Pure functions from host facts (rtqual.measure.host.facts: collect() and tuning(), read below a root, or a
bundle's recorded copies) to findings. A finding: id, severity (blocker, major, minor, info), evidence (the
files and values read), why (one sentence), fix (the exact lines to run or install), runtime (can be applied
without a reboot), check (how to see it took); knobs (the writes `advise --measure` applies for a while: path
and value, or an IRQ whose kernel threads it raises to a SCHED_FIFO priority: irq and priority) and persistent
(the fix's sysctl, cmdline and tuned lines, for --emit); effect_ns where the latency the problem adds is known
(rtqual.answers.advice.advise weighs it against the requirement).

Every command a fix prints is built from values, never from text the facts hold: CPU, IRQ, pid and idle-state
numbers are ints in range, a thread name is a kernel thread's (KTHREAD_NAME) and each word is shell-quoted.
Context takes only such values from the facts and names what it left out (`refused`, one line each, never the
value itself). docs/advise.md says what each check reads and why.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from rtqual.results.facts import RPI_SINCE_BOOT_SHIFT, RPI_THROTTLED_BITS, UNLIMITED, get_fact, parse_throttled
from rtqual.units import format_cpulist, parse_kernel_cpulist

SEVERITIES = ("blocker", "major", "minor", "info")
DEFAULT_PRIORITY = 80  # the timer probe's
SHALLOW_CSTATE_US = 10  # an idle state that takes longer than this to leave shows in wake-up latency
# The worst wake-up a kernel without PREEMPT_RT adds under load, the order docs/advise.md cites: the KEK paper's
# standard kernel about 200 us under hackbench (seed 000), non-RT kernels up to about a millisecond elsewhere.
NON_RT_KERNEL_NS = 1_000_000
GOOD_CLOCKSOURCES = ("tsc", "arch_sys_counter", "riscv_clocksource", "timebase")
PER_CPU_KTHREADS = ("migration/", "cpuhp/", "idle_inject/", "watchdog/", "rcu_preempt", "rcuc/", "rcub/")
RPI_FLAGS = {  # bit -> meaning of the firmware's get_throttled (rtqual.results.facts.RPI_THROTTLED_BITS)
    **{bit: f"{name} now" for bit, name in RPI_THROTTLED_BITS.items()},
    **{bit + RPI_SINCE_BOOT_SHIFT: f"{name} since boot" for bit, name in RPI_THROTTLED_BITS.items()},
}
RPI_UNDER_VOLTAGE_SINCE_BOOT = 1 << RPI_SINCE_BOOT_SHIFT
RPI_CONFIG = "/boot/firmware/config.txt"
RPI_CONFIGS = (RPI_CONFIG, "/boot/config.txt")  # where fix text may name the config file (never the facts' text)
MAX_CPUS = 8192  # the kernel's largest NR_CPUS: a CPU number at or above it is no CPU
MAX_PID = 4_194_304  # PID_MAX_LIMIT on 64-bit
MAX_IRQ = 1 << 20  # far above any IRQ number a kernel gives (NR_IRQS + the dynamic range)
MAX_IDLE_STATES = 10  # CPUIDLE_STATE_MAX
# an IRQ thread's name, irq/N-NAME: in full since Linux 5.17 (irq/25-virtio0-requests), cut to 15 characters before
IRQ_THREAD = re.compile(r"irq/([0-9]{1,7})-[!-~][ -~]{0,62}")
KTHREAD_NAME = re.compile(r"[A-Za-z0-9_./:+-]{1,15}")  # a comm of at most TASK_COMM_LEN - 1 plain characters


def whole(value: Any, low: int = 0, high: int | None = None) -> int | None:
    """value when it is an int (not a bool, not text) within low..high, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        return None
    return value


def cpus_of(text: Any) -> list[int] | None:
    """A kernel CPU list text ('0-3,8') as CPU numbers, None for garbage or a CPU at or above MAX_CPUS (a
    crafted range never grows a list)."""
    if not isinstance(text, str) or any(len(n) > 4 or int(n) >= MAX_CPUS for n in re.findall(r"\d+", text)):
        return None
    return parse_kernel_cpulist(text)


def sh(*words: Any) -> str:
    """A command line of values, each word shell-quoted: sh('taskset', '-p', 5) -> 'taskset -p 5'."""
    return " ".join(shlex.quote(str(w)) for w in words)


def _idle_state(s: dict) -> bool:
    latency = s.get("latency_us")
    return whole(s.get("index"), 0, MAX_IDLE_STATES - 1) is not None and (latency is None or whole(latency) is not None)


def dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Context:
    """What every check reads: the facts, the RT CPUs, the housekeeping CPUs, the priority and the budget;
    and the values commands are built from (online CPUs, per-CPU entries, IRQs, threads), only those of the
    right kind and range, each left out one named in `refused`."""

    def __init__(
        self,
        facts: dict,
        tun: dict,
        cpus: list[int],
        priority: int,
        budget_ns: int | None,
        input_irqs: list[int] | None = None,
    ):
        self.facts, self.tun, self.priority, self.budget_ns = facts, tun, priority, budget_ns
        self.input_irqs = [n for n in input_irqs or () if whole(n, 0, MAX_IRQ) is not None]  # the input's IRQs
        self.refused: list[str] = []
        self.cpufreq = self._per_cpu(get_fact(facts, "cpu.per_cpu"), "cpu.per_cpu")
        self.per_cpu = self._per_cpu(tun.get("per_cpu"), "tuning per_cpu")
        self.idle = [
            e
            | {"states": self._kept(dicts(e.get("states")), _idle_state, "cpuidle", "state(s) of no index or latency")}
            for e in self._per_cpu(get_fact(facts, "cpuidle.per_cpu"), "cpuidle.per_cpu")
        ]
        self.irqs = self._kept(
            dicts((tun.get("irqs") or {}).get("irqs") if isinstance(tun.get("irqs"), dict) else None),
            lambda q: whole(q.get("irq"), 0, MAX_IRQ) is not None,
            "tuning irqs",
            "IRQ(s) whose number is no IRQ number",
        )
        self.tasks = self._kept(
            dicts(tun.get("rt_tasks")),
            lambda t: (
                whole(t.get("pid"), 1, MAX_PID) is not None
                and whole(t.get("tid"), 1, MAX_PID) is not None
                and whole(t.get("rt_priority"), 0, 99) is not None
                and isinstance(t.get("comm"), str)
                and isinstance(t.get("policy"), str)
            ),
            "tuning rt_tasks",
            "thread(s) whose pid, tid, priority or name is of the wrong kind",
        )
        listed = get_fact(facts, "cpu.online_cpus")
        online = [c for c in listed if whole(c, 0, MAX_CPUS - 1) is not None] if isinstance(listed, list) else []
        if listed is not None and (not isinstance(listed, list) or len(online) < len(listed)):
            self.refused.append("cpu.online_cpus: entries that are no CPU number, left out")
        self.online = sorted(set(online or [e["cpu"] for e in self.per_cpu] or cpus))
        self.cpus = cpus
        self.housekeeping = [c for c in self.online if c not in cpus]
        self.rt = format_cpulist(cpus)
        self.hk = format_cpulist(self.housekeeping) if self.housekeeping else None

    def _kept(self, entries: list[dict], good: Callable[[dict], bool], where: str, what: str) -> list[dict]:
        """The entries that are good; how many were not, named in `refused` ('tuning irqs: 1 IRQ(s) whose ...')."""
        kept = [e for e in entries if good(e)]
        if len(kept) < len(entries):
            self.refused.append(f"{where}: {len(entries) - len(kept)} {what}, left out")
        return kept

    def _per_cpu(self, value: Any, where: str) -> list[dict]:
        return self._kept(
            dicts(value), lambda e: whole(e.get("cpu"), 0, MAX_CPUS - 1) is not None, where, "entries of no CPU number"
        )

    def fact(self, dotted: str) -> Any:
        """A collect() fact by dotted path, None when absent."""
        return get_fact(self.facts, dotted)


def finding(
    id: str,
    severity: str,
    evidence: list[str],
    why: str,
    fix: str,
    runtime: bool,
    check: str,
    knobs: list[dict] | None = None,
    persistent: dict | None = None,
    effect_ns: int | None = None,
) -> dict:
    """One finding in the shape --json gives (effect_ns only where known)."""
    out = {
        "id": id,
        "severity": severity,
        "evidence": evidence,
        "why": why,
        "fix": fix,
        "runtime": runtime,
        "check": check,
        "knobs": knobs or [],
        "persistent": persistent or {},
    }
    return out | ({"effect_ns": effect_ns} if effect_ns is not None else {})


def sysctl_finding(fid: str, severity: str, evidence: list[str], why: str, name: str, value: str) -> dict:
    """A finding whose fix is one sysctl: set at run time, checked with `sysctl NAME`, kept in sysctl.d."""
    return finding(
        fid,
        severity,
        evidence,
        why,
        sh("sysctl", "-w", f"{name}={value}"),
        True,
        f"sysctl {name} (prints {value})",
        knobs=[{"knob": "/proc/sys/" + name.replace(".", "/"), "value": value}],
        persistent={"sysctl": [f"{name} = {value}"]},
    )


def _mask_hex(cpus: list[int]) -> str:
    """A CPU mask as the kernel writes it (hex, no 0x): [0] -> '1', [0, 1] -> '3'."""
    return format(sum(1 << c for c in cpus), "x")


def _covers(cpulist: Any, cpus: list[int]) -> list[int]:
    """Which of cpus a kernel CPU list text includes."""
    listed = cpus_of(cpulist) or []
    return [c for c in cpus if c in listed]


def _mask_covers(mask: Any, cpus: list[int]) -> list[int]:
    """Which of cpus a hex CPU mask text ('3', '00000003', 'ff,ffffffff') includes."""
    digits = mask.replace(",", "") if isinstance(mask, str) else ""
    if not re.fullmatch(r"[0-9a-fA-F]{1,2048}", digits):
        return []
    value = int(digits, 16)
    return [c for c in cpus if value >> c & 1]


# ---------------------------------------------------------------- the checks


def preempt_model(c: Context) -> dict | None:
    """PREEMPT_RT, or what the kernel is instead."""
    model = c.fact("preempt.model")
    mode = c.fact("preempt.dynamic_mode") or c.fact("preempt.cmdline_preempt")
    version = c.tun.get("kernel_version") or c.fact("kernel.version")
    if model == "PREEMPT_RT":
        return None
    evidence = [f"preemption model: {model} (from {c.fact('preempt.model_source')})", f"uname -v: {version}"]
    if model == "PREEMPT_DYNAMIC":
        evidence.append(f"dynamic mode: {mode or 'unknown (debugfs not mounted, no preempt= on the command line)'}")
    full = model == "PREEMPT" or (model == "PREEMPT_DYNAMIC" and mode == "full")
    fix = (
        "install a PREEMPT_RT kernel (Debian: apt install linux-image-rt-$(dpkg --print-architecture); "
        "Ubuntu: pro enable realtime-kernel; RHEL: dnf install kernel-rt)"
    )
    if model == "PREEMPT_DYNAMIC" and not full:
        fix += "\nor at least, on this kernel: add preempt=full to the kernel command line"
    return finding(
        "preempt-model",
        "major" if full else "blocker",
        evidence,
        "Without PREEMPT_RT, interrupt handlers, softirqs and non-preemptible kernel sections delay a real-time "
        "task by up to milliseconds, whatever else is tuned.",
        fix,
        False,
        "cat /sys/kernel/realtime (prints 1) or uname -v (shows PREEMPT_RT) after the reboot",
        persistent={"cmdline": [] if full or model != "PREEMPT_DYNAMIC" else ["preempt=full"]},
        effect_ns=NON_RT_KERNEL_NS,
    )


def isolcpus(c: Context) -> dict | None:
    """The RT CPUs isolated from the scheduler, the tick, RCU callbacks and IRQs."""
    opts = c.fact("cmdline.rt_options") if isinstance(c.fact("cmdline.rt_options"), dict) else {}
    missing = {
        key: c.cpus
        for key in ("isolcpus", "nohz_full", "rcu_nocbs")
        if len(_covers(_cpulist_of(opts.get(key)), c.cpus)) < len(c.cpus)
    }
    irqaff = opts.get("irqaffinity")
    if irqaff and not _covers(str(irqaff), c.cpus):
        pass
    elif c.hk:
        missing["irqaffinity"] = c.housekeeping
    if not missing:
        return None
    if not c.hk:
        return finding(
            "isolcpus",
            "major",
            [f"online CPUs: {format_cpulist(c.online)}; real-time CPUs: {c.rt}"],
            "With every CPU running real-time work there is no CPU left for the kernel's housekeeping, so "
            "isolation is impossible.",
            "choose fewer real-time CPUs (--cpus) or give the host more CPUs",
            False,
            "rtqual advise --cpus LIST",
        )
    words = [
        f"isolcpus=managed_irq,domain,{c.rt}",
        f"nohz_full={c.rt}",
        f"rcu_nocbs={c.rt}",
        f"irqaffinity={c.hk}",
    ]
    return finding(
        "isolcpus",
        "major",
        [f"/proc/cmdline: {k}={opts.get(k) if opts.get(k) is not None else '(absent)'}" for k in missing]
        + [f"/sys/devices/system/cpu/isolated: {c.fact('cpu.isolated') or '(empty)'}"],
        "A CPU that is not isolated runs other tasks, the periodic tick, RCU callbacks and device interrupts "
        "between the real-time task's wake-ups.",
        "add to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub; on a "
        "Raspberry Pi /boot/firmware/cmdline.txt): " + " ".join(words),
        False,
        f"cat /sys/devices/system/cpu/isolated (prints {c.rt}) and /sys/devices/system/cpu/nohz_full after the reboot",
        persistent={"cmdline": words, "tuned": [f"variables:isolated_cores={c.rt}"]},
    )


def _cpulist_of(value: Any) -> str | None:
    """The CPU list of an isolcpus/nohz_full value ('managed_irq,domain,2-3' -> '2-3')."""
    if not isinstance(value, str):
        return None
    parts = [p for p in value.split(",") if p and (p[0].isdigit())]
    return ",".join(parts) or None


def irq_affinity(c: Context) -> dict | None:
    """IRQs allowed on the RT CPUs, and irqbalance, which would move them back."""
    if not c.hk:
        return None
    on_rt = [q for q in c.irqs if _covers(q.get("affinity"), c.cpus)]
    balance = (c.tun.get("irqs") or {}).get("irqbalance") is True
    if not on_rt and not balance:
        return None
    evidence = [
        f"/proc/irq/{q['irq']}/smp_affinity_list: {q['affinity']} ({q.get('name') or 'unnamed'})" for q in on_rt[:12]
    ]
    if len(on_rt) > 12:
        evidence.append(f"... and {len(on_rt) - 12} more IRQs allowed on CPU {c.rt}")
    if balance:
        evidence.append("irqbalance is running")
    numbers = " ".join(str(q["irq"]) for q in on_rt)
    lines = [f"for i in {numbers}; do echo {sh(c.hk)} > /proc/irq/$i/smp_affinity_list; done"] if on_rt else []
    if balance:
        banned = sh(f"IRQBALANCE_BANNED_CPULIST={c.rt}")
        lines.insert(0, f"echo {banned} >> /etc/default/irqbalance && systemctl restart irqbalance")
    return finding(
        "irq-affinity",
        "major",
        evidence,
        "A device interrupt taken on a real-time CPU runs its handler before the real-time task, and on a "
        "non-RT kernel it cannot be preempted.",
        "\n".join(lines),
        True,
        f"grep . /proc/irq/*/effective_affinity_list (none lists CPU {c.rt})",
        knobs=[{"knob": f"/proc/irq/{q['irq']}/smp_affinity_list", "value": c.hk} for q in on_rt],
        persistent={"cmdline": [f"irqaffinity={c.hk}"], "tuned": [f"variables:isolated_cores={c.rt}"]},
    )


def irq_thread_priority(c: Context) -> dict | None:
    """On PREEMPT_RT (or threadirqs): IRQ threads, ksoftirqd and ktimers on the RT CPUs below the application."""
    threaded = c.fact("preempt.model") == "PREEMPT_RT" or bool(c.fact("cmdline.rt_options.threadirqs"))
    if not threaded:
        return None
    tasks = [t for t in c.tasks if _on(t, c.cpus)]
    irq = [t for t in tasks if t["comm"].startswith("irq/")]
    soft = [t for t in tasks if t["comm"].startswith(("ksoftirqd/", "ktimers/", "irq_work/"))]
    below = [t for t in irq + soft if t["rt_priority"] < c.priority]
    if not below:
        return None
    evidence = [
        f"{t['comm']} (tid {t['tid']}): {t['policy'].upper()} {t['rt_priority']}, CPUs {t['cpus']}" for t in below[:12]
    ]
    if len(below) > 12:
        evidence.append(f"... and {len(below) - 12} more interrupt threads below priority {c.priority}")
    first = next((t for t in below if t["comm"].startswith("irq/")), below[0])
    above = min(c.priority + 1, 99)
    raise_it = (
        f"e.g. {sh('chrt', '-f', '-p', above)} $({sh('pgrep', '-x', first['comm'])}); "
        if KTHREAD_NAME.fullmatch(first["comm"])
        else "(its chrt line left out: the thread's name is not a kernel thread's); "
    )
    inputs = {t["pid"]: n for t in below if (n := irq_of_thread(t["comm"])) is not None and n in c.input_irqs}
    if inputs:  # the measured input's IRQ threads: by pid (an int), the fix advise --measure applies
        first = next(t for t in below if t["pid"] in inputs)
        raise_it = f"{'; '.join(sh('chrt', '-f', '-p', above, pid) for pid in sorted(inputs))}; "
    return finding(
        "irq-thread-priority",
        "major",
        evidence,
        f"On PREEMPT_RT interrupt handlers are threads: an application at FIFO {c.priority} on the same CPU runs "
        "before them, so the interrupt that brings its own input waits until the application sleeps.",
        f"raise the thread of the application's own device above it, {raise_it}"
        f"or run the application below it (FIFO {max(first['rt_priority'] - 1, 1)}); "
        "persistent: a systemd unit or udev rule running the same chrt at boot "
        "(tuna --threads='irq/*-NAME' --priority=FIFO:N)",
        True,
        "ps -eLo tid,cls,rtprio,psr,comm | grep -E 'irq/|ksoftirqd|ktimers'",
        knobs=[{"irq": n, "priority": above} for n in sorted(set(inputs.values()))],
    )


def irq_of_thread(comm: str) -> int | None:
    """The IRQ number of an IRQ thread's name (irq/22-uio_pci_ -> 22), None for another thread."""
    m = IRQ_THREAD.fullmatch(comm)
    return int(m.group(1)) if m else None


def _on(task: dict, cpus: list[int]) -> bool:
    """Whether a thread may run on any of cpus."""
    return bool(_covers(task.get("cpus"), cpus))


def rt_throttling(c: Context) -> dict | None:
    """sched_rt_runtime_us below its period: RT tasks are throttled (and the fair server runs)."""
    runtime, period = c.fact("sched.rt_runtime_us"), c.fact("sched.rt_period_us")
    if runtime is None or runtime == -1:
        return None
    evidence = [f"/proc/sys/kernel/sched_rt_runtime_us: {runtime}", f"/proc/sys/kernel/sched_rt_period_us: {period}"]
    if c.fact("sched.fair_server_cpu0_runtime_ns") is not None:
        evidence.append(
            f"fair server (cpu0): {c.fact('sched.fair_server_cpu0_runtime_ns')} ns "
            f"per {c.fact('sched.fair_server_cpu0_period_ns')} ns"
        )
    return sysctl_finding(
        "rt-throttling",
        "minor",
        evidence,
        "With throttling on, real-time tasks that use their whole budget are stopped for the rest of the "
        "period so ordinary tasks can run: a stall of up to the period's remainder.",
        "kernel.sched_rt_runtime_us",
        "-1",
    )


def governor(c: Context) -> dict | None:
    """cpufreq governor of the RT CPUs and boost."""
    per_cpu = {e["cpu"]: e for e in c.cpufreq}
    slow = [
        (cpu, per_cpu[cpu]["governor"])
        for cpu in c.cpus
        if (per_cpu.get(cpu) or {}).get("governor") not in (None, "performance")
    ]
    boost = c.tun.get("boost") == 1 or c.tun.get("no_turbo") == 0
    if not slow and not boost:
        return None
    evidence = [f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor: {g}" for cpu, g in slow]
    lines, knobs = [], []
    if slow:
        lines.append(
            f"for c in {' '.join(str(cpu) for cpu, _ in slow)}; "
            "do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done"
        )
        knobs += [
            {"knob": f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", "value": "performance"}
            for cpu, _ in slow
        ]
    if c.tun.get("boost") == 1:
        evidence.append("/sys/devices/system/cpu/cpufreq/boost: 1")
        lines.append("echo 0 > /sys/devices/system/cpu/cpufreq/boost")
        knobs.append({"knob": "/sys/devices/system/cpu/cpufreq/boost", "value": "0"})
    if c.tun.get("no_turbo") == 0:
        evidence.append("/sys/devices/system/cpu/intel_pstate/no_turbo: 0")
        lines.append("echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo")
        knobs.append({"knob": "/sys/devices/system/cpu/intel_pstate/no_turbo", "value": "1"})
    return finding(
        "governor",
        "major" if slow else "minor",
        evidence,
        "A CPU that changes frequency with load runs the first work after a wake-up slowly, and turbo makes "
        "the same work take different times with temperature.",
        "\n".join(lines),
        True,
        "grep . /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (all performance)",
        knobs=knobs,
        persistent={"tuned": ["cpu:governor=performance"], "cmdline": ["cpufreq.default_governor=performance"]},
    )


def cstates(c: Context) -> dict | None:
    """Idle states of the RT CPUs slower to leave than SHALLOW_CSTATE_US (or the budget's tenth)."""
    limit_us = min(SHALLOW_CSTATE_US, c.budget_ns // 10_000) if c.budget_ns else SHALLOW_CSTATE_US
    deep = []
    for entry in c.idle:
        if entry["cpu"] in c.cpus:
            deep += [
                (entry["cpu"], s)
                for s in entry["states"]
                if not s.get("disabled") and (s["latency_us"] or 0) > limit_us
            ]
    qos = [e for e in c.per_cpu if e["cpu"] in c.cpus and e.get("pm_qos_resume_latency_us") not in (None, "0", "n/a")]
    if not deep:
        return None
    evidence = [
        f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{s['index']}: {s['name']}, "
        f"exit latency {s['latency_us']} us, enabled"
        for cpu, s in deep
    ]
    evidence += [f"cpu{e['cpu']} pm_qos_resume_latency_us: {e['pm_qos_resume_latency_us']}" for e in qos]
    evidence.append(f"cpuidle driver {c.fact('cpuidle.driver')}, governor {c.fact('cpuidle.governor')}")
    knobs = [
        {"knob": f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{s['index']}/disable", "value": "1"} for cpu, s in deep
    ]
    worst = max(s["latency_us"] for _, s in deep)
    return finding(
        "cstates",
        "blocker" if c.budget_ns and worst * 1000 > c.budget_ns else "major",
        evidence,
        f"Waking a CPU from a deep idle state costs up to {worst} us before the real-time task runs.",
        "\n".join(f"echo 1 > {k['knob']}" for k in knobs)
        + "\nor hold /dev/cpu_dma_latency open with 0 in the application (rtqual's probes do), or PM QoS per CPU: "
        f"echo {limit_us} > /sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us",
        True,
        "grep . /sys/devices/system/cpu/cpu*/cpuidle/state*/disable",
        knobs=knobs,
        persistent={
            "cmdline": ["intel_idle.max_cstate=1", "processor.max_cstate=1"],
            "tuned": [f"cpu:force_latency={limit_us}"],
        },
        effect_ns=worst * 1000,
    )


def smt(c: Context) -> dict | None:
    """Hyper-threads: an RT CPU whose sibling is online shares its core."""
    siblings = {e["cpu"]: e.get("siblings") for e in c.per_cpu}
    shared = [(cpu, siblings[cpu]) for cpu in c.cpus if len(cpus_of(siblings.get(cpu)) or []) > 1]
    if not shared:
        return None
    others = sorted({s for cpu, text in shared for s in cpus_of(text) or [] if s != cpu and s not in c.cpus})
    return finding(
        "smt",
        "major",
        [f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list: {text}" for cpu, text in shared],
        "Two hyper-threads share one core's execution units and caches, so whatever runs on the sibling slows "
        "the real-time task by a varying amount.",
        "".join(f"echo 0 > /sys/devices/system/cpu/cpu{s}/online\n" for s in others)
        + "or at boot: nosmt on the kernel command line",
        True,
        "cat /sys/devices/system/cpu/smt/active (prints 0) or the siblings lists hold one CPU",
        persistent={"cmdline": ["nosmt"]},
    )


def timer_migration(c: Context) -> dict | None:
    """timer_migration on: timers of idle CPUs move to busy ones, the RT CPUs among them."""
    if c.fact("sched.timer_migration") != 1:
        return None
    return sysctl_finding(
        "timer-migration",
        "minor",
        ["/proc/sys/kernel/timer_migration: 1"],
        "With timer migration, timers armed on other CPUs may expire on a real-time CPU and run there.",
        "kernel.timer_migration",
        "0",
    )


def watchdog(c: Context) -> dict | None:
    """The soft-lockup and NMI watchdogs on the RT CPUs."""
    w = c.tun.get("watchdog") or {}
    on = [name for name in ("nmi_watchdog", "soft_watchdog") if w.get(name) == 1]
    if w.get("watchdog") != 1 or not on or (w.get("cpumask") and not _covers(w["cpumask"], c.cpus)):
        return None
    return finding(
        "watchdog",
        "minor",
        [f"/proc/sys/kernel/{name}: {w.get(name)}" for name in ("watchdog", *on)]
        + [f"/proc/sys/kernel/watchdog_cpumask: {w.get('cpumask')}"],
        "The lockup watchdogs run a timer and a highest-priority thread (the NMI one a perf interrupt) on every "
        "CPU they watch, interrupting the real-time task periodically.",
        "sysctl -w kernel.watchdog=0\nor keep it on the others: "
        + sh("sysctl", "-w", f"kernel.watchdog_cpumask={c.hk or 0}"),
        True,
        "sysctl kernel.watchdog (prints 0)",
        knobs=[{"knob": "/proc/sys/kernel/watchdog", "value": "0"}],
        persistent={
            "sysctl": ["kernel.watchdog = 0"],
            "cmdline": ["nowatchdog", "nmi_watchdog=0"],
        },
    )


def thp(c: Context) -> dict | None:
    """Transparent huge pages always, KSM, NUMA balancing and swap: memory work that stalls tasks."""
    m = c.tun.get("memory") or {}
    evidence, lines, knobs, sysctl = [], [], [], []
    if m.get("thp") == "always":
        evidence.append("/sys/kernel/mm/transparent_hugepage/enabled: [always]")
        lines.append("echo never > /sys/kernel/mm/transparent_hugepage/enabled")
        knobs.append({"knob": "/sys/kernel/mm/transparent_hugepage/enabled", "value": "never"})
    if m.get("ksm_run") == 1:
        evidence.append("/sys/kernel/mm/ksm/run: 1")
        lines.append("echo 0 > /sys/kernel/mm/ksm/run")
        knobs.append({"knob": "/sys/kernel/mm/ksm/run", "value": "0"})
    if c.fact("sched.numa_balancing"):
        evidence.append(f"/proc/sys/kernel/numa_balancing: {c.fact('sched.numa_balancing')}")
        lines.append("sysctl -w kernel.numa_balancing=0")
        knobs.append({"knob": "/proc/sys/kernel/numa_balancing", "value": "0"})
        sysctl.append("kernel.numa_balancing = 0")
    if m.get("swaps"):
        evidence.append(f"/proc/swaps: {', '.join(m['swaps'])} (swappiness {m.get('swappiness')})")
        lines.append("swapoff -a (and remove the swap lines of /etc/fstab), or mlockall() in the application")
    if not evidence:
        return None
    return finding(
        "thp",
        "minor",
        evidence,
        "Huge-page compaction, page merging, NUMA page migration and swap-in make a task's memory access wait "
        "for the kernel at unpredictable moments.",
        "\n".join(lines),
        True,
        "cat /sys/kernel/mm/transparent_hugepage/enabled ([never] or [madvise]); sysctl kernel.numa_balancing; "
        "swapon --show",
        knobs=knobs,
        persistent={"sysctl": sysctl, "cmdline": ["transparent_hugepage=never"] if m.get("thp") == "always" else []},
    )


def workqueue(c: Context) -> dict | None:
    """The unbound workqueue cpumask includes RT CPUs."""
    mask = c.tun.get("workqueue_cpumask")
    if not c.hk or not _mask_covers(mask, c.cpus):
        return None
    value = _mask_hex(c.housekeeping)
    return finding(
        "workqueue",
        "minor",
        [f"/sys/devices/virtual/workqueue/cpumask: {mask}"],
        "Unbound kernel work items (writeback, crypto, network) may run on a real-time CPU.",
        f"echo {value} > /sys/devices/virtual/workqueue/cpumask",
        True,
        f"cat /sys/devices/virtual/workqueue/cpumask (prints {value})",
        knobs=[{"knob": "/sys/devices/virtual/workqueue/cpumask", "value": value}],
        persistent={"cmdline": [f"workqueue.unbound_cpus={c.hk}"], "tuned": [f"variables:isolated_cores={c.rt}"]},
    )


def rt_tasks(c: Context) -> dict | None:
    """Other real-time threads at or above the application's priority that may run on its CPUs."""
    found = [
        t
        for t in c.tasks
        if t["rt_priority"] >= c.priority and _on(t, c.cpus) and not t["comm"].startswith(("irq/", *PER_CPU_KTHREADS))
    ]
    if not found:
        return None
    evidence = [
        f"{t['comm']} (pid {t['pid']}, tid {t['tid']}): {t['policy'].upper()} {t['rt_priority']}, CPUs {t['cpus']}"
        for t in found[:12]
    ]
    first = found[0]
    return finding(
        "rt-tasks",
        "major",
        evidence,
        f"A thread at priority {first['rt_priority']} on the same CPU runs before an application at {c.priority} "
        "for as long as it wants.",
        "\n".join(
            sh("taskset", "-a", "-p", "-c", c.hk, t["pid"]) if c.hk else sh("chrt", "-o", "-p", 0, t["pid"])
            for t in found[:12]
        ),
        True,
        "ps -eLo pid,tid,cls,rtprio,psr,comm --sort=-rtprio | head",
    )


def rt_limits(c: Context) -> dict | None:
    """Whether the application may take SCHED_FIFO at its priority and lock its memory."""
    caps = c.fact("privileges.capabilities")
    limits = c.tun.get("self_limits") or {}
    rtprio = (limits.get("rtprio") or {}).get("soft")
    memlock = (limits.get("memlock_bytes") or {}).get("soft")
    if rtprio is None:
        rtprio = c.fact("limits.rtprio.soft")
        memlock = c.fact("limits.memlock_bytes.soft")
    nice = caps is not None and "CAP_SYS_NICE" in caps
    lock = caps is not None and "CAP_IPC_LOCK" in caps
    prio_ok = nice or rtprio == UNLIMITED or (isinstance(rtprio, int) and rtprio >= c.priority)
    lock_ok = lock or memlock == UNLIMITED
    if prio_ok and lock_ok:
        return None
    evidence = [
        f"/proc/self/limits: rtprio {rtprio}, memlock {memlock}",
        f"capabilities: {'CAP_SYS_NICE ' if nice else ''}{'CAP_IPC_LOCK' if lock else ''}".strip(),
    ]
    return finding(
        "rt-limits",
        "blocker" if not prio_ok else "major",
        evidence,
        f"Without rtprio {c.priority} (or CAP_SYS_NICE) the application cannot be SCHED_FIFO at all, and without "
        "a memlock limit it cannot lock its memory, so page faults land in its loop.",
        f"/etc/security/limits.d/99-realtime.conf: '@realtime - rtprio {c.priority}' and "
        "'@realtime - memlock unlimited' "
        "(then add the user to group realtime and log in again); for a service, in its unit: LimitRTPRIO=99 "
        "LimitMEMLOCK=infinity (or AmbientCapabilities=CAP_SYS_NICE CAP_IPC_LOCK)",
        False,
        "ulimit -r; ulimit -l (in a new login shell of that user); or grep -E 'realtime|locked' /proc/PID/limits",
    )


def clocksource(c: Context) -> dict | None:
    """A clocksource that is slow to read (hpet, acpi_pm, kvm-clock's fallbacks)."""
    current, available = c.fact("clocksource.current"), c.fact("clocksource.available") or []
    if current is None or current in GOOD_CLOCKSOURCES or current == "kvm-clock":
        return None
    better = next((name for name in GOOD_CLOCKSOURCES if name in available), None)
    base = "/sys/devices/system/clocksource/clocksource0"
    return finding(
        "clocksource",
        "major" if better else "minor",
        [f"{base}/current_clocksource: {current}", f"{base}/available_clocksource: {' '.join(available)}"],
        f"Reading the {current} clock takes microseconds, so every timestamp and timer costs that much.",
        f"echo {better} > {base}/current_clocksource"
        if better
        else "no faster clocksource on this host: check the firmware's TSC settings",
        better is not None,
        f"cat {base}/current_clocksource",
        knobs=[{"knob": f"{base}/current_clocksource", "value": better}] if better else [],
        persistent={"cmdline": [f"clocksource={better}"] + (["tsc=reliable"] if better == "tsc" else [])}
        if better
        else {},
    )


def virtualized(c: Context) -> dict | None:
    """A guest: what cannot be tuned from inside."""
    if not c.fact("virtualization.virtualized"):
        return None
    v = c.fact("virtualization") or {}
    evidence = [
        f"{k}: {v[k]}"
        for k in (
            "systemd_detect_virt_vm",
            "cpuinfo_hypervisor_flag",
            "hypervisor_type",
            "dmi_sys_vendor",
            "dmi_product_name",
        )
        if v.get(k) not in (None, "")
    ]
    return finding(
        "virtualized",
        "major",
        evidence,
        "In a virtual machine the hypervisor decides when a vCPU runs, so host interrupts, host tasks and "
        "other guests add latency that no setting inside the guest can remove.",
        "on the host: pin each vCPU thread to its own isolated host CPU (libvirt <vcpupin>, or taskset -p -c N "
        "on the vCPU threads), give them SCHED_FIFO (chrt -f -p 1 TID), run the host on PREEMPT_RT with "
        "isolcpus/nohz_full for those CPUs, and disable host C-states; or measure on bare metal",
        False,
        "rtqual run timer on the guest before and after (the max falls) and rtqual advise on the host",
    )


def rpi(c: Context) -> dict | None:
    """Raspberry Pi: throttling flags of the firmware, and a frequency the firmware may change."""
    pi = c.tun.get("rpi")
    if not isinstance(pi, dict):
        return None
    flags = parse_throttled(str(pi.get("throttled") or "0")) or 0
    meaning = [text for bit, text in RPI_FLAGS.items() if flags >> bit & 1]
    config: dict = pi["config"] if isinstance(pi.get("config"), dict) else {}
    config_file = next((p for p in RPI_CONFIGS if p == pi.get("config_file")), RPI_CONFIG)
    turbo = str(config.get("force_turbo", "0")) == "1"
    if not meaning and turbo:
        return None
    evidence = [f"{pi['model']}: get_throttled {pi.get('throttled')}" + (f" ({'; '.join(meaning)})" if meaning else "")]
    evidence.append(
        f"{pi.get('config_file') or 'no config.txt'}: "
        + (", ".join(f"{k}={v}" for k, v in config.items()) or "no frequency settings")
    )
    if whole(pi.get("temp_mc"), -(10**6), 10**6) is not None:
        evidence.append(f"/sys/class/thermal/thermal_zone0/temp: {pi['temp_mc'] / 1000:.1f} C")
    now = flags & ((1 << len(RPI_THROTTLED_BITS)) - 1)
    under_voltage = flags & (1 | RPI_UNDER_VOLTAGE_SINCE_BOOT)
    return finding(
        "rpi",
        "blocker" if now or under_voltage else "major" if meaning else "minor",
        evidence,
        "The firmware lowers the ARM clock on under-voltage or heat, behind the kernel's back, so the same work "
        "takes longer at unpredictable times; an under-voltage since boot says the power supply cannot carry "
        "the load.",
        (
            "a power supply of the rated current (the official 5.1 V 3 A supply for a Pi 4; 5 A for a Pi 5) "
            "and a short cable; "
            if under_voltage or not meaning
            else ""
        )
        + "cooling: a heatsink and a fan (or a case that is one), and air around the board; then in "
        f"{config_file}: force_turbo=1 (a fixed ARM frequency)",
        False,
        "after a reboot (the since-boot flags stay until then): vcgencmd get_throttled prints throttled=0x0 after a "
        "long run under load; vcgencmd measure_clock arm",
    )


CHECKS: dict[str, Callable[[Context], dict | None]] = {
    "preempt-model": preempt_model,
    "isolcpus": isolcpus,
    "irq-affinity": irq_affinity,
    "irq-thread-priority": irq_thread_priority,
    "rt-throttling": rt_throttling,
    "governor": governor,
    "cstates": cstates,
    "smt": smt,
    "timer-migration": timer_migration,
    "watchdog": watchdog,
    "thp": thp,
    "workqueue": workqueue,
    "rt-tasks": rt_tasks,
    "rt-limits": rt_limits,
    "clocksource": clocksource,
    "virtualized": virtualized,
    "rpi": rpi,
}

"""`rtqual advise`: what to change on this host for real-time work, as findings with their exact fix.

Pure functions from host facts (rtqual.measure.host.facts: collect() and tuning(), read below a root) to
findings. A finding: id, severity (blocker, major, minor, info), evidence (the files and values read), why
(one sentence), fix (the exact lines to run or install), runtime (can be applied without a reboot), check (how
to see it took). Besides: knobs (the writes `advise --measure` applies for a while: path and value) and
persistent (the fix's sysctl, cmdline and tuned lines, for --emit). Checks that find nothing wrong are listed
as passed. docs/advise.md says what each check reads and why.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

from rtqual.results.facts import UNLIMITED, get_fact
from rtqual.units import format_cpulist, format_ns, parse_kernel_cpulist

SEVERITIES = ("blocker", "major", "minor", "info")
DEFAULT_PRIORITY = 80  # the timer probe's
SHALLOW_CSTATE_US = 10  # an idle state that takes longer than this to leave shows in wake-up latency
GOOD_CLOCKSOURCES = ("tsc", "arch_sys_counter", "riscv_clocksource", "timebase")
PER_CPU_KTHREADS = ("migration/", "cpuhp/", "idle_inject/", "watchdog/", "rcu_preempt", "rcuc/", "rcub/")
RPI_FLAGS = {  # bit -> meaning of the firmware's get_throttled
    0: "under-voltage now",
    1: "ARM frequency capped now",
    2: "throttled now",
    3: "soft temperature limit now",
    16: "under-voltage has occurred",
    17: "ARM frequency capping has occurred",
    18: "throttling has occurred",
    19: "soft temperature limit has occurred",
}
SYSCTL_FILE = "/etc/sysctl.d/90-rtqual.conf"
STATS = ("p50_ns", "p99_ns", "p999_ns", "max_ns")  # what a measured fix is judged on
BASELINE = "baseline"  # the arm of `advise --measure` without a fix


class Context:
    """What every check reads: the facts, the RT CPUs, the housekeeping CPUs, the priority and the budget."""

    def __init__(self, facts: dict, tun: dict, cpus: list[int], priority: int, budget_ns: int | None):
        self.facts, self.tun, self.cpus, self.priority, self.budget_ns = facts, tun, cpus, priority, budget_ns
        online = facts.get("cpu", {}).get("online_cpus") or sorted({e["cpu"] for e in tun.get("per_cpu", [])}) or cpus
        self.online = list(online)
        self.housekeeping = [c for c in self.online if c not in cpus]
        self.rt = format_cpulist(cpus)
        self.hk = format_cpulist(self.housekeeping) if self.housekeeping else None

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
) -> dict:
    """One finding in the shape --json gives."""
    return {
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


def sysctl_finding(fid: str, severity: str, evidence: list[str], why: str, name: str, value: str) -> dict:
    """A finding whose fix is one sysctl: set at run time, checked with `sysctl NAME`, kept in sysctl.d."""
    return finding(
        fid,
        severity,
        evidence,
        why,
        f"sysctl -w {name}={value}",
        True,
        f"sysctl {name} (prints {value})",
        knobs=[{"knob": "/proc/sys/" + name.replace(".", "/"), "value": value}],
        persistent={"sysctl": [f"{name} = {value}"]},
    )


def _mask_hex(cpus: list[int]) -> str:
    """A CPU mask as the kernel writes it (hex, no 0x): [0] -> '1', [0, 1] -> '3'."""
    return format(sum(1 << c for c in cpus), "x")


def _covers(cpulist: str | None, cpus: list[int]) -> list[int]:
    """Which of cpus a kernel CPU list (or mask) text includes."""
    try:
        listed = parse_kernel_cpulist(cpulist) or []
    except ValueError:
        listed = []
    return [c for c in cpus if c in listed]


def _mask_covers(mask: str | None, cpus: list[int]) -> list[int]:
    """Which of cpus a hex CPU mask text ('3', '00000003', 'ff,ffffffff') includes."""
    try:
        value = int((mask or "").replace(",", ""), 16)
    except ValueError:
        return []
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
    )


def isolcpus(c: Context) -> dict | None:
    """The RT CPUs isolated from the scheduler, the tick, RCU callbacks and IRQs."""
    opts = c.fact("cmdline.rt_options") or {}
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
    info = c.tun.get("irqs") or {}
    if not c.hk:
        return None
    on_rt = [q for q in info.get("irqs", []) if _covers(q.get("affinity"), c.cpus)]
    balance = bool(info.get("irqbalance"))
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
    lines = [f"for i in {numbers}; do echo {c.hk} > /proc/irq/$i/smp_affinity_list; done"] if on_rt else []
    if balance:
        lines.insert(
            0, f"echo 'IRQBALANCE_BANNED_CPULIST={c.rt}' >> /etc/default/irqbalance && systemctl restart irqbalance"
        )
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
    tasks = [t for t in c.tun.get("rt_tasks", []) if _on(t, c.cpus)]
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
    return finding(
        "irq-thread-priority",
        "major",
        evidence,
        f"On PREEMPT_RT interrupt handlers are threads: an application at FIFO {c.priority} on the same CPU runs "
        "before them, so the interrupt that brings its own input waits until the application sleeps.",
        f"raise the thread of the application's own device above it, e.g. chrt -f -p {min(c.priority + 1, 99)} "
        f"$(pgrep -x '{first['comm']}'); or run the application below it (FIFO {max(first['rt_priority'] - 1, 1)}); "
        "persistent: a systemd unit or udev rule running the same chrt at boot "
        "(tuna --threads='irq/*-NAME' --priority=FIFO:N)",
        True,
        "ps -eLo tid,cls,rtprio,psr,comm | grep -E 'irq/|ksoftirqd|ktimers'",
    )


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
    per_cpu = {e["cpu"]: e for e in c.fact("cpu.per_cpu") or []}
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
    for entry in c.fact("cpuidle.per_cpu") or []:
        if entry["cpu"] in c.cpus:
            deep += [
                (entry["cpu"], s)
                for s in entry.get("states") or []
                if not s.get("disabled") and (s.get("latency_us") or 0) > limit_us
            ]
    qos = [
        e
        for e in c.tun.get("per_cpu", [])
        if e["cpu"] in c.cpus and e.get("pm_qos_resume_latency_us") not in (None, "0", "n/a")
    ]
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
    )


def smt(c: Context) -> dict | None:
    """Hyper-threads: an RT CPU whose sibling is online shares its core."""
    siblings = {e["cpu"]: e.get("siblings") for e in c.tun.get("per_cpu", [])}
    shared = [
        (cpu, siblings[cpu])
        for cpu in c.cpus
        if siblings.get(cpu) and len(parse_kernel_cpulist(siblings[cpu]) or []) > 1
    ]
    if not shared:
        return None
    others = sorted(
        {s for cpu, text in shared for s in parse_kernel_cpulist(text) or [] if s != cpu and s not in c.cpus}
    )
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
        f"sysctl -w kernel.watchdog=0 (or keep it on the others: sysctl -w kernel.watchdog_cpumask={c.hk or '0'})",
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
        for t in c.tun.get("rt_tasks", [])
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
        "\n".join([f"taskset -a -p -c {c.hk} {t['pid']}" if c.hk else f"chrt -o -p 0 {t['pid']}" for t in found[:12]]),
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
    if not pi:
        return None
    try:
        flags = int(str(pi.get("throttled") or "0"), 16)
    except ValueError:
        flags = 0
    meaning = [text for bit, text in RPI_FLAGS.items() if flags >> bit & 1]
    config = pi.get("config") or {}
    turbo = str(config.get("force_turbo", "0")) == "1"
    if not meaning and turbo:
        return None
    evidence = [f"{pi['model']}: get_throttled {pi.get('throttled')}" + (f" ({'; '.join(meaning)})" if meaning else "")]
    evidence.append(
        f"{pi.get('config_file') or 'no config.txt'}: "
        + (", ".join(f"{k}={v}" for k, v in config.items()) or "no frequency settings")
    )
    if pi.get("temp_mc") is not None:
        evidence.append(f"/sys/class/thermal/thermal_zone0/temp: {pi['temp_mc'] / 1000:.1f} C")
    now = flags & 0xF
    return finding(
        "rpi",
        "blocker" if now else "major" if meaning else "minor",
        evidence,
        "The firmware lowers the ARM clock on under-voltage or heat, behind the kernel's back, so the same work "
        "takes longer at unpredictable times.",
        "a power supply of the rated current (5 V 3 A; 5 A for a Pi 5) and a heatsink or fan; in "
        f"{pi.get('config_file') or '/boot/firmware/config.txt'}: force_turbo=1 (a fixed ARM frequency)",
        False,
        "vcgencmd get_throttled (prints throttled=0x0 after a long run under load); vcgencmd measure_clock arm",
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


# ---------------------------------------------------------------- the settings the checks read, as values


def _per_cpu_text(values: Mapping[int, str | None]) -> str | None:
    """One value per CPU in words: 'performance' when all agree, else '0 performance; 1-3 powersave'."""
    known = {cpu: v for cpu, v in values.items() if v is not None}
    if not known:
        return None
    groups: dict[str, list[int]] = {}
    for cpu, v in sorted(known.items()):
        groups.setdefault(v, []).append(cpu)
    return next(iter(groups)) if len(groups) == 1 else "; ".join(f"{format_cpulist(c)} {v}" for v, c in groups.items())


def _word(value: Any, none: str = "none") -> str | None:
    """A recorded value as compare shows it: None stays None (not recorded), '' and 'absent' become `none`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value) if str(value) != "" else none


def _cmdline_setting(key: str) -> Callable[[Context], str | None]:
    """A kernel command line word's value ('none' where absent, None where the command line was not read)."""

    def read(c: Context) -> str | None:
        opts = c.fact("cmdline.rt_options")
        return None if not isinstance(opts, dict) else "none" if opts.get(key) is None else _word(opts[key])

    return read


def _governors(c: Context) -> str | None:
    per = c.fact("cpu.per_cpu") or []
    return _per_cpu_text({e["cpu"]: e.get("governor") or "none" for e in per}) if per else None


def _idle_states_text(c: Context) -> str | None:
    per = c.fact("cpuidle.per_cpu")
    if per is None:
        return None
    enabled = {
        e["cpu"]: ",".join(str(s.get("name")) for s in e.get("states") or [] if not s.get("disabled")) or "none"
        for e in per
    }
    return _per_cpu_text(enabled) or "none"


def _watchdog_text(c: Context) -> str | None:
    w = c.tun.get("watchdog")
    if not w or w.get("watchdog") is None:
        return None
    return " ".join(f"{k}={w.get(k)}" for k in ("watchdog", "nmi_watchdog", "soft_watchdog")) + (
        f" cpumask={w['cpumask']}" if w.get("cpumask") else ""
    )


def _swap_text(c: Context) -> str | None:
    m = c.tun.get("memory")
    return None if m is None else (", ".join(m.get("swaps") or []) or "off")


def _irqbalance_text(c: Context) -> str | None:
    running = (c.tun.get("irqs") or {}).get("irqbalance")
    return None if running is None else "running" if running else "not running"


# setting -> (the check that reads it, its value from the recorded facts; None where not recorded)
SETTINGS: dict[str, tuple[str, Callable[[Context], str | None]]] = {
    "isolcpus": ("isolcpus", _cmdline_setting("isolcpus")),
    "nohz_full": ("isolcpus", _cmdline_setting("nohz_full")),
    "rcu_nocbs": ("isolcpus", _cmdline_setting("rcu_nocbs")),
    "irqaffinity": ("isolcpus", _cmdline_setting("irqaffinity")),
    "threadirqs": ("irq-thread-priority", _cmdline_setting("threadirqs")),
    "irqbalance": ("irq-affinity", _irqbalance_text),
    "rt-throttling": ("rt-throttling", lambda c: _word(c.fact("sched.rt_runtime_us"))),
    "governor": ("governor", _governors),
    "boost": ("governor", lambda c: _word(c.tun.get("boost"))),
    "idle states": ("cstates", _idle_states_text),
    "smt": ("smt", lambda c: _word(c.fact("cpu.smt_active"))),
    "timer-migration": ("timer-migration", lambda c: _word(c.fact("sched.timer_migration"))),
    "watchdog": ("watchdog", _watchdog_text),
    "thp": ("thp", lambda c: _word((c.tun.get("memory") or {}).get("thp"))),
    "ksm": ("thp", lambda c: _word((c.tun.get("memory") or {}).get("ksm_run"))),
    "numa-balancing": ("thp", lambda c: _word(c.fact("sched.numa_balancing"))),
    "swap": ("thp", _swap_text),
    "workqueue": ("workqueue", lambda c: _word(c.tun.get("workqueue_cpumask"))),
    "clocksource": ("clocksource", lambda c: _word(c.fact("clocksource.current"))),
}


def settings(facts: dict | None, tun: dict | None) -> dict[str, str]:
    """The tunable settings the checks read, as {setting: value} from recorded host facts (a bundle's
    facts-before and tuning-before); a setting not recorded is left out. `rtqual compare` names those that
    differ between bundles."""
    if not isinstance(facts, dict):
        return {}
    c = Context(facts, tun if isinstance(tun, dict) else {}, [0], DEFAULT_PRIORITY, None)
    values = {name: read(c) for name, (_, read) in SETTINGS.items()}
    return {name: v for name, v in values.items() if v is not None}


def measurable(findings: list[dict]) -> list[dict]:
    """The findings whose fix can be applied at run time and written by rtqual (they have knobs)."""
    return [f for f in findings if f["runtime"] and f["knobs"]]


def _arm_of(case_id: str) -> tuple[str, int] | None:
    """(arm, round) from a case id NNN-rR-ARM, or None."""
    parts = case_id.split("-", 2)
    if len(parts) != 3 or not parts[1].startswith("r") or not parts[1][1:].isdigit():
        return None
    return parts[2], int(parts[1][1:])


def rounds_by_arm(cases: list[dict]) -> dict[str, list[dict]]:
    """arm -> the statistics of its rounds that measured something, in round order, each with the changes
    that did not apply."""
    out: dict[str, list[dict]] = {}
    for c in cases:
        arm = _arm_of(str(c.get("id", "")))
        stats = c.get("stats") or {}
        if arm is None or not stats.get("count"):
            continue
        changes = (c.get("conditions") or {}).get("changes") or []
        out.setdefault(arm[0], []).append(
            {
                "round": arm[1],
                "case": c["id"],
                **{k: stats.get(k) for k in STATS},
                "not_applied": sum(1 for r in changes if r.get("applied") is False),
                "applied": sum(1 for r in changes if r.get("applied") is True),
            }
        )
    return out


def _summary(rounds: list[dict]) -> dict:
    """Each statistic's median over rounds and its spread (max - min over rounds)."""
    out: dict[str, Any] = {}
    for k in STATS:
        values = [r[k] for r in rounds if r.get(k) is not None]
        out[k] = round(statistics.median(values)) if values else None
        out[k.removesuffix("_ns") + "_spread_ns"] = (max(values) - min(values)) if values else None
    return out


def effect(before: list[dict], after: list[dict]) -> tuple[str, dict]:
    """The verdict of one fix and each statistic's change: 'better' when a statistic moved down by more than
    the two arms' spreads together and none moved up that way, 'worse' the other way round, 'mixed' for both,
    else 'no measurable effect'. Fewer than two rounds a side: 'not enough rounds'."""
    if len(before) < 2 or len(after) < 2:
        return "not enough rounds", {}
    b, a = _summary(before), _summary(after)
    change, down, up = {}, False, False
    for k in STATS:
        if b[k] is None or a[k] is None:
            continue
        name = k.removesuffix("_ns")
        delta = a[k] - b[k]
        noise = b[f"{name}_spread_ns"] + a[f"{name}_spread_ns"]
        change[name] = {"delta_ns": delta, "noise_ns": noise, "measurable": abs(delta) > noise}
        down |= delta < 0 and abs(delta) > noise
        up |= delta > 0 and abs(delta) > noise
    verdict = "mixed" if down and up else "better" if down else "worse" if up else "no measurable effect"
    return verdict, {k: v for k, v in change.items() if v["measurable"]} if verdict != "no measurable effect" else {}


def effects(model_cases: list[dict], findings: list[dict]) -> list[dict]:
    """The "measured" list of --json: per measured fix its before and after (median and spread of each
    statistic over rounds), the effect, the changes, the rounds, and how many of its writes applied."""
    arms = rounds_by_arm(model_cases)
    base = arms.get(BASELINE, [])
    out = []
    for f in measurable(findings):
        after = arms.get(f["id"], [])
        verdict, change = effect(base, after)
        applied = {r["applied"] for r in after}
        out.append(
            {
                "id": f["id"],
                "before": _summary(base) if base else None,
                "after": _summary(after) if after else None,
                "effect": verdict if not after or max(applied) else "not applied",
                "change": change,
                "rounds": min(len(base), len(after)),
                "writes_not_applied": max((r["not_applied"] for r in after), default=0),
            }
        )
    return out


def profile_budget_ns(profile: str | None) -> int | None:
    """The tightest latency limit (ns) of a requirement profile, which sets how deep an idle state may be."""
    if not profile:
        return None
    from rtqual.answers.requirements import profile as requirements_of

    limits = [int(r.limit) for r in requirements_of(profile) if r.unit == "ns"]
    return min(limits) if limits else None


def bundle_advice(
    plan: dict | None, facts: dict | None, tun: dict | None, cases: list[dict]
) -> tuple[list[dict], list[dict]]:
    """What to change for a bundle's host, and the measured effects: the findings `advise --measure` kept in
    its plan with the effects of its rounds, else the checks over the host facts the run recorded."""
    kept = (plan or {}).get("advise") if isinstance(plan, dict) else None
    if isinstance(kept, dict) and isinstance(kept.get("findings"), list):
        return kept["findings"], effects(cases, kept["findings"])
    if not isinstance(facts, dict):
        return [], []
    return advise(facts, tun if isinstance(tun, dict) else {})["findings"], []


def default_cpus(facts: dict, tun: dict) -> list[int]:
    """The CPUs that will run real-time work when --cpus is not given: the isolated ones, else every online CPU
    but the first (the first alone on a one-CPU host)."""
    isolated = parse_kernel_cpulist(facts.get("cpu", {}).get("isolated") or None) or []
    online = facts.get("cpu", {}).get("online_cpus") or [e["cpu"] for e in tun.get("per_cpu", [])] or [0]
    return isolated or online[1:] or online[:1]


def advise(
    facts: dict, tun: dict, cpus: list[int] | None = None, priority: int | None = None, budget_ns: int | None = None
) -> dict:
    """Every check over the host facts: {"cpus", "priority", "findings" (blockers first), "passed" (ids)}."""
    cpus = cpus or default_cpus(facts, tun)
    c = Context(facts, tun, cpus, priority or DEFAULT_PRIORITY, budget_ns)
    findings, passed = [], []
    for name, check in CHECKS.items():
        f = check(c)
        if f is None:
            passed.append(name)
        else:
            findings.append(f)
    return {"cpus": format_cpulist(cpus), "priority": c.priority, "findings": ranked(findings), "passed": passed}


def ranked(findings: list[dict]) -> list[dict]:
    """Findings blockers first (stable within a severity)."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f["severity"]))


def effect_text(m: dict) -> str:
    """One line of a measured effect: 'p99 -12.0us (spread 3.1us), max -40us ...' or 'no measurable effect'."""
    if m.get("effect") == "no measurable effect" or not m.get("change"):
        return f"no measurable effect ({m.get('rounds')} rounds)"
    parts = [
        f"{stat} {'+' if d['delta_ns'] > 0 else '-'}{format_ns(abs(d['delta_ns']))}" for stat, d in m["change"].items()
    ]
    return f"{m['effect']}: " + ", ".join(parts) + f" ({m.get('rounds')} rounds)"


def text(result: dict, measured: list[dict] | None = None) -> str:
    """The findings as text, blockers first: id, severity, why, evidence, fix, check (and the measured effect)."""
    by_id = {m["id"]: m for m in measured or []}
    lines = [f"rtqual advise: real-time CPUs {result['cpus']}, application priority {result['priority']}"]
    if not result["findings"]:
        lines.append("nothing to change")
    for f in result["findings"]:
        lines += ["", f"[{f['severity']}] {f['id']}: {f['why']}"]
        lines += [f"  evidence: {e}" for e in f["evidence"]]
        fix_lines = f["fix"].splitlines()
        lines += [f"  fix{' (at run time)' if f['runtime'] else ' (needs a reboot or the host)'}: {fix_lines[0]}"]
        lines += [f"       {line}" for line in fix_lines[1:]]
        lines.append(f"  check: {f['check']}")
        if f["id"] in by_id:
            lines.append(f"  measured: {effect_text(by_id[f['id']])}")
    lines += ["", f"passed: {', '.join(result['passed']) or '-'}"]
    return "\n".join(lines)


def what_to_change(findings: list[dict], measured: list[dict] | None = None) -> list[str]:
    """The 'What to change' lines of a report: blockers first, one line a finding, with its measured effect."""
    by_id = {m["id"]: m for m in measured or []}
    out = []
    for f in sorted(findings, key=lambda f: SEVERITIES.index(f["severity"])):
        line = f"[{f['severity']}] {f['id']}: {f['fix'].splitlines()[0]}"
        if f["id"] in by_id:
            line += f" — measured: {effect_text(by_id[f['id']])}"
        out.append(line)
    return out


def emit(findings: list[dict], measured: list[dict], form: str) -> str:
    """The persistent form (tuned, sysctl or cmdline) of the fixes that helped (measured effect 'better');
    without a measurement, of every finding."""
    helped = {m["id"] for m in measured if m.get("effect") == "better"} if measured else {f["id"] for f in findings}
    chosen = [f for f in findings if f["id"] in helped]
    words = [w for f in chosen for w in f["persistent"].get(form, [])]
    if form == "cmdline":
        return " ".join(dict.fromkeys(words)) + "\n"
    if form == "sysctl":
        return f"# {SYSCTL_FILE} (then: sysctl --system)\n" + "\n".join(dict.fromkeys(words)) + "\n"
    sections: dict[str, list[str]] = {}
    for f in chosen:
        for entry in [
            *f["persistent"].get("tuned", []),
            *("sysctl:" + w.replace(" = ", "=") for w in f["persistent"].get("sysctl", [])),
        ]:
            section, _, line = entry.partition(":")
            sections.setdefault(section, []).append(line)
        sections.setdefault("bootloader", [])
    cmdline = " ".join(dict.fromkeys(w for f in chosen for w in f["persistent"].get("cmdline", [])))
    base = "realtime" if "variables" in sections else "latency-performance"
    out = ["# /etc/tuned/rtqual/tuned.conf (then: tuned-adm profile rtqual)", "[main]", f"include={base}"]
    for section, lines in sections.items():
        lines = list(dict.fromkeys(lines)) + (
            [f"cmdline_rtqual={cmdline}"] if section == "bootloader" and cmdline else []
        )
        if lines:
            out += [f"[{section}]", *lines]
    return "\n".join(out) + "\n"

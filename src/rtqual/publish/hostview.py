"""The host facts seen as rows (`rtqual host`, the HTML report's Host table): a pure function of a
host facts collection, shared by the text and HTML reports."""

from __future__ import annotations

from typing import Any

from rtqual.results.facts import UNLIMITED, get_fact
from rtqual.units import format_cpulist

RT_CAPS = ("CAP_SYS_NICE", "CAP_IPC_LOCK", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN", "CAP_SYS_RAWIO", "CAP_NET_ADMIN")
"""The capabilities a real-time measurement may need, shown in the Privileges row."""


def _or(value: Any, missing: str = "unknown") -> str:
    """A value for the table, with a word for None."""
    return missing if value is None else str(value)


def _group_cpus(values: dict[int, str]) -> str:
    """{cpu: text} -> 'text (all)' or 'a (cpu 0-1); b (cpu 2)'."""
    if not values:
        return "unknown"
    groups: dict[str, list[int]] = {}
    for cpu, text in sorted(values.items()):
        groups.setdefault(text, []).append(cpu)
    if len(groups) == 1:
        return f"{next(iter(groups))} (all)"
    return "; ".join(f"{text} (cpu {format_cpulist(cpus)})" for text, cpus in groups.items())


def _governor_row(facts: dict) -> str:
    """Governor and current frequency per CPU, identical values merged."""
    per_cpu = get_fact(facts, "cpu.per_cpu") or []
    if per_cpu and all(e.get("governor") is None and e.get("reason") for e in per_cpu):
        reasons = sorted({e["reason"] for e in per_cpu})
        return f"not available ({', '.join(reasons)})"
    values = {}
    for e in per_cpu:
        khz = e.get("scaling_cur_freq_khz")
        freq = f"{khz / 1000:.0f} MHz" if isinstance(khz, int) else "? MHz"
        values[e.get("cpu")] = f"{_or(e.get('governor'), '?')}, {freq}"
    return _group_cpus(values)


def _freq_range_row(facts: dict) -> str | None:
    """The cpufreq limits per CPU: the scaling range the governor may use within the hardware's, identical values
    merged; None without cpufreq."""
    values = {}
    for e in get_fact(facts, "cpu.per_cpu") or []:
        lo, hi = e.get("scaling_min_freq_khz"), e.get("scaling_max_freq_khz")
        if isinstance(lo, int) and isinstance(hi, int):
            hw_lo, hw_hi = e.get("cpuinfo_min_freq_khz"), e.get("cpuinfo_max_freq_khz")
            known = isinstance(hw_lo, int) and isinstance(hw_hi, int)
            hw = f" of {hw_lo / 1000:.0f}-{hw_hi / 1000:.0f}" if known else ""
            values[e.get("cpu")] = f"{lo / 1000:.0f}-{hi / 1000:.0f}{hw} MHz"
    return _group_cpus(values) if values else None


def _rpi_rows(facts: dict) -> list[tuple[str, str]]:
    """A Raspberry Pi's firmware state and its cmdline.txt (no rows on other boards)."""
    pi = get_fact(facts, "rpi")
    if not isinstance(pi, dict):
        return []
    t = pi.get("throttled") if isinstance(pi.get("throttled"), dict) else None
    if t is None:
        state = "throttled flags unreadable (no get_throttled file, no vcgencmd)"
    else:
        now, since = t.get("now") or [], t.get("since_boot") or []
        state = (
            f"get_throttled {t.get('flags_hex')}: now {', '.join(now) or 'nothing'}; "
            f"since boot {', '.join(since) or 'nothing'}"
        )
    temp = pi.get("soc_temp_c")
    state += f"; SoC {temp:g} °C" if isinstance(temp, int | float) else ""
    rows = [("Raspberry Pi firmware", f"{_or(pi.get('model'))}: {state}")]
    cmdline = pi.get("firmware_cmdline") if isinstance(pi.get("firmware_cmdline"), dict) else None
    rows.append(
        ("Firmware cmdline", f"{cmdline.get('path')}: {_or(cmdline.get('text'), 'unreadable')}" if cmdline else "none")
    )
    return rows


def _preempt_row(facts: dict) -> str:
    """Model, its source and, for a dynamic kernel, the current mode."""
    p = get_fact(facts, "preempt") or {}
    text = f"{_or(p.get('model'))} (from {_or(p.get('model_source'))})"
    if p.get("model") == "PREEMPT_DYNAMIC":
        mode = p.get("dynamic_mode")
        text += f", mode {mode}" if mode else ", current mode unreadable (debugfs)"
    if p.get("cmdline_preempt") is not None:
        text += f", preempt={p['cmdline_preempt']} on cmdline"
    return text


def _cmdline_row(facts: dict) -> str:
    """The RT options present on the command line."""
    opts = get_fact(facts, "cmdline.rt_options") or {}
    words = [
        key if value is True else f"{key}={value}"
        for key, value in opts.items()
        if value is not None and value is not False
    ]
    return " ".join(words) if words else "none"


def _online_row(facts: dict) -> str:
    """Online CPUs against possible, SMT and isolation."""
    cpu = get_fact(facts, "cpu") or {}
    online = cpu.get("online_cpus")
    text = (
        f"{_or(cpu.get('online'))} ({len(online) if online is not None else '?'} of "
        f"{_or(cpu.get('possible_count'), '?')} possible)"
    )
    smt = cpu.get("smt_active")
    text += ", SMT " + {True: "active", False: "off", None: "unknown"}[smt]
    if cpu.get("isolated"):
        text += f", isolated {cpu['isolated']}"
    if cpu.get("nohz_full"):
        text += f", nohz_full {cpu['nohz_full']}"
    return text


def _cpuidle_row(facts: dict) -> str:
    """Driver, governor and the states of the first CPU with their exit latency."""
    idle = get_fact(facts, "cpuidle") or {}
    text = f"{_or(idle.get('driver'))} / {_or(idle.get('governor'))}"
    per_cpu = idle.get("per_cpu") or []
    if per_cpu and per_cpu[0].get("states"):
        states = [
            f"{s.get('name')} {_or(s.get('latency_us'), '?')}us" + (" (disabled)" if s.get("disabled") else "")
            for s in per_cpu[0]["states"]
        ]
        text += f"; cpu{per_cpu[0].get('cpu')}: " + ", ".join(states)
    return text


def _virt_row(facts: dict) -> str:
    """Virtualised or not, and what says so."""
    v = get_fact(facts, "virtualization") or {}
    word = {True: "yes", False: "no", None: "unknown"}[v.get("virtualized")]
    details = [
        x
        for x in (v.get("systemd_detect_virt_vm"), v.get("hypervisor_type"), v.get("dmi_product_name"))
        if x and x != "none"
    ]
    if v.get("systemd_detect_virt_container") not in (None, "none"):
        details.append(f"container {v['systemd_detect_virt_container']}")
    return word + (f" ({', '.join(details)})" if details else "")


def _throttling_row(facts: dict) -> str:
    """Whether RT tasks are throttled and to what share of each period."""
    runtime, period = get_fact(facts, "sched.rt_runtime_us"), get_fact(facts, "sched.rt_period_us")
    if runtime is None:
        text = "unknown"
    elif runtime < 0:
        text = "off (sched_rt_runtime_us = -1)"
    elif period:
        text = f"on: RT tasks get at most {100 * runtime / period:.0f}% of each {period} us"
    else:
        text = "on"
    fair_rt, fair_period = (
        get_fact(facts, "sched.fair_server_cpu0_runtime_ns"),
        get_fact(facts, "sched.fair_server_cpu0_period_ns"),
    )
    if fair_rt is not None and fair_period:
        text += f"; fair server cpu0 {fair_rt} ns per {fair_period} ns"
    return text


def _limit_text(limit: dict | None, scale: int = 1, unit: str = "") -> str:
    """'soft/hard' of one limit."""

    def one(v: Any) -> str:
        if v is None or v == UNLIMITED:
            return _or(v)
        return f"{v // scale}{unit}"

    limit = limit or {}
    return f"{one(limit.get('soft'))}/{one(limit.get('hard'))}"


def _privileges_row(facts: dict) -> str:
    """root or not, the RT-relevant capabilities, and what that allows."""
    p = get_fact(facts, "privileges") or {}
    who = "root" if p.get("root") else f"euid {_or(p.get('euid'))}"
    caps = p.get("capabilities")
    if caps is None:
        cap_text = "capabilities unknown"
    else:
        present = [c for c in RT_CAPS if c in caps]
        missing = [c for c in RT_CAPS if c not in caps]
        cap_text = f"{len(caps)} capabilities: " + (" ".join(present) or "none relevant")
        if missing:
            cap_text += " (missing " + " ".join(missing) + ")"
    yes = {True: "yes", False: "no", None: "unknown"}
    return f"{who}; {cap_text}; SCHED_FIFO {yes[p.get('can_sched_fifo')]}, mlock {yes[p.get('can_mlock')]}"


def _tracefs_row(facts: dict) -> str:
    """Where tracefs is and whether the timerlat tracer exists."""
    d = get_fact(facts, "devices") or {}
    if not d.get("tracefs"):
        return "not mounted"
    tracer = {True: "timerlat available", False: "no timerlat", None: "tracers unreadable"}
    return f"{d['tracefs']} ({tracer[d.get('timerlat')]})"


def _tools_row(facts: dict) -> str:
    """Tool names with versions."""
    parts = []
    for name, value in (get_fact(facts, "tools") or {}).items():
        if isinstance(value, dict):
            version = value.get("version") or value.get("path") or "?"
            parts.append(f"{name} {version}")
        elif value is None:
            parts.append(f"{name} not found")
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts) or "none"


def host_rows(facts: dict) -> list[tuple[str, str]]:
    """(label, value) rows for the human host table; a pure function of a collect() result. The cpufreq range
    and a Raspberry Pi's rows only where the facts have them."""
    k = get_fact(facts, "kernel") or {}
    cpu_model = _or(get_fact(facts, "cpu.model"))
    board = get_fact(facts, "cpu.board")
    if board and board != cpu_model:
        cpu_model += f" ({board})"
    clock = get_fact(facts, "clocksource") or {}
    limits = get_fact(facts, "limits") or {}
    d = get_fact(facts, "devices") or {}
    dma = get_fact(facts, "devices.cpu_dma_latency")
    return [
        ("Kernel", f"{_or(k.get('release'))} {_or(k.get('machine'), '')} {_or(k.get('version'), '')}".strip()),
        ("Preemption", _preempt_row(facts)),
        ("Cmdline RT options", _cmdline_row(facts)),
        ("CPU", cpu_model),
        ("Online CPUs", _online_row(facts)),
        ("Governor/frequency", _governor_row(facts)),
        *([("cpufreq range", freq)] if (freq := _freq_range_row(facts)) else []),
        (
            "Clocksource",
            f"{_or(clock.get('current'))} (available: {' '.join(clock.get('available') or []) or 'unknown'})",
        ),
        ("cpuidle", _cpuidle_row(facts)),
        ("Virtualization", _virt_row(facts)),
        (
            "sched_rt_runtime_us",
            f"{_or(get_fact(facts, 'sched.rt_runtime_us'))} of {_or(get_fact(facts, 'sched.rt_period_us'))} us",
        ),
        ("RT throttling", _throttling_row(facts)),
        (
            "Limits (rtprio/memlock/rttime)",
            f"rtprio {_limit_text(limits.get('rtprio'))}, "
            f"memlock {_limit_text(limits.get('memlock_bytes'), 1024, ' KiB')}, "
            f"rttime {_limit_text(limits.get('rttime_us'), 1, ' us')} (soft/hard)",
        ),
        ("Privileges", _privileges_row(facts)),
        ("cpu_dma_latency", {True: "present", False: "absent", None: "unknown"}[dma]),
        ("tracefs", _tracefs_row(facts)),
        (
            "GPIO/UIO",
            f"gpio: {' '.join(d.get('gpiochips') or []) or 'none'}; uio: {' '.join(d.get('uio') or []) or 'none'}",
        ),
        *_rpi_rows(facts),
        ("Tools", _tools_row(facts)),
    ] + ([("SMI count", _smi_row(facts["smi"]))] if isinstance(facts.get("smi"), dict) else [])  # newer facts only


def _smi_row(smi: dict) -> str:
    """MSR_SMI_COUNT per CPU when the facts were taken, or why it could not be read."""
    counts = smi.get("counts")
    if not isinstance(counts, dict) or not counts:
        return str(smi.get("note") or "not readable")
    return ", ".join(f"cpu{c} {n}" for c, n in sorted(counts.items(), key=lambda kv: int(kv[0])))

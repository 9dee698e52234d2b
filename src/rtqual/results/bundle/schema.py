"""The one door of a bundle's data: every JSON file of a bundle has a schema here (types, ranges, lengths,
enumerations), checked once, where the model reads the file (model.py). A bundle travels, so any field may hold
anything; past this door a reader may trust the type of every field named here.

A schema is a table of plain checks (no dependency, a few microseconds a file). A field that fails is not an
error of the whole file: it is replaced by what a reader already reads as "unknown" (None for a fact or a value,
{} for a section, a list record without its required keys left out), and the model names the file and the field
in one line of damage ("host/facts-before.json: cpu.online_cpus: a str, not a list of CPU numbers, read as
unknown"). So a command does what it can with the rest, and `rtqual verify` names the same line.

    repaired, found = check(FACTS, value)   # found: [(field path, why)], empty when the file is as written
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from typing import Any

from rtqual.units import MAX_CPULIST_CHARS, MAX_CPUS, parse_kernel_cpulist

Found = list[tuple[str, str]]
Fix = Callable[[Any, str, Found], Any]

DROP = object()  # a list record without its required keys: left out of the list
I64 = 1 << 63
MAX_TEXT = 1 << 16  # a free text (a command line, a message): 64 KiB
MAX_NAME = 256  # a name (a host, a thread, an IRQ action, a governor)
MAX_ITEMS = 1 << 16  # a list or mapping of anything but CPUs: 65,536 entries
MAX_IRQ = 1 << 20  # far above any IRQ number a kernel gives
MAX_MASK_CHARS = MAX_CPUS // 4 + MAX_CPUS // 32  # a hex CPU mask with its commas ('ff,ffffffff')
PRIORITY = (0, 99)  # SCHED_FIFO/RR priorities
SHOWN_FIELDS = 3  # fields named in a damage line before "and N more"


def _kind(v: Any) -> str:
    """'a str', 'an int', 'null': how a value that is not what was expected is named."""
    name = "null" if v is None else type(v).__name__
    return name if v is None else ("an " if name[0] in "aeiou" else "a ") + name


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------- the checks


def leaf(test: Callable[[Any], bool], what: str, null: bool = True, empty: Any = None) -> Fix:
    """A value passing test (or None when null): else `empty` (a copy) and the field named."""

    def fix(v: Any, path: str, found: Found) -> Any:
        if (v is None and null) or (v is not None and test(v)):
            return v
        found.append((path, f"{_kind(v)}, not {what}"))
        return copy.copy(empty)

    return fix


def integer(lo: int = 0, hi: int = I64 - 1, null: bool = True) -> Fix:
    return leaf(lambda v: _int(v) and lo <= v <= hi, f"an integer in {lo}..{hi}", null)


def number(lo: float = -math.inf, hi: float = math.inf, null: bool = True) -> Fix:
    """A finite number (JSON's NaN and Infinity are not numbers here) in lo..hi."""
    return leaf(
        lambda v: (_int(v) or isinstance(v, float)) and math.isfinite(v) and lo <= v <= hi,
        f"a finite number in {lo:g}..{hi:g}",
        null,
    )


def text(max_len: int = MAX_NAME, pattern: str | None = None, enum: tuple[str, ...] = (), null: bool = True) -> Fix:
    """A string of at most max_len characters; a name (max_len <= MAX_NAME) holds no control character; with
    pattern it matches it whole, with enum it is one of them."""
    rx = re.compile(pattern) if pattern else None

    def test(v: Any) -> bool:
        if not isinstance(v, str) or len(v) > max_len:
            return False
        if max_len <= MAX_NAME and not v.isprintable():
            return False
        return (rx is None or rx.fullmatch(v) is not None) and (not enum or v in enum)

    what = f"one of {', '.join(enum)}" if enum else f"a {'name' if max_len <= MAX_NAME else 'text'} of <= {max_len}"
    return leaf(test, what, null)


def boolean(null: bool = True) -> Fix:
    return leaf(lambda v: isinstance(v, bool), "true or false", null)


def cpu(null: bool = False) -> Fix:
    return integer(0, MAX_CPUS - 1, null)


def cpu_text(null: bool = True) -> Fix:
    """A CPU list as the kernel writes it ('0-3,8', ''), parsed by the one bounded parser."""
    return leaf(
        lambda v: isinstance(v, str) and len(v) <= MAX_CPULIST_CHARS and parse_kernel_cpulist(v) is not None,
        f"a CPU list of CPUs 0..{MAX_CPUS - 1}",
        null,
    )


def mask(null: bool = True) -> Fix:
    """A hex CPU mask as the kernel writes it ('3', 'ff,ffffffff')."""
    return text(MAX_MASK_CHARS, r"[0-9a-fA-F,]*", null=null)


def cpus(null: bool = True) -> Fix:
    """A list of distinct CPU numbers."""
    return leaf(
        lambda v: isinstance(v, list) and len(v) <= MAX_CPUS and all(_int(c) and 0 <= c < MAX_CPUS for c in v),
        f"a list of CPU numbers 0..{MAX_CPUS - 1}",
        null,
    )


def words(max_len: int = MAX_NAME, max_items: int = MAX_ITEMS, null: bool = True) -> Fix:
    """A list of names ([] when not null and it is none)."""
    item = text(max_len, null=False)
    return leaf(
        lambda v: isinstance(v, list) and len(v) <= max_items and all(item(x, "", []) is x for x in v),
        f"a list of at most {max_items} names",
        null,
        None if null else [],
    )


def ints(lo: int = 0, hi: int = I64 - 1, max_items: int = MAX_ITEMS, null: bool = True) -> Fix:
    return leaf(
        lambda v: isinstance(v, list) and len(v) <= max_items and all(_int(x) and lo <= x <= hi for x in v),
        f"a list of integers in {lo}..{hi}",
        null,
    )


def either(*fixes: Fix, what: str, null: bool = True) -> Fix:
    """The first of fixes the value passes untouched (or None when null)."""

    def fix(v: Any, path: str, found: Found) -> Any:
        if v is None and null:
            return None
        for f in fixes:
            probe: Found = []
            if f(v, path, probe) is v and not probe:
                return v
        found.append((path, f"{_kind(v)}, not {what}"))
        return None

    return fix


ANY: Fix = lambda v, path, found: v  # noqa: E731 - a field nobody reads as a type (bounded by the JSON caps)


def obj(fields: dict[str, Fix], required: tuple[str, ...] = (), null: bool = False) -> Fix:
    """An object: each named field checked (others kept as they are). Not an object: None when null, else {}
    (a section read as unknown). A required field missing or failed: the object is DROPped from its list."""

    def fix(v: Any, path: str, found: Found) -> Any:
        if v is None and null:
            return None
        if not isinstance(v, dict):
            found.append((path or "the file", f"{_kind(v)}, not an object"))
            return DROP if required else None if null else {}
        for key, f in fields.items():
            if key in v:
                x = f(v[key], f"{path}.{key}" if path else key, found)
                v[key] = None if x is DROP else x
        missing = [k for k in required if v.get(k) is None]
        if missing:
            found.append((path, f"no {missing[0]}"))
            return DROP
        return v

    return fix


def listof(item: Fix, max_items: int = MAX_ITEMS, null: bool = True) -> Fix:
    """A list: each item checked, a DROPped record left out. Not a list, or too long: None (or [])."""

    def fix(v: Any, path: str, found: Found) -> Any:
        if v is None and null:
            return None
        if not isinstance(v, list) or len(v) > max_items:
            found.append(
                (path, f"{_kind(v)}{' too long' if isinstance(v, list) else ''}, not a list of <= {max_items}")
            )
            return None if null else []
        out = [item(x, f"{path}[{i}]", found) for i, x in enumerate(v)]
        return [x for x in out if x is not DROP]

    return fix


def mapof(value: Fix, key: str = r"[^\x00-\x1f\x7f]{1,256}", max_items: int = MAX_ITEMS, null: bool = True) -> Fix:
    """An object of any keys matching key, each value checked (a key that does not match: left out)."""
    rx = re.compile(key)

    def fix(v: Any, path: str, found: Found) -> Any:
        if v is None and null:
            return None
        if not isinstance(v, dict) or len(v) > max_items:
            found.append((path, f"{_kind(v)}, not an object of <= {max_items} entries"))
            return None if null else {}
        out = {}
        for k, x in v.items():
            if not rx.fullmatch(k):
                found.append((f"{path}.{k!r}", "a key of the wrong form"))
                continue
            y = value(x, f"{path}.{k}" if path else k, found)
            if y is not DROP:
                out[k] = y
        return out

    return fix


CPU_KEY = r"[0-9]{1,4}"  # "0".."8191": a CPU as an object's key
SECTION = obj({})  # an object whose fields nobody reads as types


def check(schema: Fix, value: Any) -> tuple[Any, Found]:
    """(the value with each failed field read as unknown, [(field, why)])."""
    found: Found = []
    out = schema(value, "", found)
    return (None if out is DROP else out), found


def damage_line(rel: str, found: Found) -> str:
    """The one line that names a file's failed fields: 'FILE: FIELD (WHY), ... and N more: read as unknown'."""
    from rtqual.results.bundle.files import shown

    named = "; ".join(f"{shown(p or 'the file')}: {shown(why)}" for p, why in found[:SHOWN_FIELDS])
    more = f" and {len(found) - SHOWN_FIELDS} more field(s)" if len(found) > SHOWN_FIELDS else ""
    return f"{rel}: damaged ({named}{more}: read as unknown)"


# ---------------------------------------------------------------- the files

LIMIT = either(integer(-1), text(enum=("unlimited",), null=False), what="a limit (an integer or 'unlimited')")
LIMITS = obj({"soft": LIMIT, "hard": LIMIT})
UNAVAILABLE = listof(obj({"fact": text(MAX_TEXT), "reason": text(MAX_TEXT)}), null=False)
FLAG = either(boolean(null=False), text(MAX_TEXT, null=False), what="a flag or a value")

FACTS = obj(
    {
        "time_utc": text(),
        "time_ns": integer(),
        "hostname": text(),
        "python_version": text(),
        "kernel": obj({"release": text(), "version": text(MAX_TEXT), "machine": text()}),
        "preempt": obj({"model": text(), "model_source": text(), "dynamic_mode": text(), "cmdline_preempt": FLAG}),
        "cmdline": obj({"full": text(MAX_TEXT), "rt_options": mapof(FLAG)}),
        "cpu": obj(
            {
                "model": text(),
                "board": text(),
                "online": cpu_text(),
                "online_cpus": cpus(),
                "possible_count": integer(0, MAX_CPUS),
                "isolated": cpu_text(),
                "nohz_full": cpu_text(),
                "smt_active": boolean(),
                "smt_control": text(),
                "per_cpu": listof(
                    obj(
                        {
                            "cpu": cpu(),
                            "governor": text(),
                            **{f"{k}_freq_khz": integer() for k in ("scaling_cur", "scaling_min", "scaling_max")},
                            **{f"cpuinfo_{k}_freq_khz": integer() for k in ("min", "max")},
                            "available_governors": words(),
                            "reason": text(MAX_TEXT),
                        },
                        required=("cpu",),
                    ),
                    MAX_CPUS,
                    null=False,
                ),
            }
        ),
        "clocksource": obj({"current": text(), "available": words()}),
        "cpuidle": obj(
            {
                "driver": text(),
                "governor": text(),
                "per_cpu": listof(
                    obj(
                        {
                            "cpu": cpu(),
                            "states": listof(
                                obj(
                                    {
                                        "index": integer(0, 1 << 16),
                                        "name": text(),
                                        "latency_us": integer(),
                                        "residency_us": integer(),
                                        "disabled": boolean(),
                                    },
                                    required=("index",),
                                ),
                                1 << 10,
                            ),
                        },
                        required=("cpu",),
                    ),
                    MAX_CPUS,
                    null=False,
                ),
            }
        ),
        "virtualization": obj(
            {
                **{k: text() for k in ("hypervisor_type", "dmi_sys_vendor", "dmi_product_name")},
                **{k: text() for k in ("systemd_detect_virt_vm", "systemd_detect_virt_container")},
                "cpuinfo_hypervisor_flag": boolean(),
                "virtualized": boolean(),
                "container_files": obj(
                    {
                        "dockerenv": boolean(),
                        "containerenv": boolean(),
                        **{k: text() for k in ("run_systemd_container", "pid1_container", "pid1_cgroup")},
                        "root_fstype": text(),
                    }
                ),
            }
        ),
        "sched": obj(
            {
                "rt_runtime_us": integer(-1),
                "rt_period_us": integer(),
                "timer_migration": integer(),
                "numa_balancing": integer(),
                "fair_server_cpu0_runtime_ns": integer(),
                "fair_server_cpu0_period_ns": integer(),
            }
        ),
        "limits": mapof(LIMITS),
        "privileges": obj(
            {
                "euid": integer(0, (1 << 32) - 1),
                "root": boolean(),
                "cap_eff_hex": text(pattern=r"[0-9a-fA-F]{1,64}"),
                "capabilities": words(max_items=256),
                "can_sched_fifo": boolean(),
                "can_mlock": boolean(),
            }
        ),
        "devices": obj(
            {
                "cpu_dma_latency": boolean(),
                "tracefs": text(),
                "available_tracers": words(),
                "timerlat": boolean(),
                "osnoise": boolean(),
                "gpiochips": words(),
                "uio": words(),
            }
        ),
        "memory": obj({"mem_total_kb": integer()}),
        "smi": obj({"counts": mapof(integer(), key=CPU_KEY, max_items=MAX_CPUS), "note": text(MAX_TEXT)}, null=True),
        "load": obj({k: number(0) for k in ("avg_1m", "avg_5m", "avg_15m")}),
        "uptime_s": number(0),
        "rpi": obj(
            {
                "model": text(),
                "throttled": obj(
                    {
                        "flags_hex": text(pattern=r"0x[0-9a-f]{1,16}"),
                        "now": words(max_items=64),
                        "since_boot": words(max_items=64),
                        "source": text(),
                    },
                    null=True,
                ),
                "soc_temp_c": number(-1000, 1000),
                "firmware_cmdline": obj({"path": text(), "text": text(MAX_TEXT)}, null=True),
            },
            null=True,
        ),
        "tools": mapof(either(text(null=False), obj({"path": text(MAX_TEXT), "version": text()}), what="a tool")),
        "unavailable": UNAVAILABLE,
    }
)

TASK = obj(
    {
        "pid": integer(1, 1 << 22),
        "tid": integer(1, 1 << 22),
        "comm": text(64),
        "rt_priority": integer(*PRIORITY),
        "policy": text(),
        "cpus": cpu_text(),
    },
    required=("pid",),
)

TUNING = obj(
    {
        "kernel_version": text(MAX_TEXT),
        "kernel_release": text(),
        "irqs": obj(
            {
                "default_affinity": mask(),
                "irqbalance": boolean(),
                "irqs": listof(
                    obj(
                        {
                            "irq": integer(0, (1 << 31) - 1),
                            "name": text(),
                            "counts": ints(max_items=MAX_CPUS),
                            "affinity": cpu_text(),
                            "effective": cpu_text(),
                        },
                        required=("irq",),
                    ),
                    null=False,
                ),
            }
        ),
        "rt_tasks": listof(TASK, null=False),
        "watchdog": obj(
            {"watchdog": integer(), "nmi_watchdog": integer(), "soft_watchdog": integer(), "cpumask": cpu_text()}
        ),
        "memory": obj(
            {
                "thp": text(),
                "thp_defrag": text(),
                "ksm_run": integer(),
                "swaps": words(MAX_TEXT, null=False),
                "swappiness": integer(0, 200),
            }
        ),
        "workqueue_cpumask": mask(),
        "boost": integer(),
        "no_turbo": integer(),
        "per_cpu": listof(
            obj(
                {"cpu": cpu(), "siblings": cpu_text(), "pm_qos_resume_latency_us": text(pattern=r"[0-9]{1,12}|n/a")},
                required=("cpu",),
            ),
            MAX_CPUS,
            null=False,
        ),
        "self_limits": mapof(LIMITS),
        "rpi": obj(
            {
                "model": text(),
                "throttled": text(pattern=r"(0x)?[0-9a-fA-F]{1,16}"),
                "config_file": text(MAX_TEXT),
                "config": mapof(text(MAX_NAME)),
                "temp_mc": integer(-(1 << 31)),
            },
            required=("model",),
            null=True,
        ),
        "unavailable": UNAVAILABLE,
    }
)

KNOB = obj({"knob": text(MAX_TEXT), "value": text(MAX_TEXT), "irq": integer(0, MAX_IRQ), "priority": integer(1, 99)})
FINDING = obj(
    {
        "id": text(pattern=r"[a-z0-9_-]{1,64}", null=False),
        "severity": text(enum=("blocker", "major", "minor", "info"), null=False),
        "evidence": words(MAX_TEXT),
        "why": text(MAX_TEXT),
        "fix": text(MAX_TEXT),
        "runtime": boolean(),
        "check": text(MAX_TEXT),
        "knobs": listof(KNOB),
        "persistent": mapof(words(MAX_TEXT)),
    },
    required=("id", "severity", "evidence", "why", "fix", "runtime", "check"),
)

CASE_ID = r"[^/\x00-\x1f\x7f]{1,255}"
PLAN_CASE = obj(
    {
        "id": text(pattern=CASE_ID, null=False),
        "label": text(MAX_TEXT),
        "probe": text(),
        "args": words(MAX_TEXT),
        "params": SECTION,
        "requirements": SECTION,
        "service": obj({}, null=True),
        "advise": obj({"arm": text(), "round": integer(0, 1 << 20)}, null=True),
    },
    required=("id",),
)

PLAN = obj(
    {
        "schema_version": integer(),
        "name": text(MAX_TEXT),
        "table": text(),
        "cases": listof(PLAN_CASE, null=False),
        "advise": obj({"findings": listof(FINDING, null=False)}, null=True),
    }
)

PARAMS = obj(
    {
        "id": text(pattern=CASE_ID),
        "label": text(MAX_TEXT),
        "probe": text(),
        "run_as": text(),
        "args": words(MAX_TEXT),
        "params": SECTION,
        "requirements": SECTION,
    }
)

RT_TASKS = listof(
    obj(
        {
            "name": text(64),
            "pid": integer(1, 1 << 22),
            "tid": integer(1, 1 << 22),
            "policy": text(),
            "priority": integer(*PRIORITY),
            "affinity": cpu_text(),
            "kernel": boolean(),
        },
        required=("pid",),
    ),
    null=False,
)

TICKS = mapof(ints(max_items=64), key=r"all|[0-9]{1,4}", max_items=MAX_CPUS + 1)
ENV_POINT = obj(
    {
        "t_ns": integer(),
        "cpu_ticks": TICKS,
        "thermal_throttle": mapof(ANY),
        "throttled": ANY,
        "temps_c": mapof(number(-1000, 1000), max_items=1024),
    }
)
ENVIRONMENT = obj(
    {
        "stat_columns": words(max_items=64),
        "cpus": cpus(),
        "siblings": mapof(cpus(), key=CPU_KEY, max_items=MAX_CPUS),
        "trip_points_c": mapof(ANY),
        "start": ENV_POINT,
        "end": ENV_POINT,
    }
)

THREAD = obj(
    {
        "tid": integer(1, 1 << 22),
        "comm": text(64),
        "cls": text(8),
        "rtprio": integer(*PRIORITY),
        "last_cpu": cpu(null=True),
        "cpus_allowed": cpu_text(),
    },
    required=("tid",),
)

IOC = obj(
    {
        "preset": text(),
        "mode": text(),
        "reader_priority": integer(*PRIORITY),
        "prefix": text(),
        "spec": SECTION,
        "pid": integer(1, 1 << 22),
        "epics_version": text(),
        "epicscorelibs": text(),
        "epics_libs": text(MAX_TEXT),
        "ca_server_port": text(pattern=r"[0-9]{1,5}"),
        "pva_server_port": text(pattern=r"[0-9]{1,5}"),
        "rtprio": integer(*PRIORITY),
        "reader_cpu": cpu(null=True),
        "cpus_allowed": cpu_text(),
        "threads": listof(THREAD),
        "ca_load": SECTION,
    },
    null=True,
)

STATS_KEYS = ("count", "overruns", "over_threshold", "out_of_range", "lost", "samples")
STATS = mapof(
    either(
        number(-I64, I64, null=False),
        text(MAX_TEXT, null=False),
        boolean(null=False),
        obj({}),
        listof(ANY, null=False),
        what="a statistic",
    )
)
RESULT = obj(
    {
        "reason": text(MAX_TEXT),
        "exit_code": integer(-(1 << 31), (1 << 31) - 1),
        "degraded": boolean(),
        "rt": SECTION,
        "end": obj({}, null=True),
        "overhead": obj({}, null=True),
        "start_real_ns": integer(),
        "stats": STATS,
        "per_cpu": mapof(STATS, key=CPU_KEY + "|all", max_items=MAX_CPUS + 1, null=False),
        "threshold_events": listof(obj({"cpu": cpu(null=True), "latency_ns": integer(-I64)})),
        "suppressed_events": integer(),
        "cpu_time": mapof(obj({"cpu_time_ns": integer(), "wakeups": integer()}), key=CPU_KEY, max_items=MAX_CPUS),
        "warnings": words(MAX_TEXT),
        "loads": listof(obj({})),
        "ioc": IOC,
        "conditions": obj({}, null=True),
        "host_samples": obj(
            {
                "samples": integer(),
                "span_ns": integer(),
                "temps_c": mapof(number()),
                "temp_max_c": number(),
                "freq_khz": mapof(obj({"min": integer(), "max": integer()}), key=CPU_KEY, max_items=MAX_CPUS),
                "freq_khz_range": ints(max_items=2),
                "loadavg1_max": number(0),
            },
            null=True,
        ),
        "requirement_verdicts": listof(obj({})),
        "spikes": listof(
            obj(
                {
                    "cpu": cpu(null=True),
                    "latency_ns": integer(-I64),
                    "time_unix_s": number(0),
                    "cause": obj(  # --capture: what held the CPU (rtqual.answers.evidence.spikes.cause)
                        {
                            "kind": text(),
                            "comm": text(),
                            "pid": integer(-1, (1 << 31) - 1),
                            "policy": text(),
                            "priority": integer(-1000, 1000),
                            "cpu": cpu(null=True),
                            "duration_ns": integer(-I64),
                        },
                        null=True,
                    ),
                    "evidence": obj({}, null=True),
                }
            )
        ),
        "smi": obj(  # MSR_SMI_COUNT before and after the case (rtqual.measure.host.facts.smi_delta)
            {
                "before": mapof(integer(), key=CPU_KEY, max_items=MAX_CPUS),
                "after": mapof(integer(), key=CPU_KEY, max_items=MAX_CPUS),
                "per_cpu": mapof(integer(), key=CPU_KEY, max_items=MAX_CPUS),
                "total": integer(),
                "note": text(MAX_TEXT),
            },
            null=True,
        ),
    }
)

HIST_CPU = obj({})  # each CPU's record: rtqual.results.hist.record_problem, in the model
HIST = obj({"per_cpu": mapof(HIST_CPU, key=CPU_KEY + "|all", max_items=MAX_CPUS + 1, null=False)})

BY_NAME = {
    "facts-before.json": FACTS,
    "facts-after.json": FACTS,
    "tuning-before.json": TUNING,
    "plan.json": PLAN,
    "params.json": PARAMS,
    "rt-tasks.json": RT_TASKS,
    "environment.json": ENVIRONMENT,
    "ioc.json": IOC,
    "result.json": RESULT,
    "hist.json": HIST,
}
"""The schema of each bundle file, by its name (names.py); a file without one is read as it is."""

CASE_FILES = ("params.json", "rt-tasks.json", "environment.json", "ioc.json")
"""A case's small JSON files the model passes through the door when it loads (result.json: with the results;
hist.json when a reader asks for it, and in `verify`: a day's histogram is the one large one)."""

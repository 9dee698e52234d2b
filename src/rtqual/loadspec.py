"""The loads as users write them: each load type's doc line, its options ({name: Field}) and its pure checks.

A load table of a scenario file and a `--load NAME[,key=value...]` are checked here in full before anything
runs; the drivers that run them (rtqual.measure.loads) take their options from these declarations and
check a spec with `check` too. docs/loads.md is made from the same tables (`options_markdown`).
"""

from __future__ import annotations

import html
import ipaddress
import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rtqual.errors import RtqError
from rtqual.fields import Field, suggest
from rtqual.units import parse_cpulist, parse_duration_ns

POLICIES = {
    "other": os.SCHED_OTHER,
    "batch": os.SCHED_BATCH,
    "idle": os.SCHED_IDLE,
    "fifo": os.SCHED_FIFO,
    "rr": os.SCHED_RR,
}
RT_POLICIES = ("fifo", "rr")
# Lowest RT priority: above every normal task, below threaded IRQs (FIFO 50) and the probe.
DEFAULT_RT_PRIORITY = 1
MS = 1_000_000
STALL_MIN_NS, STALL_MAX_NS = 100_000, 200 * MS  # the injector's own range (inject.c)
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")

COMMON_OPTIONS: dict[str, Field] = {
    "name": Field("str", "label for logs and results (default: the load type)"),
    "cpus": Field("cpulist", "CPUs the load may run on (default: all)"),
    "policy": Field("enum", "scheduling policy", tuple(POLICIES), default="other"),
    "priority": Field("int", f"priority for fifo/rr (default {DEFAULT_RT_PRIORITY})", lo=0, hi=99),
    "instances": Field("int", "copies of the load (default 1; cpu-hog: one per CPU)", lo=1, hi=1024),
    "force": Field("bool", "allow a real-time load on every CPU", default=False),
}
"""The options every load has; a load type's own are its `options` (both {name: Field})."""


@dataclass(frozen=True)
class LoadType:
    """One load type: its doc line (docs/loads.md), its own options beside COMMON_OPTIONS, and its own pure
    checks, called with every option's value and "load 'NAME'" (RtqError when the values do not go together)."""

    doc: str
    options: dict[str, Field]
    rules: Callable[[dict, str], object] | None = None
    refused: dict[str, str] = field(default_factory=dict)  # common options that do not apply: {name: why}


def inject_times_ns(options: dict, where: str) -> dict[str, int]:
    """The injector's durations in ns ("claim" only when given); the stall within the injector's range."""
    ns = {k: parse_duration_ns(options[k], f"{where}: {k}") for k in ("stall", "gap", "start_delay")}
    if not STALL_MIN_NS <= ns["stall"] <= STALL_MAX_NS:
        raise RtqError(f"{where}: stall must be in 100us..200ms (got {options['stall']})")
    if options["claim"] is not None:
        ns["claim"] = parse_duration_ns(options["claim"], f"{where}: claim")
    return ns


def _network_rules(o: dict, where: str) -> None:
    if o["rate"] == 0 and o["mode"] != "tcp":
        raise RtqError(f"{where}: rate 0 (unpaced) is for mode tcp only; give packets/s")
    if bool(o["interface"]) != bool(o["peer"]):
        raise RtqError(f"{where}: interface and peer go together (a real interface toward the peer you name)")
    if o["peer"]:
        try:
            ipaddress.IPv4Address(o["peer"])
        except ValueError:
            raise RtqError(f"{where}: peer {o['peer']!r} is not an IPv4 address") from None
    if o["arp_rate"] and o["mode"] != "broadcast":
        raise RtqError(f"{where}: arp_rate applies to mode broadcast only")


def _pi_stress_rules(o: dict, where: str) -> None:
    if o["cpus"] is not None:
        raise RtqError(
            f"{where}: option 'cpus' is not supported: pi_stress pins its threads itself (use groups or uniprocessor)"
        )


def _stress_ng_rules(o: dict, where: str) -> None:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", o["stressor"]):
        raise RtqError(f"{where}: '{o['stressor']}' is not a stressor name")


TYPES: dict[str, LoadType] = {
    "hackbench": LoadType(
        "hackbench in a restart loop until stopped.",
        {
            "groups": Field("int", "groups of senders and receivers (hackbench default 10)", lo=1, hi=10000),
            "fds": Field("int", "senders and receivers per group (hackbench default 20)", lo=1, hi=1000),
            "mode": Field(
                "enum", "senders/receivers as processes or threads", ("process", "thread"), default="process"
            ),
            "transport": Field("enum", "Unix socket pairs or pipes", ("socket", "pipe"), default="socket"),
            "loops": Field("int", "messages per sender in one run (hackbench default 100)", lo=1),
            "datasize": Field("int", "bytes per message (hackbench default 100)", lo=1),
        },
    ),
    "pi_stress": LoadType(
        "pi_stress places its threads on CPUs itself and makes them SCHED_FIFO (priorities 1-4 here).",
        {
            "groups": Field("int", "inversion groups (default chosen by pi_stress)", lo=1, hi=1024),
            "rr": Field("bool", "SCHED_RR instead of SCHED_FIFO for the test threads", default=False),
            "uniprocessor": Field("bool", "all groups on one CPU (pi_stress --uniprocessor)", default=False),
            "mlockall": Field("bool", "lock pi_stress's memory", default=False),
        },
        _pi_stress_rules,
    ),
    "stress-ng": LoadType(
        "stress-ng --<stressor> <workers> --timeout 0 [args...] (timeout 0 = run until signalled).",
        {
            "stressor": Field("str", "stressor name, as listed by `stress-ng --stressors`", default="cpu"),
            "workers": Field("int", "workers per instance (0: one per online CPU)", lo=0, hi=4096, default=1),
            "args": Field("strlist", "more stress-ng options, e.g. ['--cpu-method', 'matrixprod']", default=[]),
        },
        _stress_ng_rules,
    ),
    "cpu-hog": LoadType(
        "One copier per selected CPU (all online CPUs by default), each pinned to its CPU.",
        {
            "block_size": Field(
                "int", "bytes per read and write (cat uses 128 KiB)", lo=1, hi=64 * 1024 * 1024, default=128 * 1024
            ),
        },
    ),
    "command": LoadType(
        'argv is run as is, without a shell (write ["sh", "-c", "..."] to get one).',
        {
            "argv": Field("argv", "command line: a list, or a string split like a shell line", required=True),
            "finite": Field("bool", "the command may end by itself: exit code 0 is not a dead load", default=False),
        },
    ),
    "network": LoadType(
        "Packets into this host's stack: udp, tcp or broadcast (CA searches + ARP) over a private veth pair.",
        {
            "mode": Field(
                "enum", "udp datagrams, a tcp stream, or broadcast chatter", ("udp", "tcp", "broadcast"), default="udp"
            ),
            "rate": Field(
                "int",
                "packets/s sent (tcp: writes/s; 0 = as fast as it goes, tcp only)",
                lo=0,
                hi=1_000_000,
                default=1000,
            ),
            "size": Field(
                "int", "UDP/TCP payload bytes per packet (broadcast: a CA search's)", lo=1, hi=65507, default=64
            ),
            "arp_rate": Field(
                "int", "ARP requests/s broadcast beside the packets (broadcast mode)", lo=0, hi=100_000, default=0
            ),
            "port": Field(
                "int", "destination port (default: 5064, CA name search, broadcast; else 9000)", lo=1, hi=65535
            ),
            "interface": Field("str", "send out of this real interface toward `peer` instead of a private namespace"),
            "peer": Field("str", "IPv4 address of the user's peer behind `interface`"),
        },
        _network_rules,
        refused={"instances": "one sender and one receiver"},
    ),
    "inject": LoadType(
        "K SCHED_FIFO busy loops of length `stall` on CPU `cpu`, `gap` apart, after `start_delay`.",
        {
            "cpu": Field("int", "the CPU to stall (default: the last online CPU)", lo=0, hi=8191),
            "stall": Field("str", "length of each stall, e.g. 10ms (at most 200ms)", default="10ms"),
            "count": Field("int", "stalls", lo=1, hi=10_000, default=5),
            "gap": Field("str", "sleep between one stall's end and the next one's start", default="500ms"),
            "start_delay": Field(
                "str",
                "sleep before the first stall: the case's settle time (default 2s) and the probe's start come first",
                default="3s",
            ),
            "stall_priority": Field("int", "SCHED_FIFO priority of the stalls", lo=1, hi=99, default=90),
            "claim": Field("str", "claim this length in the stall records (a lie: the selftest must fail)"),
        },
        inject_times_ns,
    ),
}
"""Every load type in the order of the docs; rtqual.measure.loads.LOADS has a driver for each."""


def option_fields(kind: str) -> dict[str, Field]:
    """Every option of a load type, common ones first: {name: Field} (help, validation, docs)."""
    return {**COMMON_OPTIONS, **TYPES[kind].options}


def load_type(spec: Any) -> str:
    """The `type` of a load table, or RtqError "load: unknown type 'x' (one of: ...)"."""
    if not isinstance(spec, dict):
        raise RtqError(f"load: expected a table of options, got {spec!r}")
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in TYPES:
        what = "missing 'type'" if kind is None else f"unknown type '{kind}'"
        raise RtqError(f"load: {what} (one of: {', '.join(TYPES)})")
    return kind


def check(spec: dict) -> dict:
    """A load table ({"type": "hackbench", "groups": 4, ...}) checked without running anything: its type and
    keys known, each value converted by its Field, the policy and priority, the type's own rules.

    Returns {"type", every option (given, else its default)}, "priority" decided (DEFAULT_RT_PRIORITY for
    fifo/rr, else 0, when not given); RtqError "load 'TYPE': ..." (the rules: "load 'NAME': ...") otherwise.
    """
    kind = load_type(spec)
    declared = TYPES[kind]
    where = f"load '{kind}'"
    given = {k: v for k, v in spec.items() if k != "type"}
    for key, why in declared.refused.items():
        if key in given:
            raise RtqError(f"{where}: option '{key}' does not apply ({why})")
    known = option_fields(kind)
    for key in given:
        if key not in known:
            raise RtqError(f"{where}: unknown option '{key}' (known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for name, f in known.items():
        if given.get(name) is None:
            if f.required:
                raise RtqError(f"{where}: option '{name}' is required ({f.help})")
            values[name] = list(f.default) if isinstance(f.default, list) else f.default
        else:
            values[name] = convert_option(name, f, given[name], where)
    rt = values["policy"] in RT_POLICIES
    if values["priority"] is None:
        values["priority"] = DEFAULT_RT_PRIORITY if rt else 0
    elif rt and values["priority"] < 1:
        raise RtqError(f"{where}: priority for policy {values['policy']} must be in 1..99")
    elif not rt and values["priority"] != 0:
        raise RtqError(f"{where}: priority applies to policy fifo or rr only (policy is {values['policy']})")
    if declared.rules is not None:
        declared.rules(values, f"load '{values['name'] or kind}'")
    return {"type": kind, **values}


def convert_option(name: str, f: Field, value: Any, where: str) -> Any:
    """A load option's value checked against its Field, or RtqError naming the load and the key.

    The kinds of Field that loads use: int, bool, str, enum, strlist, argv, cpulist (a list of
    CPU numbers or a string such as '0-3,8'). The messages are the loads' own (scenario files show them).
    """
    bad = f"{where}: option '{name}' "
    kind = f.kind
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise RtqError(bad + f"must be an integer, got {value!r}")
        if (f.lo is not None and value < f.lo) or (f.hi is not None and value > f.hi):
            raise RtqError(bad + f"must be in {f.lo}..{f.hi}, got {value}")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise RtqError(bad + f"must be true or false, got {value!r}")
    elif kind in ("str", "enum"):
        if not isinstance(value, str):
            raise RtqError(bad + f"must be a string, got {value!r}")
        if f.choices and value not in f.choices:
            raise RtqError(bad + f"must be one of {', '.join(f.choices)}, got '{value}'")
    elif kind == "strlist":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise RtqError(bad + f"must be a list of strings, got {value!r}")
        value = list(value)
    elif kind == "argv":
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as e:
                raise RtqError(bad + f"cannot be split like a shell line: {e}") from None
        if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
            raise RtqError(bad + f"must be a non-empty command line (list or string), got {value!r}")
        value = list(value)
    elif kind == "cpulist":
        if isinstance(value, str):
            value = parse_cpulist(value, check_online=False)
        elif (
            not isinstance(value, (list, tuple))
            or not value
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value)
        ):
            raise RtqError(bad + f"must be a CPU list such as '0-3,8' or [1, 2], got {value!r}")
        value = sorted(set(value))
    else:
        raise AssertionError(f"load option '{name}': kind {kind} is not a load option kind")
    return value


# -- `--load NAME[,key=value...]` on the command line --------------------------------------------------


def parse_load(text: str) -> dict:
    """'hackbench,groups=4' -> {"type": "hackbench", "groups": 4}, checked like a scenario's load table;
    RtqError "--load hackbench: groups: expected an integer, got 'x'" otherwise.

    The same load names and options as scenario files. Values are converted by the load's own option table
    (integers, true/false, CPU lists, command lines split like a shell line); a part without '=' is a flag
    of the load (`pi_stress,rr`) or continues the value before it (`cpus=0,2` keeps its comma).
    """
    kind, _, rest = text.partition(",")
    kind = kind.strip()
    where = f"--load {kind or text}"
    if kind not in TYPES:
        raise RtqError(f"{where}: unknown load{suggest(kind, TYPES)} (one of: {', '.join(TYPES)})")
    options = option_fields(kind)
    raw: dict[str, str | bool] = {}
    last: str | None = None
    for part in rest.split(",") if rest else []:
        key, eq, value = part.partition("=")
        key = key.strip()
        if eq:
            if key not in options:
                raise RtqError(f"{where}: unknown option '{key}' (known: {', '.join(sorted(options))})")
            raw[key], last = value, key
        elif key in options and options[key].kind == "bool":
            raw[key], last = True, None
        elif last is not None:
            raw[last] = f"{raw[last]},{part}"
        else:
            raise RtqError(f"{where}: '{part}' is not key=value (options: {', '.join(sorted(options))})")
    spec: dict = {"type": kind}
    for key, given in raw.items():
        spec[key] = _from_text(options[key].kind, given, f"{where}: {key}")
    try:
        check(spec)
    except RtqError as e:
        msg = str(e).removeprefix(f"load '{kind}': ")
        raise RtqError(f"{where}: {msg}", e.exit_code) from None
    return spec


def _from_text(kind: str, value: str | bool, where: str) -> object:
    """One option value from its text, by the option's kind."""
    if isinstance(value, bool):
        return value
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            raise RtqError(f"{where}: expected an integer, got '{value}'") from None
    if kind == "bool":
        if value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        raise RtqError(f"{where}: expected true or false, got '{value}'")
    if kind == "strlist":
        try:
            return shlex.split(value)
        except ValueError as e:
            raise RtqError(f"{where}: cannot be split like a shell line: {e}") from None
    return value


def load_name(spec: dict) -> str:
    """The name a load shows in labels and tables."""
    return str(spec.get("name") or spec["type"])


def options_markdown() -> str:
    """docs/loads.md: every load's options from their Field tables (python -m rtqual.measure.loads > docs/loads.md)."""

    def table(fields: dict) -> list[str]:
        rows = ["| option | kind | default | help |", "| --- | --- | --- | --- |"]
        for name, f in fields.items():
            kind = f"{f.kind} ({', '.join(f.choices)})" if f.choices else f.kind
            if f.lo is not None or f.hi is not None:
                kind += f" {'' if f.lo is None else f.lo}..{'' if f.hi is None else f.hi}"
            default = "required" if f.required else "" if f.default is None else f"`{json.dumps(f.default)}`"
            rows.append(f"| `{name}` | {kind} | {default} | {f.help} |")
        return rows

    out = [
        "# Loads",
        "",
        "Generated from the option tables in `src/rtqual/measure/loads` (`python -m rtqual.measure.loads >",
        "docs/loads.md`; a test fails when it is stale). A load table in a scenario file (`[loads.NAME]` or inline)",
        "has a `type` and these options; an empty default means the tool's own.",
        "",
        "## Every load",
        "",
        *table(COMMON_OPTIONS),
    ]
    for kind, declared in TYPES.items():
        out += ["", f"## `{kind}`", "", html.escape(declared.doc, quote=False)]
        if declared.options:
            out += ["", *table(declared.options)]
    return "\n".join(out) + "\n"

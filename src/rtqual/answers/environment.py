"""The environment a run measured in, stated: what ran underneath (hypervisor, container) and what else
happened during each case (steal, other runnable tasks, busy SMT siblings, heat and throttling,
conditions not applied), each with what it means for the numbers. Pure: host facts and stored case
results and records in, a dict and sentences out.

Per case, the sources are the case result (its host_samples summary, loads and conditions) and, for
bundles written since rtqual kept it, the case's environment record (cases/<id>/environment.json, see
rtqual.measure.host.sampler): /proc/stat CPU counters at the case's start and end, SMT siblings, thermal
trip points, throttle counters. An older bundle gives what its facts and results hold; nothing is
guessed (a value not recorded is None).
"""

from __future__ import annotations

from rtqual.results.facts import RPI_THROTTLED_BITS, get_fact

STEAL_NOTE_PCT = 0.5
"""Steal of a measured CPU at or above this share of the case's time is said."""
SIBLING_BUSY_PCT = 10.0
"""An SMT sibling of a measured CPU at least this busy shares the core noticeably."""
IDLE_OTHERS_MEAN = 0.5
"""An idle case (no loads) with at least this many other runnable tasks on average was not idle."""
IDLE_LOAD_AVG = 1.0
"""Without runnable-task samples (older bundles), an idle case whose 1-minute load average reached
this was not idle."""
HOT_C = 80.0
"""A temperature said to be hot where the sensor has no throttling trip point."""

HYPERVISOR_NAMES = {
    "kvm": "KVM",
    "qemu-tcg": "QEMU (emulated, TCG)",
    "vmware": "VMware",
    "xen": "Xen",
    "hyperv": "Hyper-V",
    "virtualbox": "VirtualBox",
    "vm": "virtual",
}
_SYSTEMD_VM = {"qemu": "qemu-tcg", "microsoft": "hyperv", "oracle": "virtualbox"}
"""systemd-detect-virt --vm names that rtqual names otherwise ('qemu' means emulated, without KVM)."""
_DMI_VM = (("vmware", "vmware"), ("innotek", "virtualbox"), ("microsoft", "hyperv"), ("xen", "xen"))
CONTAINER_NAMES = {"docker": "Docker", "podman": "Podman", "lxc": "LXC", "systemd-nspawn": "systemd-nspawn"}
THROTTLED_BITS = RPI_THROTTLED_BITS
"""A Raspberry Pi firmware's throttled flags: bit n is 'now', bit n+16 'has occurred since boot'."""


# ---------------------------------------------------------------- the host: hypervisor and container


def hypervisor(facts: dict | None) -> tuple[str | None, str]:
    """(name, how it is known): 'kvm', 'qemu-tcg', 'vmware', 'xen', 'hyperv', 'virtualbox', another
    systemd-detect-virt name, 'vm' (a hypervisor of unknown kind), 'none' (bare metal), or None when
    the facts cannot say."""
    if not facts:
        return None, "no host facts"
    v = facts.get("virtualization") or {}
    systemd = v.get("systemd_detect_virt_vm")
    if systemd:
        return _SYSTEMD_VM.get(systemd, systemd), f"systemd-detect-virt: {systemd}"
    clocks = get_fact(facts, "clocksource.available") or []
    vendor = f"{v.get('dmi_sys_vendor') or ''} {v.get('dmi_product_name') or ''}".lower()
    model = (get_fact(facts, "cpu.model") or "").lower()
    board = get_fact(facts, "cpu.board") or ""
    if v.get("hypervisor_type"):
        return v["hypervisor_type"].lower(), f"/sys/hypervisor/type: {v['hypervisor_type']}"
    if "kvm-clock" in clocks:
        return "kvm", "kvm-clock clocksource"
    if any(c.startswith("hyperv") for c in clocks):
        return "hyperv", "Hyper-V clocksource"
    for word, name in _DMI_VM:
        if word in vendor:
            return name, f"DMI vendor: {vendor.strip()}"
    if "qemu" in vendor or "qemu" in model or "dummy-virt" in board:
        return "qemu-tcg", "QEMU machine without kvm-clock"
    if v.get("cpuinfo_hypervisor_flag"):
        return "vm", "cpuinfo hypervisor flag"
    if v.get("cpuinfo_hypervisor_flag") is False:
        return "none", "no hypervisor flag in /proc/cpuinfo"
    if board:
        return "none", f"device-tree board: {board}"
    return None, "no sign either way"


def container(facts: dict | None) -> tuple[str | None, str]:
    """(name, how it is known): 'docker', 'podman', 'lxc', 'systemd-nspawn', another systemd name,
    'none', or None when the facts cannot say (older facts without container files)."""
    if not facts:
        return None, "no host facts"
    v = facts.get("virtualization") or {}
    files = v.get("container_files")
    if isinstance(files, dict) and files.get("root_fstype") in ("9p", "virtiofs"):
        # a guest booted on its host's tree (scripts/kernel-lab): the host's container files are in it
        return "none", f"root file system shared by the VM's host ({files['root_fstype']})"
    systemd = v.get("systemd_detect_virt_container")
    if systemd:
        return systemd, f"systemd-detect-virt: {systemd}"
    if not isinstance(files, dict):
        return None, "not recorded"
    for key, why in (("run_systemd_container", "/run/systemd/container"), ("pid1_container", "/proc/1/environ")):
        if files.get(key):
            return files[key], f"{why}: {files[key]}"
    if files.get("containerenv"):
        return "podman", "/run/.containerenv"
    if files.get("dockerenv"):
        return "docker", "/.dockerenv"
    if files.get("pid1_cgroup"):
        return files["pid1_cgroup"], f"/proc/1/cgroup names {files['pid1_cgroup']}"
    return "none", "no container files"


def firmware_throttled(facts: dict | None) -> dict | None:
    """A Raspberry Pi's firmware throttled state in the facts before the run (rtqual.results.facts
    decode_throttled, with the board's model), None on other boards or older facts."""
    pi = get_fact(facts or {}, "rpi")
    if not isinstance(pi, dict) or not isinstance(pi.get("throttled"), dict):
        return None
    return {"model": pi.get("model"), **pi["throttled"]}


# ---------------------------------------------------------------- per case


def cpu_shares(start: list[int], end: list[int], columns: list[str]) -> dict | None:
    """Steal and busy shares (percent of the CPU's time between two /proc/stat snapshots; busy is work
    done on the CPU: neither idle, iowait nor stolen), or None when no time passed."""
    delta = dict(zip(columns, (e - s for s, e in zip(start, end))))
    total = sum(delta.values())
    if total <= 0:
        return None
    idle = delta.get("idle", 0) + delta.get("iowait", 0) + delta.get("steal", 0)
    return {
        "steal_pct": round(100 * delta.get("steal", 0) / total, 2),
        "busy_pct": round(100 * (total - idle) / total, 2),
    }


def _record_shares(record: dict) -> dict[str, dict]:
    """CPU (as text, 'all') -> cpu_shares over the record's start and end snapshots."""
    start, end = record.get("start") or {}, record.get("end") or {}
    columns = record.get("stat_columns") or []
    a, b = start.get("cpu_ticks") or {}, end.get("cpu_ticks") or {}
    out = {}
    for cpu in a.keys() & b.keys():
        shares = cpu_shares(a[cpu], b[cpu], columns)
        if shares is not None:
            out[cpu] = shares
    return out


def throttled_during(start: int | None, end: int | None, seen: int | None) -> list[str]:
    """Names of the firmware's throttled conditions that held during the case: a 'now' bit in any
    sample or at the end, or a 'since boot' bit that was set during the case."""
    now = ((seen or 0) | (end or 0)) & 0xF
    new = (((end or 0) >> 16) & ~((start or 0) >> 16)) & 0xF
    return [name for bit, name in THROTTLED_BITS.items() if (now | new) >> bit & 1]


def _hottest(host_samples: dict, trips: dict) -> dict | None:
    """The hottest sensor of a case: its name, maximum, throttling trip point and whether it was hot."""
    temps = host_samples.get("temps_c") or {}
    if not temps:
        return None
    name = max(temps, key=lambda n: temps[n].get("max", float("-inf")))
    top, trip = temps[name].get("max"), trips.get(name)
    return {"sensor": name, "max_c": top, "trip_c": trip, "hot": top is not None and top >= (trip or HOT_C)}


def start_end_temperature(start: dict, end: dict) -> dict | None:
    """The temperature at the case's start and end (its environment record's snapshots) of the sensor hottest
    at the end (a Raspberry Pi's one SoC sensor): {"sensor", "start_c", "end_c"}, None where not recorded."""
    a, b = start.get("temps_c") or {}, end.get("temps_c") or {}
    both = [n for n in b if n in a]
    if not both:
        return None
    name = max(both, key=lambda n: b[n])
    return {"sensor": name, "start_c": a[name], "end_c": b[name]}


def not_applied(result: dict) -> list[dict]:
    """Each condition the case asked for and did not get: {"condition", "value", "cpu", "reason"}."""
    return [
        {"condition": c.get("condition"), "value": c.get("after"), "cpu": c.get("cpu"), "reason": c.get("reason")}
        for c in ((result.get("conditions") or {}).get("changes")) or []
        if c.get("applied") is False
    ]


def case_environment(result: dict, record: dict | None) -> dict:
    """What else happened during one case: from its result (host_samples, loads, conditions) and its
    environment record where the bundle has one."""
    hs = result.get("host_samples") or {}
    rec = record or {}
    shares = _record_shares(rec) if record else {}
    cpus = [str(c) for c in rec.get("cpus") or []]
    siblings = None
    if record and isinstance(rec.get("siblings"), dict):
        siblings = [
            {
                "cpu": int(cpu),
                "sibling": sib,
                "measured": str(sib) in cpus,
                "busy_pct": shares.get(str(sib), {}).get("busy_pct"),
            }
            for cpu, sibs in sorted(rec["siblings"].items(), key=lambda kv: int(kv[0]))
            for sib in sibs
        ]
    start, end = rec.get("start") or {}, rec.get("end") or {}
    flags = [start.get("throttled"), end.get("throttled"), hs.get("throttled_flags")]
    counts_a, counts_b = start.get("thermal_throttle") or {}, end.get("thermal_throttle") or {}
    return {
        "id": result.get("id"),
        "label": result.get("label"),
        "idle": not result.get("loads"),
        "recorded": record is not None,
        "steal_pct": (
            {
                "all": shares.get("all", {}).get("steal_pct"),
                "cpus": {c: shares[c]["steal_pct"] for c in cpus if c in shares},
            }
            if shares
            else None
        ),
        "loadavg1_max": hs.get("loadavg1_max"),
        "others_running": hs.get("others_running"),
        "smt_siblings": siblings,
        "temperature": _hottest(hs, rec.get("trip_points_c") or {}),
        "temperature_start_end": start_end_temperature(start, end),
        "throttled": (
            {
                "flags_hex": hex(flags[1] if flags[1] is not None else (flags[2] or 0)),
                "during": throttled_during(*flags),
                "before": [n for b, n in THROTTLED_BITS.items() if (flags[0] or 0) >> (b + 16) & 1],
            }
            if any(f is not None for f in flags)
            else None
        ),  # fmt: skip
        "thermal_throttle_events": (
            sum(counts_b[c] - counts_a[c] for c in counts_a.keys() & counts_b.keys()) if counts_a and counts_b else None
        ),
        "conditions_not_applied": not_applied(result),
    }


def environment(facts: dict | None, results: list[dict], records: dict[str, dict | None]) -> dict:
    """The `environment` of `show --json`: hypervisor and container of the host (facts before the run),
    and per case what else happened (records: case id -> environment record or None)."""
    hv, hv_source = hypervisor(facts)
    ct, ct_source = container(facts)
    return {
        "virtualized": None if hv is None else hv != "none",
        "hypervisor": hv,
        "hypervisor_source": hv_source,
        "container": ct,
        "container_source": ct_source,
        "firmware_throttled": firmware_throttled(facts),
        "cases": [_case_or_note(r, records.get(r.get("id") or "")) for r in results],
    }


_ODD_SHAPES = (AttributeError, KeyError, TypeError, ValueError, IndexError)


def _case_or_note(result: dict, record: dict | None) -> dict:
    """case_environment, or, where the record (then the result) holds values of a shape it cannot read (a
    hand-edited or foreign bundle), the case without them and a note why: show never stops on them."""
    for rec, note in ((record, None), (None, "environment.json of an unexpected shape: left out")):
        try:
            out = case_environment(result, rec)
        except _ODD_SHAPES:
            continue
        return {**out, "problem": note} if note and record is not None else out
    return {"id": result.get("id"), "label": result.get("label"), "problem": "host samples of an unexpected shape"}


# ---------------------------------------------------------------- what it means


def _pct(x: float) -> str:
    return f"{x:.1f} %" if x >= 0.1 else f"{x:.2f} %"


def host_sentences(env: dict) -> list[str]:
    """What the hypervisor and the container mean for the numbers."""
    out = []
    hv = env.get("hypervisor")
    if hv == "qemu-tcg":
        out.append(
            "measured in an emulated QEMU guest (TCG, no KVM): the numbers are the emulator's, not the hardware's"
        )
    elif hv == "none":
        out.append("measured on bare metal (no hypervisor found): the numbers are this hardware's and kernel's")
    elif hv is None:
        out.append("whether a hypervisor ran underneath is not known: the bundle's host facts cannot say")
    else:
        name = HYPERVISOR_NAMES.get(hv, hv)
        out.append(f"measured in a {name} guest: maxima include the hypervisor's (vCPU preemption, exits)")
    ct = env.get("container")
    if ct and ct != "none":
        out.append(
            f"measured inside a {CONTAINER_NAMES.get(ct, ct)} container: the kernel and its settings are the "
            "host's, limits and capabilities the container's"
        )
    said = firmware_sentence(env.get("firmware_throttled"))
    return out + ([said] if said else [])


def firmware_sentence(fw: dict | None) -> str | None:
    """What a Raspberry Pi firmware's throttled state before the run means for the numbers, None when clean."""
    fw = fw or {}
    now, since = fw.get("now") or [], fw.get("since_boot") or []
    if not now and not since:
        return None
    state = "; ".join(
        part
        for part in (f"now {', '.join(now)}" if now else "", f"since boot {', '.join(since)}" if since else "")
        if part
    )
    return (
        f"the Raspberry Pi's firmware reported {state} before the run (get_throttled {fw.get('flags_hex')}): "
        "the CPU may have run below its set frequency; a power supply of the rated current and cooling fix it"
    )


def case_sentences(c: dict) -> list[str]:
    """What else happened during one case, each with what it means for its numbers."""
    return [text for _, text in case_events(c)]


def case_events(c: dict) -> list[tuple[str, str]]:
    """What else happened during one case as (kind, sentence), kind one of not-idle, steal, smt, hot,
    throttled, not-applied (rtqual.answers.caveats gives each kind its flag)."""
    label, out = c.get("label"), []
    others, load = c.get("others_running") or {}, c.get("loadavg1_max")
    if c.get("idle") and (
        (others.get("mean") or 0) >= IDLE_OTHERS_MEAN or (not others and load is not None and load >= IDLE_LOAD_AVG)
    ):
        at = [f"at load average {load:g}"] if load is not None else []
        at += [f"with {others['mean']:.1f} other runnable tasks on average (at most {others['max']})"] if others else []
        out.append(("not-idle", f"case '{label}' ran {' '.join(at)}: not an idle measurement"))
    steal = c.get("steal_pct") or {}
    worst = max((steal.get("cpus") or {}).items(), key=lambda kv: kv[1], default=None)
    if worst and worst[1] >= STEAL_NOTE_PCT:
        out.append(("steal", f"steal {_pct(worst[1])} on cpu{worst[0]} during '{label}': the hypervisor took the CPU"))
    for s in c.get("smt_siblings") or []:
        if (s.get("busy_pct") or 0) >= SIBLING_BUSY_PCT:
            out.append((
                "smt",
                f"cpu{s['cpu']}'s SMT sibling cpu{s['sibling']} was {_pct(s['busy_pct'])} busy during '{label}': "
                "the core was shared, results pessimistic",
            ))  # fmt: skip
    t = c.get("temperature") or {}
    if t.get("hot"):
        limit = f"its trip point {t['trip_c']:g} °C" if t.get("trip_c") is not None else f"{HOT_C:g} °C"
        out.append((
            "hot",
            f"temperature {t['max_c']:g} °C ({t['sensor']}) reached {limit} during '{label}': the CPU may have "
            "slowed down",
        ))  # fmt: skip
    during = (c.get("throttled") or {}).get("during")
    if during:
        out.append((
            "throttled",
            f"the firmware reported {', '.join(during)} during '{label}': the CPU ran below its set frequency",
        ))  # fmt: skip
    if c.get("thermal_throttle_events"):
        out.append((
            "throttled",
            f"{c['thermal_throttle_events']} thermal throttling events on the measured CPUs during '{label}': "
            "the CPU ran below its set frequency",
        ))  # fmt: skip
    for n in c.get("conditions_not_applied") or []:
        where = f" on cpu{n['cpu']}" if n.get("cpu") is not None else ""
        out.append((
            "not-applied",
            f"condition {n.get('condition')} ({n.get('value')}) not applied{where} in '{label}' "
            f"({n.get('reason') or 'reason not recorded'}): the case ran without it",
        ))  # fmt: skip
    return out


def sentences(env: dict) -> list[str]:
    """What the environment means for the numbers: the host first, then each case's events."""
    out = host_sentences(env)
    for c in env.get("cases") or []:
        try:
            out += case_sentences(c)
        except _ODD_SHAPES:
            out.append(f"case '{c.get('label')}': its environment holds values of an unexpected shape: not stated")
    return out

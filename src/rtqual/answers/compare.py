"""Which cases of several bundles are the same case, and how their statistics relate: cases paired by hand
(`--match A_LABEL=B_LABEL`), else by id, else by label, as a standard and a PREEMPT_RT kernel, two boards, or
a scaled rehearsal and the full run (ids keep the nominal values); what differs between the bundles (kernel,
preemption, frequency, load, policy) and whether a difference is within the run-to-run spread. Pure functions
of loaded bundles, no printing: the comparison printers (publish.compare), the HTML comparison and
`rtqual check` (publish.store.trend) take their pairs here."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rtqual.answers import environment
from rtqual.answers.advice.advise import SETTINGS, settings
from rtqual.errors import RtqError
from rtqual.units import format_cpulist, format_ns

Match = dict[str, str]  # --match: a case of A (label or id) -> its partner in another bundle (label or id)


def parse_match(items: Iterable[str] | None) -> Match:
    """`--match A_LABEL=B_LABEL` options as {A's case: B's case}; RtqError for one without '=' or named twice."""
    out: Match = {}
    for item in items or []:
        a, sep, b = item.partition("=")
        if not sep or not a.strip() or not b.strip():
            raise RtqError(f"--match {item!r}: give A_LABEL=B_LABEL (a case label or id of each bundle)")
        if a.strip() in out:
            raise RtqError(f"--match: {a.strip()!r} is matched twice")
        out[a.strip()] = b.strip()
    return out


def find_case(bundle: dict, name: str) -> dict | None:
    """The case of a bundle with this label, else this id, else None."""
    return next((r for r in bundle["cases"] if r["label"] == name), None) or next(
        (r for r in bundle["cases"] if r["id"] == name), None
    )


def _labels(bundle: dict) -> str:
    return ", ".join(repr(r["label"]) for r in bundle["cases"]) or "none"


def ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where it means nothing (a missing or zero)."""
    return b / a if a and b is not None else None


def ratios(a: dict, b: dict, keys: Iterable[str]) -> dict[str, float | None]:
    """b / a of each latency statistic (key ending in _ns) among `keys`: counts and shares get no ratio."""
    return {k: ratio(a.get(k), b.get(k)) for k in keys if k.endswith("_ns")}


def pairs(a: dict, b: dict, match: Match | None = None) -> tuple[list[tuple[dict, dict]], list[str], list[str]]:
    """(case of A, case of B) in A's order: those paired by `match` (RtqError naming the labels where one
    names no case), then the same id, else (runs of different scenarios, e.g. with and without a timer
    baseline) the same label; then the ids left only in A, only in B."""
    left, matched, named = list(b["cases"]), {}, dict[str, str]()
    for name_a, name_b in (match or {}).items():
        ra, rb = find_case(a, name_a), find_case(b, name_b)
        if ra is None:
            raise RtqError(f"--match {name_a}={name_b}: {a['path']} has no case {name_a!r} (labels: {_labels(a)})")
        if ra["id"] in matched:  # its label and its id, each given a partner: one pair would be lost
            raise RtqError(f"--match: {named[ra['id']]!r} and {name_a!r} name the same case {ra['id']} of {a['path']}")
        named[ra["id"]] = name_a
        if rb is not None and rb not in left:
            raise RtqError(f"--match {name_a}={name_b}: case {rb['id']} of {b['path']} is matched twice")
        if rb is None:
            raise RtqError(f"--match {name_a}={name_b}: {b['path']} has no case {name_b!r} (labels: {_labels(b)})")
        matched[ra["id"]] = rb
        left.remove(rb)
    for key in ("id", "label"):
        for r in a["cases"]:
            m = None if r["id"] in matched else next((m for m in left if m[key] == r[key]), None)
            if m is not None:
                matched[r["id"]] = m
                left.remove(m)
    if not matched:
        raise RtqError(
            f"no case in common (same id or label): {a['path']} has "
            f"{', '.join(r['id'] for r in a['cases']) or 'none'}; {b['path']} has "
            f"{', '.join(r['id'] for r in b['cases']) or 'none'}; pair them with --match A_LABEL=B_LABEL"
        )
    return (
        [(r, matched[r["id"]]) for r in a["cases"] if r["id"] in matched],
        [r["id"] for r in a["cases"] if r["id"] not in matched],
        [r["id"] for r in left],
    )


def matches(bundles: list[dict], match: Match | None = None) -> list[list[dict | None]]:
    """Per case of the first bundle that another bundle also has: its result in every bundle (None where
    a bundle lacks it), paired like `pairs` (by `match`, id, else label). A `match` naming a case that no
    other bundle has is an RtqError."""
    first, rest = bundles[0], bundles[1:]
    found: dict[str, list[dict | None]] = {r["id"]: [r] + [None] * len(rest) for r in first["cases"]}
    ids: dict[str, str] = {}
    for name_a, name_b in (match or {}).items():
        ra = find_case(first, name_a)
        if ra is not None and ra["id"] in ids:  # as in pairs(): never one pair silently lost
            raise RtqError(
                f"--match: {ids[ra['id']]!r} and {name_a!r} name the same case {ra['id']} of {first['path']}"
            )
        if ra is not None:
            ids[ra["id"]] = name_a
        if find_case(first, name_a) is None:
            raise RtqError(
                f"--match {name_a}={name_b}: {first['path']} has no case {name_a!r} (labels: {_labels(first)})"
            )
        if not any(find_case(o, name_b) for o in rest):
            raise RtqError(f"--match {name_a}={name_b}: no other bundle has a case {name_b!r}")
    for i, other in enumerate(rest):
        here = {x: y for x, y in (match or {}).items() if find_case(other, y) is not None}
        try:
            both, _, _ = pairs(first, other, here)
        except RtqError:
            continue
        for ra, rb in both:
            found[ra["id"]][i + 1] = rb
    rows = [row for row in found.values() if any(x is not None for x in row[1:])]
    if not rows:
        raise RtqError(f"no case in common (same id or label) between {first['path']} and any other bundle")
    return rows


# ---- what differs between bundles, and whether a difference is within the run-to-run spread


def bundle_name(bundle: dict) -> str:
    """A bundle as figures name it: its folder's name (e.g. std, rt, rt-600MHz)."""
    return Path(str(bundle.get("path") or "?")).name or str(bundle.get("path"))


def bundle_names(bundles: list[dict]) -> list[str]:
    """Each bundle's name, made unique with its letter where two folders share a name."""
    raw = [bundle_name(b) for b in bundles]
    return [n if raw.count(n) == 1 else f"{n} ({chr(ord('A') + i) if i < 26 else i + 1})" for i, n in enumerate(raw)]


def _freq_text(facts: dict) -> str | None:
    """The CPU frequency policy of the host before the run: governor and frequency range of its first CPU."""
    per = ((facts.get("cpu") or {}).get("per_cpu") or [{}])[0] or {}
    if not per.get("governor"):
        return per.get("reason")
    lo, hi = per.get("scaling_min_freq_khz"), per.get("scaling_max_freq_khz")
    rng = f" {lo // 1000}-{hi // 1000} MHz" if isinstance(lo, int) and isinstance(hi, int) else ""
    return f"{per['governor']}{rng}"


def host_aspects(bundle: dict) -> dict[str, str]:
    """What a bundle was run on and how, as {aspect: value}: host, kernel, preemption, virtualization, CPU,
    CPU frequency policy (facts before the run), scenario (its plan); '?' where not recorded."""
    facts = bundle.get("facts") or {}
    kernel = facts.get("kernel") or {}
    preempt = facts.get("preempt") or {}
    hv, _ = environment.hypervisor(facts if isinstance(facts, dict) else None)
    virt = "bare metal" if hv == "none" else environment.HYPERVISOR_NAMES.get(hv, hv) if hv else None
    out = {
        "host": (bundle.get("manifest") or {}).get("hostname"),
        "kernel": " ".join(x for x in (kernel.get("release"), kernel.get("version")) if x) or None,
        "preemption": " ".join(x for x in (preempt.get("model"), preempt.get("dynamic_mode")) if x) or None,
        "virtualization": virt,
        "CPU": (facts.get("cpu") or {}).get("model"),
        "CPU frequency policy": _freq_text(facts) if facts else None,
        "scenario": (bundle.get("plan") or {}).get("name"),
    }
    return {k: str(v) if v is not None else "?" for k, v in out.items()}


def settings_differ(bundles: list[dict]) -> list[dict]:
    """The tunable settings `rtqual advise` checks that differ between the bundles, from each one's recorded
    host facts ("facts", "tuning"): [{"id": setting, "check": the advise check, "values": one per bundle}]
    in the checks' order; a setting some bundle did not record is left out (unknown is not a difference)."""
    each = [settings(b.get("facts"), b.get("tuning")) for b in bundles]
    return [
        {"id": name, "check": check, "values": [s[name] for s in each]}
        for name, (check, _) in SETTINGS.items()
        if all(name in s for s in each) and len({s[name] for s in each}) > 1
    ]


def settings_text(diff: list[dict], names: list[str] | None = None) -> str:
    """'settings that differ: rt-throttling (950000 → -1), isolcpus (none → 1)' for two bundles, each value
    named by its bundle for more; '' when none differ."""
    if not diff:
        return ""
    two = len(diff[0]["values"]) == 2 and names is None
    shown = [
        " → ".join(d["values"]) if two else ", ".join(f"{n} {v}" for n, v in zip(names or [], d["values"]))
        for d in diff
    ]
    return "settings that differ: " + ", ".join(f"{d['id']} ({v})" for d, v in zip(diff, shown))


def _loads_text(r: dict) -> str:
    return "+".join(str(ld.get("name") or ld.get("type")) for ld in r.get("loads") or []) or "idle"


def _frequency_text(r: dict) -> str:
    """The frequency a case asked for (and whether it was applied), and the range measured during it."""
    words = []
    for c in (r.get("conditions") or {}).get("changes") or []:
        if c.get("condition") in ("frequency", "governor"):
            words.append(f"{c['condition']} {c.get('after')}" + ("" if c.get("applied") else " not applied"))
    rng = (r.get("host_samples") or {}).get("freq_khz_range")
    if isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int | float) for x in rng):
        words.append(f"measured {rng[0] / 1000:.0f}-{rng[1] / 1000:.0f} MHz")
    return ", ".join(words) or "not set"


CPU_KEYS = ("cpus", "cpu", "client_cpu", "broker_cpu", "server_cpu", "stimulus_cpu", "peer_cpu")
"""The probes' CPU options: a case is pinned where one of them is set (an int >= 0, a list, a CPU list text)."""


def cpus_text(p: dict) -> str:
    """The CPUs a case's probe was bound to ('0-1', 'client 1, server 2'), 'unpinned' where none was set."""
    words = []
    for key in CPU_KEYS:
        v = p.get(key)
        if isinstance(v, list) and v and all(isinstance(c, int) for c in v):
            v = format_cpulist(v)
        elif isinstance(v, bool) or not ((isinstance(v, int) and v >= 0) or (isinstance(v, str) and v)):
            continue
        words.append(str(v) if key in ("cpus", "cpu") else f"{key.removesuffix('_cpu')} {v}")
    return ", ".join(words) or "unpinned"


def _policy_text(p: dict) -> str:
    """The scheduling policy and priority of a case's probe, and those of its parts where set apart (msg)."""
    words = [f"{p.get('policy')} {p.get('priority')}" if p.get("policy") else "?"]
    for part in ("client", "broker", "server"):
        if p.get(f"{part}_policy") or p.get(f"{part}_priority") is not None:
            words.append(f"{part} {p.get(f'{part}_policy') or p.get('policy')} {p.get(f'{part}_priority')}")
    return ", ".join(words)


def case_aspects(r: dict) -> dict[str, str]:
    """How one case ran, as {aspect: value}: probe, load, policy, frequency, interval, rate, transport,
    duration, CPUs (the probe's parameters that change its numbers)."""
    p = r.get("params") or {}
    rate = p.get("rate_hz", p.get("rate"))
    return {
        "probe": str(r.get("run_as") or r.get("probe") or "?"),
        "load": _loads_text(r),
        "policy": _policy_text(p),
        "frequency": _frequency_text(r),
        "interval": format_ns(p["interval_ns"]) if p.get("interval_ns") else "-",
        "rate": f"{rate}/s" if isinstance(rate, int | float) and rate else "-",
        "transport": str(p.get("transport") or "-"),
        "duration": format_ns(p["duration_ns"]) if p.get("duration_ns") else "-",
        "CPUs": cpus_text(p),
    }


def differences(aspects: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """The aspects whose values are not all equal, as (aspect, value per item), in the aspects' order."""
    keys = list(dict.fromkeys(k for a in aspects for k in a))
    return [(k, [a.get(k, "?") for a in aspects]) for k in keys if len({a.get(k, "?") for a in aspects}) > 1]


def repeats(bundle: dict, r: dict) -> list[dict]:
    """The cases of a bundle run the same way as r (same probe, load, policy, frequency, interval and CPUs;
    durations may differ), r among them: their spread is the bundle's run-to-run spread."""

    def setup(x: dict) -> tuple:
        a = case_aspects(x)
        return (x.get("probe"), a["load"], a["policy"], a["frequency"].split(", measured")[0], a["interval"],
                a["CPUs"], a["rate"], a["transport"])  # fmt: skip

    return [x for x in bundle["cases"] if (x.get("stats") or {}).get("count") and setup(x) == setup(r)]


def spread_ns(bundle: dict, r: dict, key: str) -> tuple[float, str] | None:
    """The run-to-run spread of one statistic around case r: the range over its repeated cases, else over
    its CPUs, as (ns, what it was taken over); None where neither exists (one case, one CPU)."""
    reps = [x["stats"][key] for x in repeats(bundle, r) if x["stats"].get(key) is not None]
    if len(reps) > 1:
        return max(reps) - min(reps), f"{len(reps)} repeated cases"
    cpus = [s[key] for s in (r.get("per_cpu") or {}).values() if isinstance(s, dict) and s.get(key) is not None]
    if len(cpus) > 1:
        return max(cpus) - min(cpus), f"{len(cpus)} CPUs"
    return None


def spread_note(bundles: list[dict], row: list[dict | None], names: list[str], key: str, what: str) -> str:
    """Whether the differences of one statistic between the bundles' results of a case are within the
    run-to-run spread: 'max: B 1.2 ms vs A 0.8 ms differs by 400us, within the spread of 5 repeated cases
    (600us)', or that the spread cannot be known from these bundles."""
    have = [(n, b, r) for n, b, r in zip(names, bundles, row) if r and (r.get("stats") or {}).get(key) is not None]
    if len(have) < 2:
        return ""
    values = [r["stats"][key] for _, _, r in have]
    diff = max(values) - min(values)
    spreads = [s for s in (spread_ns(b, r, key) for _, b, r in have) if s]
    head = (
        f"{what}: {', '.join(f'{n} {format_ns(v)}' for (n, _, _), v in zip(have, values))}, differ by {format_ns(diff)}"
    )
    if diff == 0:
        return f"{what}: {', '.join(n for n, _, _ in have)} equal ({format_ns(values[0])})"
    if not spreads:
        return f"{head}; run-to-run spread unknown (one CPU and no repeated case): the difference may be noise"
    widest = max(spreads)
    where = "within" if diff <= widest[0] else "larger than"
    return f"{head}, {where} the run-to-run spread ({format_ns(widest[0])} over {widest[1]})"


def groups(bundles: list[dict]) -> list[list[int]]:
    """Which bundles' cases are paired with each other: those of the same scenario (a kernel's timer study
    with the other kernel's, its IOC study with the other's); all together where no scenario has two.
    Every bundle is in a group: those alone in their scenario together (one alone joins the first group)."""
    by_scenario: dict[str, list[int]] = {}
    for i, b in enumerate(bundles):
        by_scenario.setdefault(str((b.get("plan") or {}).get("name")), []).append(i)
    paired = [g for g in by_scenario.values() if len(g) > 1]
    alone = [g[0] for g in by_scenario.values() if len(g) == 1]
    if len(alone) == 1 and paired:
        paired[0] = sorted(paired[0] + alone)
    elif alone:
        paired.append(alone)
    return sorted(paired)


def grouped_matches(bundles: list[dict], match: Match | None = None) -> list[list[dict | None]]:
    """matches() within each group of bundles (groups), each row as long as `bundles` (None where a bundle is
    not in the group or lacks the case): every bundle's cases, not only those the first bundle shares. A
    group with no case in common is left out; none at all is an RtqError."""
    rows: list[list[dict | None]] = []
    problems = []
    for group in groups(bundles):
        sub = [bundles[i] for i in group]
        here = {x: y for x, y in (match or {}).items() if find_case(sub[0], x)}
        try:
            found = matches(sub, here)
        except RtqError as e:
            problems.append(str(e))
            continue
        for row in found:
            full: list[dict | None] = [None] * len(bundles)
            for i, r in zip(group, row):
                full[i] = r
            rows.append(full)
    if not rows:
        raise RtqError(problems[0] if problems else "no case in common")
    return rows


LABEL_ASPECTS = ("kernel", "preemption", "virtualization", "host", "CPU", "CPU frequency policy", "scenario")
"""The host aspects a bundle's label is made of, in this order, where they differ among the compared bundles."""


def bundle_labels(bundles: list[dict]) -> list[str]:
    """Each bundle named by what differs among them: its kernel release where that differs (a std and an RT
    kernel), else its preemption model, with its folder's name first where that alone does not tell them
    apart and the folders do (a timer and an IOC study of each kernel), else with the next aspects that differ
    (hypervisor, host, CPU, frequency policy, scenario) until it does; the folder's name where nothing
    recorded differs; made unique with its letter where two are still the same."""
    aspects = [host_aspects(b) | short_kernel(b) for b in bundles]
    diff = dict(differences(aspects))
    usable = [k for k in LABEL_ASPECTS if k in diff and "?" not in diff[k]]
    folders = [bundle_name(b) for b in bundles]

    def named(keys: list[str]) -> list[str]:
        return [" ".join(a[k] for k in keys) for a in aspects]

    keys: list[str] = (
        [next(k for k in ("kernel", "preemption") if k in usable)] if {"kernel", "preemption"} & set(usable) else []
    )  # the release (an RT kernel's says rt), else the preemption model: short enough for a legend
    raw = named(keys) if keys else folders
    if keys and len(set(raw)) < len(raw):
        if len(set(folders)) == len(folders):
            raw = [f"{f} {n}" for f, n in zip(folders, raw)]
        else:
            for k in usable:
                if len(set(raw)) == len(raw):
                    break
                keys += [] if k in keys else [k]
                raw = named(keys)
    return [n if raw.count(n) == 1 else f"{n} ({chr(ord('A') + i) if i < 26 else i + 1})" for i, n in enumerate(raw)]


def short_kernel(bundle: dict) -> dict[str, str]:
    """The kernel aspects as a label says them: the release alone, the preemption model alone."""
    facts: dict = bundle["facts"] if isinstance(bundle.get("facts"), dict) else {}
    release = (facts.get("kernel") or {}).get("release")
    model = (facts.get("preempt") or {}).get("model")
    return {"kernel": str(release or "?"), "preemption": str(model or "?")}

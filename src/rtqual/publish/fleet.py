"""`rtqual fleet`: many hosts' bundles side by side (docs/fleet.md). One row per host, worst first; the
hosts whose p99 or max lies beyond the fleet's spread (Tukey's fence); the host facts that differ among the
hosts, grouped with the verdicts of each group, so a pattern shows. Pure functions of bundle models."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rtqual.answers import caveats
from rtqual.answers.answer import answer_lines, answers
from rtqual.answers.requirements import profile as requirements_of
from rtqual.answers.verdict import ORDER, judge, rank, worst
from rtqual.publish.views import format_cell, kind
from rtqual.results.facts import get_fact
from rtqual.textfmt import clean, format_table

OUTLIER_STATS = ("p99_ns", "max_ns")
MIN_HOSTS_FOR_OUTLIERS = 4
"""Fewer hosts than this have no quartiles worth a fence: no host is called an outlier."""
FENCE_IQR = 1.5
"""Tukey's fence: beyond Q3 + 1.5 x (Q3 - Q1) of the fleet's values."""


def _governors(facts: Mapping[str, Any]) -> str | None:
    """The CPU governors in use ('performance', 'ondemand+performance'), None when unknown."""
    per_cpu = get_fact(dict(facts), "cpu.per_cpu") or []
    names = sorted({e.get("governor") or "none" for e in per_cpu if isinstance(e, dict)})
    return "+".join(names) if names else None


FACTS: dict[str, Any] = {
    "kernel": lambda f: get_fact(f, "kernel.release"),
    "preempt": lambda f: get_fact(f, "preempt.model"),
    "governor": _governors,
    "isolated": lambda f: get_fact(f, "cpu.isolated") or "none",
    "nohz_full": lambda f: get_fact(f, "cpu.nohz_full") or "none",
    "cpu": lambda f: get_fact(f, "cpu.model"),
    "board": lambda f: get_fact(f, "cpu.board"),
    "virtualized": lambda f: get_fact(f, "virtualization.virtualized"),
    "machine": lambda f: get_fact(f, "kernel.machine"),
}
"""The facts compared among hosts: name -> reader of a host facts snapshot (discrete values, grouped)."""


def host_facts(facts: Mapping[str, Any] | None) -> dict[str, Any]:
    """The compared facts of one snapshot, plus the 1-minute load (shown, not grouped)."""
    f = dict(facts or {})
    out = {name: read(f) for name, read in FACTS.items()}
    out["load_1m"] = get_fact(f, "load.avg_1m")
    return out


def rejudged(case: dict, profile: str, hist: Any) -> dict:
    """A stored case judged again against a profile's requirements alone (its own requirements dropped): a
    clean measurement (pass or completed) takes the profile's verdict; skip, inconclusive, error stay."""
    clean = case.get("verdict") in ("pass", "completed")
    base = {**case, "requirement_verdicts": [], "verdict": "completed" if clean else case.get("verdict")}
    return judge(base, requirements_of(profile), hist, profile)


PROFILE_KINDS = frozenset({"timer", "ioc", "interrupt", "wake-up", "timer-interrupt", "fake"})
"""The kinds of case (rtqual.publish.views.kind) a profile's requirements are about: a cycle's wake-up or an
input's response (and the fake probe's replayed latencies, which stand in for them in tests); a message round
trip, a context switch or a transfer is no such number."""


def judgeable(results: Sequence[dict]) -> list[dict]:
    """The cases a profile may judge (PROFILE_KINDS)."""
    return [r for r in results if kind(r) in PROFILE_KINDS]


def run_key(model: Any) -> tuple:
    """What names one run wherever its bundle was copied: host, start, end and scenario of its manifest."""
    m = model.manifest
    return (m.get("hostname"), m.get("start"), m.get("end"), json.dumps(m.get("argv"), default=str))


def hostname(model: Any) -> str | None:
    """The host a bundle was measured on: its host facts' hostname, else its manifest's."""
    facts = model.facts("before") or {}
    name = facts.get("hostname") if isinstance(facts, dict) else None
    return str(name or model.manifest.get("hostname") or "") or None


def by_host(found: Sequence[tuple[str | None, Any]]) -> dict[str, list]:
    """{host: [bundle models]} from (the folder's host name or None, model), each run once (copies of one
    bundle, e.g. the host's and a fetched one, are one run: run_key). A host is its hostname fact; where one
    hostname stands in several host folders (Ansible's <results>/<inventory_hostname>/, Raspberry Pis all
    called raspberrypi) each folder is a host of its own, named by the folder; bundles of several hosts in
    one folder (fleet-work/) are each their own host's."""
    seen: set[tuple] = set()
    keyed: dict[tuple[str | None, str | None], list] = {}
    for folder, m in found:
        if (key := run_key(m)) in seen:
            continue
        seen.add(key)
        keyed.setdefault((folder, hostname(m)), []).append(m)
    names = [h for _, h in keyed]
    out: dict[str, list] = {}
    for (folder, host), models in keyed.items():
        name = host if host and names.count(host) == 1 else folder or host or models[0].path.name
        out.setdefault(name, []).extend(models)
    return out


def host_entry(host: str, models: Sequence[Any], hists: Callable[[Any], dict] | None = None,
               profile: str | None = None, advice: Callable[[Any], list[dict]] | None = None,
               quals: Callable[[Any], list[dict]] | None = None) -> dict:  # fmt: skip
    """One host from its bundles: the latest run (by start time) is the host's standing; all are listed.
    hists(model): each case's merged histogram by case id (the answers count samples over a limit with it);
    profile: the cases judged again against that profile, the latest run that has cases of a kind it is about
    (judgeable) standing for the host; advice(model): rtqual advise's findings for the bundle's host (its
    blockers are listed); quals(model): the caveat records of its cases (rtqual.answers.caveats)."""
    ordered = sorted(models, key=lambda m: str(m.manifest.get("start") or ""))
    latest = ordered[-1]
    if profile:
        latest = next((m for m in reversed(ordered) if judgeable(m.cases)), latest)
    manifest = latest.manifest
    by_id = hists(latest) if hists else {}
    results = list(latest.cases)
    if profile:
        results = [rejudged(c, profile, by_id.get(c.get("id"))) for c in judgeable(results)]
    said = {c["id"]: caveats.words(c) for c in (quals(latest) if quals else [])}
    cases = {
        c.get("label") or c.get("id"): {
            "verdict": c.get("verdict"),
            **{k: (c.get("stats") or {}).get(k) for k in ("count", "p99_ns", "max_ns")},
            "kind": _kind(c),
            "scenario": (latest.plan or {}).get("name"),
            "caveats": said.get(c.get("id")) or "",
        }
        for c in results
    }
    judged = worst(c["verdict"] for c in cases.values() if c["verdict"] in ORDER)
    verdict = judged if profile else manifest.get("verdict") or judged
    if profile and not cases:
        verdict = "inconclusive"  # none of its runs has a case the profile is about
    return {
        "host": host,
        "bundles": [str(m.path) for m in ordered],
        "bundle": str(latest.path),
        "verdict": verdict,
        "answer": answers(results, by_id),  # as `rtqual show --json` gives it
        "not_judged": (
            f"no case of its runs is of a kind profile {profile} judges ({', '.join(sorted(PROFILE_KINDS))})"
            if profile and not cases
            else None
        ),
        "cases": cases,
        "facts": host_facts(latest.facts("before")),
        "outlier": [],
        "damage": bool(latest.damage),
        "blockers": [
            {"id": f.get("id"), "why": f.get("why")}
            for f in (advice(latest) if advice else [])
            if f.get("severity") == "blocker"
        ],
    }


def _fence(values: Sequence[float]) -> float | None:
    """Tukey's upper fence of the values, None when there are too few of them."""
    if len(values) < MIN_HOSTS_FOR_OUTLIERS:
        return None
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 + FENCE_IQR * (q3 - q1)


def _kind(r: dict) -> str:
    return kind(r)


def _like(c: dict) -> tuple:
    """What must be equal for two hosts' cases to be compared: the kind of case and the scenario."""
    return c.get("kind"), c.get("scenario")


def mark_outliers(hosts: list[dict]) -> None:
    """Fill each host's 'outlier' with {case, stat, value_ns, fence_ns} where its value of a case present on
    enough hosts is beyond the fleet's fence (the fleet: every host with that case, of the same kind and
    scenario: like with like)."""
    for label, like in sorted({(lb, _like(h["cases"][lb])) for h in hosts for lb in h["cases"]}, key=str):
        for stat in OUTLIER_STATS:
            have = [(h, h["cases"][label].get(stat)) for h in hosts if label in h["cases"]]
            have = [(h, v) for h, v in have if _like(h["cases"][label]) == like]
            have = [(h, v) for h, v in have if isinstance(v, int | float)]
            fence = _fence([v for _, v in have])
            if fence is None:
                continue
            for h, v in have:
                if v > fence:
                    h["outlier"].append({"case": label, "stat": stat, "value_ns": v, "fence_ns": round(fence)})


def groups(hosts: list[dict]) -> list[dict]:
    """For each compared fact whose value differs among hosts: its values, the hosts and their verdicts."""
    out = []
    for name in FACTS:
        by_value: dict[str, list[dict]] = {}
        for h in hosts:
            by_value.setdefault(str(h["facts"].get(name)), []).append(h)
        if len(by_value) < 2:
            continue
        values = []
        for value, members in sorted(by_value.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            counts: dict[str, int] = {}
            for h in members:
                counts[h["verdict"]] = counts.get(h["verdict"], 0) + 1
            values.append({"value": value, "hosts": [h["host"] for h in members], "verdicts": counts})
        out.append({"fact": name, "values": values})
    return out


def _worst_max(h: dict) -> int:
    """The host's largest max over its cases (a sort key)."""
    return max((c.get("max_ns") or 0 for c in h["cases"].values()), default=0)


def build(
    hosts_models: Mapping[str, Sequence[Any]],
    hists: Callable[[Any], dict] | None = None,
    profile: str | None = None,
    advice: Callable[[Any], list[dict]] | None = None,
    quals: Callable[[Any], list[dict]] | None = None,
) -> dict:
    """The fleet document from {host: [bundle models]}: hosts worst first, outliers marked, groups."""
    hosts = [host_entry(host, models, hists, profile, advice, quals) for host, models in hosts_models.items()]
    mark_outliers(hosts)
    hosts.sort(key=lambda h: (-_rank(h["verdict"]), -len(h["outlier"]), -_worst_max(h), h["host"]))
    return {"hosts": hosts, "groups": groups(hosts)}


def _rank(verdict: str | None) -> int:
    """A verdict's rank (worse is higher); an unknown word (a newer rtqual's) sorts with the worst."""
    try:
        return rank(str(verdict))
    except ValueError:
        return len(ORDER)


def text(doc: dict) -> str:
    """The fleet as text: the host table, each case's table of hosts, the differing facts, the answers."""
    hosts = doc["hosts"]
    n_bundles = sum(len(h["bundles"]) for h in hosts)
    plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"
    out = [f"fleet: {plural(len(hosts), 'host')}, {plural(n_bundles, 'bundle')} (each host's latest run; worst first)"]
    out.append("")
    rows = [
        [h["host"], str(h["verdict"]), str(len(h["bundles"])), str(h["facts"].get("kernel")),
         str(h["facts"].get("preempt")), format_cell("max_ns", _worst_max(h) or None),
         ", ".join(f"{o['case']} {o['stat'].removesuffix('_ns')}" for o in h["outlier"]) or "-"]
        for h in hosts
    ]  # fmt: skip
    out.append(format_table(["host", "verdict", "bundles", "kernel", "preempt", "worst max", "outlier"], rows))
    for label in sorted({label for h in hosts for label in h["cases"]}):
        case_rows = [
            [h["host"], str(c.get("verdict")), format_cell("count", c.get("count")),
             format_cell("p99_ns", c.get("p99_ns") if caveats.carried("p99_ns", c.get("count")) else None),
             format_cell("max_ns", c.get("max_ns")), f"{c.get('kind')}, {c.get('scenario') or 'no scenario'}",
             c.get("caveats") or "-"]
            for h in hosts if (c := h["cases"].get(label)) is not None
        ]  # fmt: skip
        head = ["host", "verdict", "count", "p99", "max", "kind, scenario", "caveats"]
        out += ["", clean(f"case: {label}"), format_table(head, case_rows)]
        counts = [c.get("count") for h in hosts if (c := h["cases"].get(label)) is not None]
        if any(not caveats.carried("p99_ns", n) for n in counts):
            out.append(f"p99 '-': fewer than {caveats.needed('p99_ns'):,} samples carry it")
    for h in hosts:
        if h.get("not_judged"):
            out += ["", clean(f"{h['host']}: not judged: {h['not_judged']}")]
    if len(hosts) < MIN_HOSTS_FOR_OUTLIERS:
        out += ["", f"outliers: not judged with fewer than {MIN_HOSTS_FOR_OUTLIERS} hosts"]
    out += ["", "what differs among the hosts:" if doc["groups"] else "the hosts agree in every compared fact"]
    for g in doc["groups"]:
        parts = [
            f"{v['value']} ({len(v['hosts'])} host{'s' if len(v['hosts']) != 1 else ''}: "
            + ", ".join(f"{n} {word}" for word, n in sorted(v["verdicts"].items(), key=lambda kv: _rank(kv[0])))
            + ")"
            for v in g["values"]
        ]
        out.append(clean(f"  {g['fact']}: " + "; ".join(parts)))
    blocked = [h for h in hosts if h.get("blockers")]
    if blocked:
        out += ["", "blockers (rtqual advise on each host's recorded facts):"]
        for h in blocked:
            out += [clean(f"  {h['host']}: {b['id']}: {b['why']}") for b in h["blockers"]]
    answered = [h for h in hosts if h["answer"]]
    if answered:
        out += ["", "answers:"]
        for h in answered:
            out += [clean(f"  {h['host']}: {line}") for line in answer_lines(h["answer"])]
    return "\n".join(out)


def json_doc(doc: dict) -> dict:
    """The `rtqual fleet --json` document (a contract: keys are never renamed)."""
    keys = ("host", "bundles", "verdict", "answer", "outlier", "facts", "cases", "blockers", "not_judged")
    return {"hosts": [{k: h[k] for k in keys} for h in doc["hosts"]], "groups": doc["groups"]}


def find(paths: Sequence[str]) -> list[tuple[str | None, Path]]:
    """The bundles named or found under folders: (host, path). A bundle in DIR/HOST/ (Ansible's
    `<rtqual_results>/<inventory_hostname>/`) is HOST's; any other bundle's host is None (its manifest says)."""
    found: list[tuple[str | None, Path]] = []
    for p in map(Path, paths):
        if (p / "manifest.json").is_file() or not p.is_dir():
            found.append((None, p))  # a bundle (or what the loader will refuse in one line)
            continue
        for manifest in sorted(p.rglob("manifest.json")):
            bundle = manifest.parent
            if any(parent != bundle and (parent / "manifest.json").is_file() for parent in bundle.parents):
                continue  # a folder inside a bundle (an imported bundle's copy), not a bundle of the fleet
            found.append((bundle.parent.name if bundle.parent != p else None, bundle))
    return found


VERDICT_COLOURS = {"pass": "#2e7d32", "completed": "#2e7d32", "skip": "#757575", "inconclusive": "#ef6c00",
                   "fail": "#c62828", "error": "#6a1b9a"}  # fmt: skip


def _heat(case: dict, medians: dict[str, float | None]) -> str:
    """A cell's background from the case's p99 and max against the fleet's medians of them, the farther of
    the two: white at the median, redder the more times above it (log2, full at 8x), bluer below; grey
    without a value."""
    import math

    ratios = [
        math.log2(v / m) for stat, m in medians.items() if isinstance(v := case.get(stat), int | float) and v > 0 and m
    ]
    if not ratios:
        return "#eeeeee"
    x = max(-1.0, min(1.0, max(ratios, key=abs) / 3))
    shade = round(255 * (1 - abs(x)))
    return f"rgb(255,{shade},{shade})" if x >= 0 else f"rgb({shade},{shade},255)"


def _median(hosts: list[dict], label: str, stat: str) -> float | None:
    """The fleet's median of a case's statistic (the hosts that have it), None without values."""
    values = [(h["cases"].get(label) or {}).get(stat) for h in hosts]
    numbers = [v for v in values if isinstance(v, int | float)]
    return statistics.median(numbers) if numbers else None


def html(doc: dict, out_dir: Path) -> str:
    """The fleet as one self-contained HTML page: a heat map of hosts x cases (p99 over max, coloured by how
    far they are from the fleet's medians of the case, framed by the verdict), each host linked to its bundle's own
    report.html, then the differing facts and the answers."""
    from html import escape
    from os.path import relpath

    hosts = doc["hosts"]
    labels = sorted({label for h in hosts for label in h["cases"]})
    medians = {label: {stat: _median(hosts, label, stat) for stat in OUTLIER_STATS} for label in labels}
    head = "".join(f"<th>{escape(label)}</th>" for label in labels)
    rows = []
    for h in hosts:
        report = Path(h["bundle"]) / "report.html"
        name = escape(h["host"])
        link = f'<a href="{escape(relpath(report, out_dir))}">{name}</a>' if report.is_file() else name
        flag = " &#9888; outlier" if h["outlier"] else ""
        cells = []
        for label in labels:
            c = h["cases"].get(label)
            if c is None:
                cells.append('<td class="none">-</td>')
                continue
            colour = VERDICT_COLOURS.get(str(c.get("verdict")), "#000")
            cells.append(
                f'<td style="background:{_heat(c, medians[label])};border:3px solid {colour}" '
                f'title="{escape(str(c.get("verdict")))} {escape(str(c.get("caveats") or ""))}">'
                f"{format_cell('p99_ns', c.get('p99_ns') if caveats.carried('p99_ns', c.get('count')) else None)}"
                + (f' <span class="warn">&#9888; {escape(str(c["caveats"]))}</span>' if c.get("caveats") else "")
                + "<br>"
                f"<small>max {format_cell('max_ns', c.get('max_ns'))}</small></td>"
            )
        verdict = escape(str(h["verdict"]))
        rows.append(
            f'<tr><th class="host">{link}{flag}</th><td style="color:{VERDICT_COLOURS.get(str(h["verdict"]), "#000")}">'
            f"<b>{verdict}</b></td><td>{escape(str(h['facts'].get('kernel')))}</td>{''.join(cells)}</tr>"
        )
    groups = (
        "".join(
            f"<li><b>{escape(g['fact'])}</b>: "
            + "; ".join(
                f"{escape(v['value'])} ({len(v['hosts'])}: "
                + escape(", ".join(f"{n} {w}" for w, n in v["verdicts"].items()))
                + ")"
                for v in g["values"]
            )
            + "</li>"
            for g in doc["groups"]
        )
        or "<li>the hosts agree in every compared fact</li>"
    )
    said = "".join(
        f"<li><b>{escape(h['host'])}</b>: {escape(line)}</li>" for h in hosts for line in answer_lines(h["answer"])
    )
    blockers = "".join(
        f"<li><b>{escape(h['host'])}</b>: {escape(str(b['id']))}: {escape(str(b['why']))}</li>"
        for h in hosts
        for b in h.get("blockers", [])
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>rtqual fleet</title><style>"
        "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:.3em .6em;"
        "text-align:right;border:1px solid #ccc}th.host{text-align:left}td.none{color:#999}</style></head><body>"
        f"<h1>rtqual fleet: {len(hosts)} hosts</h1>"
        "<p>One row per host (its latest run), worst first. Each cell: p99 over max; the colour is the p99 or the max, "
        "whichever is farther from the fleet's median of it in that case (white: the median, red: up to 8&times; "
        "above, blue: below); the frame "
        "is the case's verdict. A host's name opens its bundle's own report (figures).</p>"
        f"<table><tr><th>host</th><th>verdict</th><th>kernel</th>{head}</tr>{''.join(rows)}</table>"
        f"<h2>What differs among the hosts</h2><ul>{groups}</ul>"
        + (f"<h2>Answers</h2><ul>{said}</ul>" if said else "")
        + (f"<h2>Blockers (rtqual advise)</h2><ul>{blockers}</ul>" if blockers else "")
        + "</body></html>\n"
    )

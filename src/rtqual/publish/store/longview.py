"""What `rtqual history --report` draws, read from the store (docs/store.md "Long-term views"): the monitor
windows per UTC day (their histograms), their max and p99.99 per time step, the kernels they ran on, the
captured spikes (where the store has a `spikes` table), the stored runs and the settings that changed between
them (their bundles' recorded facts, as `rtqual compare` names them). Data only; the page is
rtqual.publish.htmlreport.longview."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtqual.answers import compare
from rtqual.answers.advice.advise import settings
from rtqual.answers.requirements import STATS, Requirement
from rtqual.errors import RtqError
from rtqual.publish.store import Store
from rtqual.publish.store.shadows import case_hist
from rtqual.results import bundle as bundle_mod
from rtqual.results.window import coarse_bins

STEPS_S = (60, 300, 900, 1800, 3600, 86400, 7 * 86400)  # a day and more: from window_days
MAX_POINTS = 2000  # the max/p99.99 figure: at most this many time steps (83 days in hours; a year in days)
SCAN_WINDOWS = 100_000  # steps shorter than a day read the windows themselves: at most this many, else days
RUN_BUNDLES = 200  # settings changes between runs: read from the latest this many runs' bundles
CMDLINE_CHARS = 160
SPIKES_READ = 1000  # the largest captured spikes of the range read (marked and listed from these)


def step_for(span_s: float) -> int:
    """The time step of the max/p99.99 figure: the shortest of STEPS_S giving at most MAX_POINTS steps."""
    return next((st for st in STEPS_S if span_s / st <= MAX_POINTS), STEPS_S[-1])


def gather(
    s: Store, host: str | None, since_unix_s: float | None, reqs: list[Requirement], case: str | None = None
) -> dict[str, Any]:
    """Everything the long-term page draws, or RtqError (one line) when the store holds no window and no run
    for the range: a page without data says nothing. case: only the stored runs' cases of this label (a part of
    it) or id (monitor windows have no case)."""
    days = s.window_days(host, since_unix_s)
    span = _span(days, since_unix_s)
    rows = s.history(host, case, since_unix_s)
    starts = [r["started_unix_s"] for r in rows if r["started_unix_s"] is not None]
    if span is None and not starts:
        where = f"host {host}" if host else "any host"
        raise RtqError(
            f"history --report: no monitor windows and no runs of {where} in {s.where}{_range(since_unix_s)}"
        )
    lo = min([*starts, *(span[:1] if span else [])])
    hi = max([*starts, *(span[1:] if span else [])])
    step = step_for(hi - lo)
    if sum(d["windows"] for d in days) > SCAN_WINDOWS:  # more windows than one quick scan: the day rows
        step = max(step, 86400)
    limits: dict[str, tuple[float, str]] = {}  # stat -> (limit ns, its text): the page's requirement lines
    given = reqs or _stored_requirements(rows)
    for r in given:
        tighter = r.stat not in limits or r.limit < limits[r.stat][0]
        if r.stat in ("max", "p99.99") and r.stat in STATS and r.upper and tighter:
            limits[r.stat] = (r.limit, r.text)
    return {
        "where": s.where,
        "host": host,
        "since_unix_s": since_unix_s,
        "span": (lo, hi),
        "step_s": step,
        "days": days,
        "series": s.window_series(host, since_unix_s, step) if span else [],
        "spikes": s.spikes(host, since_unix_s, limit=SPIKES_READ),
        "spikes_table": s.has_table("spikes"),
        "runs": rows,
        "run_hists": run_histograms(rows),
        "changes": sorted(window_changes(days) + run_changes(rows), key=lambda c: c["unix_s"] or 0),
        "limits": limits,
        "requirements_from": "given" if reqs else "the runs' requirements" if given else None,
    }


def _span(days: list[dict], since_unix_s: float | None) -> tuple[float, float] | None:
    """The windows' first start (not before since) and last end, from their days; None without windows."""
    if not days:
        return None
    return max(min(d["first_unix_s"] for d in days), since_unix_s or 0), max(d["end_unix_s"] for d in days)


def _range(since_unix_s: float | None) -> str:
    import time

    return f" since {time.strftime('%Y-%m-%d %H:%M', time.gmtime(since_unix_s))} UTC" if since_unix_s else ""


def _stored_requirements(rows: list[dict]) -> list[Requirement]:
    """The requirements the stored runs' cases were judged by (the store keeps each as 'TEXT: verdict (...)')."""
    from rtqual.answers.requirements import from_bundle

    out = []
    judged = {t.partition(":")[0].strip() for r in rows for t in str(r.get("requirement") or "").split(";")}
    for text in sorted(t for t in judged if t):  # 'max <= 100us: pass (...)': the text before its verdict
        req = from_bundle(text)
        if req is not None:
            out.append(req)
    return out


def window_changes(days: list[dict]) -> list[dict]:
    """Where the monitor's kernel (release, preemption model) changed: per host, at the first window on a kernel
    other than the one before it (a return to an earlier kernel is a change too), in time order."""
    out, last = [], dict[str, tuple[str, str]]()
    for d in sorted(days, key=lambda d: (d["first_unix_s"], d["host"])):
        now, before = (d["kernel"], d["preempt"]), last.get(d["host"])
        if before is not None and now != before:
            out.append(
                {
                    "unix_s": d["first_unix_s"],
                    "host": d["host"],
                    "what": "kernel",
                    "from": " ".join(before).strip() or "?",
                    "to": " ".join(now).strip() or "?",
                    "source": "monitor windows",
                }
            )
        last[d["host"]] = now
    return out


def run_aspects(bundle: str | None, row: dict) -> dict[str, str]:
    """A stored run's settings: kernel, preemption, CPU frequency policy, the kernel command line and the settings
    `rtqual advise` checks, from its bundle's recorded facts; the store's kernel and preemption where the bundle
    cannot be read."""
    out = {"kernel": str(row.get("kernel") or "?"), "preemption": str(row.get("preempt") or "?")}
    if not bundle or not Path(bundle).is_dir():
        return out
    try:
        model = bundle_mod.load(bundle)
        facts, tuning = model.facts(), model.tuning()
    except (RtqError, OSError, ValueError):
        return out
    view = {"manifest": model.manifest, "facts": facts, "plan": None}
    aspects = compare.host_aspects(view)
    out.update({k: aspects[k] for k in ("kernel", "preemption", "CPU frequency policy")})
    cmdline = ((facts or {}).get("cmdline") or {}).get("full") if isinstance(facts, dict) else None
    if cmdline:
        out["cmdline"] = str(cmdline)[:CMDLINE_CHARS]
    out.update(settings(facts, tuning))  # the settings `rtqual compare` names when they differ
    return out


def run_changes(rows: list[dict]) -> list[dict]:
    """Where a setting changed between consecutive stored runs of a host (the latest RUN_BUNDLES runs' bundles
    read): one change per setting, at the later run's start."""
    runs: dict[int, dict] = {}
    for r in rows:
        runs.setdefault(r["run_id"], r)
    ordered = sorted(runs.values(), key=lambda r: (r["started_unix_s"] or 0, r["run_id"]))[-RUN_BUNDLES:]
    out, last = [], dict[str, tuple[dict, dict]]()
    for r in ordered:
        now = run_aspects(None if r["source"] else r["bundle"], r)
        before = last.get(r["host"])
        if before is not None:
            for key in sorted(set(before[1]) & set(now), key=list(now).index):
                if before[1][key] != now[key] and "?" not in (before[1][key], now[key]):
                    out.append(
                        {
                            "unix_s": r["started_unix_s"],
                            "host": r["host"],
                            "what": key,
                            "from": before[1][key],
                            "to": now[key],
                            "source": f"run {Path(r['bundle'] or '').name or r['run_id']}",
                        }
                    )
        last[r["host"]] = (r, now)
    return out


RUN_LABELS = 4  # per-run histograms: the cases of this many labels (the most runs first)
RUN_HISTS = 60  # ... each of its latest this many runs (a bundle read each)


def run_histograms(rows: list[dict]) -> list[dict]:
    """Per case label (the RUN_LABELS labels with the most runs), each stored run's histogram of that case in the
    windows' coarse bins, oldest first (the latest RUN_HISTS runs, read from their bundles; a bundle gone or
    damaged is left out and counted): [{"label", "runs": [{"unix_s", "name", "hist", "max_ns"}], "missing"}]."""
    by_label: dict[str, list[dict]] = {}
    for r in rows:
        if r["started_unix_s"] is not None and r["bundle"] and not r["source"]:
            by_label.setdefault(r["label"], []).append(r)
    out = []
    for label, runs in sorted(by_label.items(), key=lambda kv: -len(kv[1]))[:RUN_LABELS]:
        got, missing = [], 0
        for r in sorted(runs, key=lambda r: r["started_unix_s"])[-RUN_HISTS:]:
            h = case_hist(r["bundle"], r["case_id"])
            if h is None:
                missing += 1
                continue
            got.append({"unix_s": r["started_unix_s"], "name": Path(r["bundle"]).name, "hist": coarse_bins(h),
                        "max_ns": h.max_ns})  # fmt: skip
        if got:
            out.append({"label": label, "runs": got, "missing": missing})
    return out

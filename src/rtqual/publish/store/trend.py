"""Pure printers and judges of what the store holds: `rtqual history` (the trend of runs and cases, monitor
windows summarised per host, CPU and hour) and `rtqual check` (a bundle against a baseline, statistic by
statistic, within a relative tolerance). Functions of rows, no store access."""

from __future__ import annotations

import re
import time
from pathlib import Path

from rtqual.answers import caveats, compare
from rtqual.errors import RtqError
from rtqual.textfmt import format_table
from rtqual.units import format_ns, parse_duration_ns

SUMMARY_S = 3600  # monitor windows are summarised per host, CPU and this many seconds
# statistics judged by `rtqual check`, and the samples a run needs before a percentile is more than its max
CHECKED = ("max_ns", "p9999_ns", "p99_ns", "mean_ns")
MIN_SAMPLES = {k: caveats.needed(k) for k in ("p99_ns", "p9999_ns")}  # 10 / (1 - p): 1,000 and 100,000
NAMES = {"max_ns": "max", "p9999_ns": "p99.99", "p99_ns": "p99", "mean_ns": "mean"}


def _when(unix_s: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(unix_s)) if unix_s is not None else "?"


def window_summary(windows: list[dict], span_s: int = SUMMARY_S) -> list[dict]:
    """Monitor windows per host, CPU and span (an hour): windows, samples, the worst window's max and p99,
    over-threshold and overrun counts, kernel (the last one seen). Oldest first."""
    groups: dict[tuple, dict] = {}
    for w in windows:
        start = int(w["start_unix_s"] // span_s * span_s)
        key = (start, w["host"], w["probe"], w["cpu"])
        g = groups.setdefault(
            key,
            {"start_unix_s": start, "host": w["host"], "probe": w["probe"], "cpu": w["cpu"], "windows": 0,
             "samples": 0, "max_ns": None, "p99_max_ns": None, "over_threshold": 0, "overruns": 0},
        )  # fmt: skip
        g["windows"] += 1
        g["samples"] += w["samples"] or 0
        g["over_threshold"] += w["over_threshold"] or 0
        g["overruns"] += w["overruns"] or 0
        g["kernel"] = w.get("kernel")
        for key_out, key_in in (("max_ns", "max_ns"), ("p99_max_ns", "p99_ns")):
            if w.get(key_in) is not None:
                g[key_out] = max(g[key_out] or 0, w[key_in])
    return [groups[k] for k in sorted(groups)]


def history_json(runs: list[dict], windows: list[dict]) -> dict:
    return {"runs": runs, "windows": window_summary(windows), "window_summary_s": SUMMARY_S}


def _bundle(run: dict) -> str:
    """Where a stored run came from: its bundle's folder name (and its state when it did not complete), or
    the imported tool's name."""
    if run["source"]:
        return f"imported ({run['source']})"
    name = Path(run["bundle"]).name if run["bundle"] else "-"
    return name if run["state"] in (None, "complete") else f"{name} ({run['state']})"


def history_text(runs: list[dict], windows: list[dict]) -> str:
    """The trend: one row per run and case, then the monitor windows per host, CPU and hour."""
    out = []
    if runs:
        rows = [
            [
                _when(r["started_unix_s"]),
                r["host"],
                r["kernel"] or "-",
                r["preempt"] or "-",
                r["probe"] or "-",
                r["label"],
                format_ns(r["p99_ns"]) if caveats.carried("p99_ns", r.get("count")) else "-",
                format_ns(r["max_ns"]),
                r["verdict"] or "-",
                _bundle(r),
                r.get("caveats") or "-",
            ]
            for r in runs
        ]
        head = ["when", "host", "kernel", "preempt", "probe", "case", "p99", "max", "verdict", "bundle", "caveats"]
        out.append(format_table(head, rows, left=6))
        if any(not caveats.carried("p99_ns", r.get("count")) for r in runs):
            out.append(f"p99 '-': fewer than {caveats.needed('p99_ns'):,} samples carry it")
    summary = window_summary(windows)
    if summary:
        out += [""] if out else []
        out.append(f"monitor windows per host, CPU and {SUMMARY_S // 60} minutes:")
        rows = [
            [
                _when(s["start_unix_s"]),
                s["host"],
                s["probe"],
                str(s["cpu"]),
                str(s["windows"]),
                str(s["samples"]),
                format_ns(s["p99_max_ns"]),
                format_ns(s["max_ns"]),
                str(s["over_threshold"]),
                str(s["overruns"]),
            ]
            for s in summary
        ]
        head = ["from", "host", "probe", "cpu", "windows", "samples", "worst p99", "max", "over thr.", "overruns"]
        out.append(format_table(head, rows, left=3))
    return "\n".join(out) if out else "no runs or monitor windows stored (yet) for this selection"


def since(text: str | None) -> float | None:
    """--since DUR as unix seconds (now minus DUR), or None."""
    return None if text is None else time.time() - parse_duration_ns(text, "--since") / 1e9


def baselines_text(found: list[dict]) -> str:
    """`rtqual baseline list`: name, bundle, host, kernel, start of each baseline."""
    if not found:
        return "no baselines (rtqual baseline set BUNDLE)"
    rows = [[b["name"], b["bundle"], b["host"], b["kernel"] or "-", b["started"] or "-"] for b in found]
    return format_table(["name", "bundle", "host", "kernel", "started"], rows, left=5)


def check_json(findings: list[dict], baseline_name: str, baseline: dict, bundle: str, tolerance: float) -> dict:
    """`rtqual check --json`: the baseline, the bundle, the tolerance, what regressed and every finding."""
    regressed = [f"{f['label']}: {f['statistic']}" for f in findings if f["verdict"] == "regressed"]
    return {"baseline": baseline_name, "baseline_bundle": baseline["path"], "bundle": bundle, "tolerance": tolerance,
            "regressed": regressed, "findings": findings}  # fmt: skip


def parse_tolerance(text: str) -> float:
    """'10%' (or '10') -> 0.10: how much above the baseline a statistic may be before it counts as regressed."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%?\s*", str(text))
    if not m:
        raise RtqError(f"--tolerance: '{text}' is not a percentage (e.g. 10%)")
    return float(m.group(1)) / 100


def check(baseline: dict, current: dict, tolerance: float) -> list[dict]:
    """Each statistic of each case of `current` that a baseline case matches (answers.compare.matches: same id, else
    label): baseline value, current value, limit = baseline × (1 + tolerance), and a verdict: "regressed"
    above the limit, "ok", or "not judged" (missing in either, or too few samples for the percentile to be
    more than its few largest values: p99 needs 1,000, p99.99 needs 100,000 samples in both runs, 10 / (1 - p))."""
    out = []
    for row in compare.matches([baseline, current]):
        base, cur = row
        assert base is not None and cur is not None
        bs, cs = base["stats"], cur["stats"]
        for key in CHECKED:
            b, c = bs.get(key), cs.get(key)
            finding = {"case": cur["id"], "label": cur["label"], "statistic": NAMES[key], "key": key}
            finding.update(baseline_value=b, value=c, limit=None if b is None else b * (1 + tolerance))
            need = MIN_SAMPLES.get(key, 0)
            counts = [s.get("count") for s in (bs, cs)]
            if b is None or c is None:
                finding.update(verdict="not judged", why="missing in the baseline or the bundle")
            elif need and any(n is None or n < need for n in counts):
                finding.update(verdict="not judged", why=f"fewer than {need} samples: it would be the max")
            else:
                finding.update(verdict="regressed" if c > finding["limit"] else "ok", why=None)
            out.append(finding)
    return out


def check_text(findings: list[dict], baseline_name: str, baseline: dict, bundle: str, tolerance: float) -> str:
    """The check as a table, then one line per regressed statistic (or that none regressed)."""
    b = baseline["baseline"]
    out = [
        f"baseline {baseline_name}: {b['bundle']} (host {b['host']}, kernel {b['kernel'] or '?'}, {b['started']})",
        f"bundle: {bundle}; tolerance {tolerance * 100:g}% above the baseline",
    ]
    rows = [
        [
            f["label"],
            f["statistic"],
            f["verdict"].upper() if f["verdict"] == "regressed" else f["verdict"],
            format_ns(f["baseline_value"]),
            format_ns(f["limit"]),
            format_ns(f["value"]),
        ]
        for f in findings
    ]
    out.append(format_table(["case", "statistic", "verdict", "baseline", "limit", "now"], rows, left=3))
    out += [f"not judged: {f['label']}: {f['statistic']}: {f['why']}" for f in findings if f["why"]]
    bad = [f for f in findings if f["verdict"] == "regressed"]
    for f in bad:
        ratio = f["value"] / f["baseline_value"] if f["baseline_value"] else float("inf")
        out.append(
            f"regressed: {f['label']}: {f['statistic']} {format_ns(f['value'])} > {format_ns(f['limit'])} "
            f"(baseline {format_ns(f['baseline_value'])}, x{ratio:.2f})"
        )
    if not bad:
        out.append("no statistic regressed beyond the tolerance")
    return "\n".join(out)

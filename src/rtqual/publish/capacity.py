"""A capacity sweep's answer as `rtqual show` prints it and the report draws it (capacity.json, written by
rtqual.capacity.run): the answer sentence, one row per step with its evidence, and the figure of latency and
callback-queue high-water against the swept load, the requirement drawn as a line and the knee marked (as data:
htmlreport draws it). Pure; shared by the text and HTML reports, it imports no exporter."""

from __future__ import annotations

from rtqual.answers.requirements import Requirement, from_bundle, upper_limits_ns
from rtqual.textfmt import format_table
from rtqual.units import format_ns

LINES = (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))  # the latency percentiles drawn
PRIORITIES = ("low", "medium", "high")


def _value(v) -> str:
    return "-" if v is None else f"{v:,.0f}" if float(v).is_integer() else f"{v:,.3g}"


def _queues(q: dict | None) -> str:
    """'2/0/0 of 2000' (high-water low/medium/high), '+N overflows' when any."""
    if not isinstance(q, dict):
        return "-"
    marks = "/".join(str((q.get(p) or {}).get("high_water", "?")) for p in PRIORITIES)
    over = sum((q.get(p) or {}).get("overflows") or 0 for p in PRIORITIES)
    return f"{marks} of {q.get('size')}" + (f" +{over} overflows" if over else "")


def _axis_name(doc: dict) -> str:
    """'records', 'rate (Hz)', 'hackbench.groups (groups)'."""
    dim, unit = str(doc.get("dimension")), doc.get("unit") or ""
    return f"{dim} ({unit})" if unit and unit != dim else dim


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0f}%"


def lines(doc: dict) -> list[str]:
    """The `show` text block of a sweep: the answer, then one row per step (by load)."""
    judged = "; ".join(doc.get("requirements") or [])
    out = [f"capacity ({doc.get('sweep')}: {doc.get('dimension')}, judged on {judged}):", f"  {doc.get('answer')}"]
    rows = []
    for s in doc.get("steps") or []:
        st, cpu = s.get("stats") or {}, s.get("cpu") or {}
        rows.append(
            [
                _value(s.get("value")),
                s.get("verdict", "?"),
                *(format_ns(st.get(k)) if st.get(k) is not None else "-" for _, k in LINES),
                _queues(s.get("queues")),
                _pct(cpu.get("ioc_pct")),
                _pct(cpu.get("host_busy_pct")),
                s.get("case", ""),
            ]
        )
    if rows:
        head = [_axis_name(doc), "step", "p50", "p99",
                "max", "cb queue hw (l/m/h)", "IOC cpu", "host busy", "case"]  # fmt: skip
        out += ["  " + line for line in format_table(head, rows, left=2).splitlines()]
        out.append("  (IOC cpu: % of one CPU over the step; host busy: all CPUs over the step, IOC start included)")
    return out


def knee_marks(doc: dict) -> list[tuple[float, str]]:
    """The knee as dashed lines: the last load carried and the first that broke, one label for both (at the
    carried line, reading rightwards past the break: two labels side by side would overlap)."""
    carries, breaks = doc.get("carries"), doc.get("breaks_at")
    if carries is not None and breaks is not None:
        return [(float(carries), f"knee: carries {_value(carries)}, breaks {_value(breaks)}"), (float(breaks), "")]
    if carries is not None:
        return [(float(carries), f"carries {_value(carries)}")]
    return [(float(breaks), f"breaks {_value(breaks)}")] if breaks is not None else []


def knee_note(doc: dict) -> str:
    """The figure's one line: 'carries up to 734 records; breaks at 800 records (p99 <= 400us)'."""
    unit = f" {doc['unit']}" if doc.get("unit") else ""
    words = []
    if doc.get("carries") is not None:
        words.append(f"carries up to {_value(doc['carries'])}{unit}")
    broke = doc.get("breaks_at")
    words.append(f"breaks at {_value(broke)}{unit}" if broke is not None else "no break found")
    return "; ".join(words) + f" (judged on {'; '.join(doc.get('requirements') or [])})"


def plots(doc: dict) -> list[dict]:
    """What the report draws (htmlreport makes each an svgplot Figure): latency p50/p99/max against the load, the
    requirements' latency limits as lines, the knee marked; the callback queues' high-water marks against the load
    when the IOC reported them. Each: slug, title, x_label, log_x, y_label, y_log, y_lo, series [(name, xs, ys)],
    marks, note."""
    steps = [s for s in doc.get("steps") or [] if isinstance(s.get("value"), (int, float)) and s["value"] > 0]
    if not steps:
        return []
    xs = [float(s["value"]) for s in steps]
    latency = []
    for name, key in LINES:
        pts = [(x, s["stats"][key] / 1000) for x, s in zip(xs, steps) if (s.get("stats") or {}).get(key)]
        if pts:
            latency.append((name, [p[0] for p in pts], [p[1] for p in pts]))
    for stat, limit_ns in upper_limits_ns(_kept(doc)).items():
        latency.append((f"requirement {stat} ≤ {format_ns(limit_ns)}", [min(xs), max(xs)], [limit_ns / 1000] * 2))
    queues = []
    for p in PRIORITIES:
        pts = [(x, (s.get("queues") or {}).get(p, {}).get("high_water")) for x, s in zip(xs, steps)]
        pts = [(x, y) for x, y in pts if isinstance(y, (int, float))]
        if pts:
            queues.append((f"cb {p} high-water", [a for a, _ in pts], [float(y) for _, y in pts]))
    common = {"x_label": _axis_name(doc), "log_x": max(xs) >= 4 * min(xs), "marks": knee_marks(doc)}
    dim = str(doc.get("dimension"))
    out = []
    if latency:
        title = f"Capacity: latency against {dim}"
        out.append({"slug": "capacity-latency", "title": title, "series": latency, "y_label": "latency (us)",
                    "y_log": True, "y_lo": None, "note": knee_note(doc), **common})  # fmt: skip
    if queues:
        out.append({"slug": "capacity-queues", "title": f"Capacity: IOC callback queue high-water against {dim}",
                    "series": queues, "y_label": "entries at the high-water mark", "y_log": False, "y_lo": 0,
                    "note": "", **common})  # fmt: skip
    return out


def compare_lines(named: list[tuple[str, dict]]) -> list[str]:
    """`rtqual compare`'s capacity block: each bundle's answer, and p99 per load where the bundles swept the same
    dimension (a load missing in a bundle: '-')."""
    if not named:
        return []
    out = ["capacity:"] + [f"  {name}: {doc.get('answer')}" for name, doc in named]
    dims = {(doc.get("dimension"), doc.get("unit")) for _, doc in named}
    if len(dims) == 1:
        loads = sorted({s["value"] for _, doc in named for s in doc.get("steps") or []})
        rows = []
        for v in loads:
            cells = []
            for _, doc in named:
                step = next((s for s in doc.get("steps") or [] if s["value"] == v), None)
                p99 = (step or {}).get("stats", {}).get("p99_ns")
                cells.append("-" if step is None else f"{format_ns(p99) if p99 else '-'} {step.get('verdict')}")
            rows.append([_value(v), *cells])
        table = format_table([_axis_name(named[0][1]), *(f"{n}: p99" for n, _ in named)], rows, left=1)
        out += ["  " + line for line in table.splitlines()]
    return out


def overlay_plot(named: list[tuple[str, dict]]) -> dict | None:
    """The capacity curves of several bundles overlaid (same dimension): each bundle's p99 against the load, the
    first's requirement lines, each bundle's break marked; None when they swept different dimensions or nothing."""
    if len(named) < 2 or len({doc.get("dimension") for _, doc in named}) != 1:
        return None
    series, marks, xs_all = [], [], []
    for name, doc in named:
        steps = [s for s in doc.get("steps") or [] if isinstance(s.get("value"), (int, float)) and s["value"] > 0]
        pts = [(float(s["value"]), s["stats"]["p99_ns"] / 1000) for s in steps if (s.get("stats") or {}).get("p99_ns")]
        if pts:
            series.append((f"{name} p99", [p[0] for p in pts], [p[1] for p in pts]))
            xs_all += [p[0] for p in pts]
        if doc.get("breaks_at") is not None:
            marks.append((float(doc["breaks_at"]), f"{name} breaks {_value(doc['breaks_at'])}"))
    if not series:
        return None
    for stat, limit_ns in upper_limits_ns(_kept(named[0][1])).items():
        series.append(
            (f"requirement {stat} ≤ {format_ns(limit_ns)}", [min(xs_all), max(xs_all)], [limit_ns / 1000] * 2)
        )
    first = named[0][1]
    return {"slug": "capacity-compare", "title": f"Capacity curves: p99 against {first.get('dimension')}",
            "series": series, "x_label": _axis_name(first), "log_x": max(xs_all) >= 4 * min(xs_all),
            "y_label": "p99 latency (us)", "y_log": True, "y_lo": None, "marks": marks,
            "note": "; ".join(f"{n}: carries {_value(d.get('carries'))}, breaks {_value(d.get('breaks_at'))}"
                              for n, d in named)}  # fmt: skip


def _kept(doc: dict) -> list[Requirement]:
    """The requirements a sweep was judged on, read back from the text capacity.json keeps."""
    return [r for r in map(from_bundle, doc.get("requirements") or []) if r is not None]

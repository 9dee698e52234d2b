"""rteval's summary.xml: each `cyclictest` measurement in it becomes a case, one row per measured core.

Facts this relies on (rteval 3.x's report layout and its cyclictest module): /rteval[@version]
holds SystemInfo/uname/node (older reports: uname/node) and Measurements, under which (directly,
or in a Profile element in older reports) a `cyclictest` element with @command_line has a `system`
and one `core` (@id, @priority) per measured CPU, each with `statistics` (samples, minimum, maximum,
median, mode, range, mean, mean_absolute_deviation, standard_deviation, in µs) and `histogram`
(bucket @index = µs, @value = count, empty buckets left out). rteval builds these from cyclictest's
-h text, leaving out the samples beyond its range without counting them; when the maximum lies beyond
the range it writes no statistics at all. So: count = samples of the histogram; a maximum above the
highest bucket means samples were lost uncounted.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from rtqual.errors import RtqError
from rtqual.publish.imports.common import read_text, uint
from rtqual.publish.imports.cyclictest import options, settings, timer_label
from rtqual.publish.imports.writer import Case, Series, check_series

TOOL = "rteval"


def parse(path: Path) -> list[Case]:
    """One case per cyclictest measurement of a summary.xml."""
    text = read_text(path)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise RtqError(f"{path}: not XML ({e})") from None
    if root.tag != "rteval":
        raise RtqError(f"{path}: not an rteval report (root element <{root.tag[:20]}>, not <rteval>)")
    measurements = root.find("Measurements")
    runs = list(measurements.iter("cyclictest")) if measurements is not None else []
    if not runs:
        raise RtqError(f"{path}: no cyclictest measurement in this rteval report")
    node = root.find("SystemInfo/uname/node")
    node = node if node is not None else root.find("uname/node")
    cases = []
    for n, run in enumerate(runs, 1):
        where = f"{path}: cyclictest {n}"
        cores = run.findall("core")
        if not cores:
            raise RtqError(
                f"{where}: no per-core statistics (rteval leaves them out when the maximum exceeds its histogram range)"
            )
        series: dict[str, Series] = {}
        lost = []
        prios = set()
        for core in cores:
            cpu = uint(core.get("id"))
            if cpu is None:
                raise RtqError(f"{where}: a core without a numeric id")
            series[str(cpu)], max_beyond = _core(f"{where} core {cpu}", core)
            if max_beyond:
                lost.append(str(cpu))
            if uint(core.get("priority")) is not None:
                prios.add(uint(core.get("priority")))
        cmdline = run.get("command_line") or ""
        opts = options(cmdline)
        params, more = settings(opts, len(series))
        params["cpus"] = sorted(int(k) for k in series)
        warnings = list(more)
        warnings.append("rteval's histogram has whole microseconds: values are bucket upper edges, +-1 us")
        if lost:
            warnings.append(
                f"CPU {', '.join(lost)}: the maximum lies beyond the histogram: rteval dropped those samples "
                "without counting them, so count and percentiles miss them"
            )
        case = Case(
            slug="timer",
            label=timer_label(params, params["cpus"]),
            probe="cyclictest",
            tool=TOOL,
            version=root.get("version"),
            path=path,
            series=series,
            params=params,
            warnings=warnings,
            hostname=node.text.strip() if node is not None and node.text else None,
            inconclusive="samples beyond the histogram were dropped uncounted by rteval" if lost else None,
        )
        case.source = {
            "format": "rteval summary.xml, cyclictest measurement",
            "cmdline": cmdline or None,
            "priorities": sorted(prios),
            "run_info": {k: (root.findtext(f"run_info/{k}") or None) for k in ("date", "time")},
            "timestamps": {t.tag: t.text for t in run.findall("timestamps/*")},
            "statistics": {c.get("id"): {s.tag: s.text for s in c.findall("statistics/*")} for c in cores},
            "values": "upper edge of rteval's 1 us bucket (value*1000 + 999 ns): at most 1 us above, never below",
            "mean": "rteval's mean (from its histogram) plus 999 ns",
            "stddev": "from the histogram at 1 us resolution (rteval's own is the sample stddev, in source.statistics)",
            "missing": ["overruns", "threshold counts", "samples beyond the histogram range (dropped by rteval)"],
        }
        cases.append(case)
    return cases


def _core(where: str, core: ET.Element) -> tuple[Series, bool]:
    """One core's histogram and statistics; True when its maximum lies beyond the histogram."""
    buckets: dict[int, int] = {}
    for b in core.findall("histogram/bucket"):
        index, value = uint(b.get("index")), uint(b.get("value"))
        if index is None or value is None:
            raise RtqError(f"{where}: a bucket without a numeric index and value")
        buckets[index] = buckets.get(index, 0) + value
    samples = uint((core.findtext("statistics/samples") or "").strip())
    if samples is None:
        raise RtqError(f"{where}: no <samples> count")
    if samples != sum(buckets.values()):
        raise RtqError(f"{where}: <samples> {samples} is not the histogram's sum {sum(buckets.values())}")
    mn, mx, mean = (_number(where, core, k) for k in ("minimum", "maximum", "mean"))
    s = Series(
        samples,
        1000,
        int(mn) if samples and mn is not None else None,
        int(mx) if samples and mx is not None else None,
        mean if samples else None,
        buckets,
    )
    check_series(where, s)
    return s, bool(buckets) and s.max_units is not None and s.max_units > max(buckets)


def _number(where: str, core: ET.Element, key: str) -> float | None:
    text = core.findtext(f"statistics/{key}")
    if text is None:
        return None
    try:
        x = float(text)
    except ValueError:
        raise RtqError(f"{where}: <{key}> '{text.strip()[:20]}' is not a number") from None
    if not 0 <= x < 1e12:
        raise RtqError(f"{where}: <{key}> {x} out of range")
    return x

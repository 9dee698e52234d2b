"""A capacity sweep run: every step a case of ONE bundle (rtqual.measure.run.driver.Run, its `more` hook deciding
the next step from the last result), each step's evidence (latency, the IOC's callback queues, CPU), the answer,
and capacity.json sealed in the bundle before it is published (report.html, the history store).

Stopped at any moment (SIGINT/SIGTERM: the driver's guard), the bundle keeps every finished step and the answer
says the sweep was stopped."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rtqual.answers import planning
from rtqual.answers.environment import hypervisor
from rtqual.answers.requirements import texts
from rtqual.answers.verdict import load_trouble
from rtqual.capacity import sweep as sw
from rtqual.capacity.spec import Sweep
from rtqual.results.bundle import Model, names, write_own
from rtqual.units import format_ns

HELD_FRACTION = 0.9  # a load (or the probe's own rate) below 90 % of what was asked was not held
STAT_KEYS = ("count", "p50_ns", "p99_ns", "p999_ns", "max_ns")
GREW_FRACTION = 0.1  # a thread whose CPU grew by a tenth of the busiest one's is named as the one that grew
STAGE_GREW = 1.5  # a response stage whose p99 grew less than this is not named as what gave
SATURATED_PCT = 90  # an IOC thread using this much of a CPU over a step is saturated


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of every CPU from /proc/stat's first line, or None."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def held_problem(result: dict) -> str | None:
    """Why a step's load was not held (its loads' own collect(), the IOC's CA clients' achieved rates, the
    probe's own rate), or None: such a step is inconclusive, never a pass."""
    trouble = load_trouble(result.get("loads") or [], None)
    if trouble:
        return trouble
    ioc = result.get("ioc") or {}
    load = ioc.get("ca_load")
    if load:
        if load.get("error"):
            return f"CA load: {load['error']}"
        put = load.get("put") or {}
        if put.get("requested_rate_hz") and (put.get("rate_hz") or 0) < HELD_FRACTION * put["requested_rate_hz"]:
            return f"CA put client made {put.get('rate_hz') or 0:,.0f} puts/s of {put['requested_rate_hz']:,.0f} asked"
        mon = load.get("monitor") or {}
        if mon and load.get("records") and (mon.get("connected") or 0) < load["records"]:
            return f"CA monitor connected {mon.get('connected') or 0} of {load['records']} records"
        scanned = scan_events_hz(load.get("records"), (ioc.get("spec") or {}).get("scan"))
        if mon and scanned and (mon.get("rate_hz") or 0) < HELD_FRACTION * scanned:
            return (
                f"CA monitor saw {mon.get('rate_hz') or 0:,.0f} events/s of the {scanned:,.0f} the records' periodic "
                "scan makes: the IOC's scan thread or its CA server fell behind"
            )
    stats, params = result.get("stats") or {}, dict(result.get("params") or {})
    if params.get("period_ns") and not params.get("interval_ns"):  # the probe's header says its period so
        params["interval_ns"] = params["period_ns"]
    expected = planning.expected_samples(result.get("probe", ""), params)
    paced = params.get("rate") or params.get("rate_hz") or params.get("period_ns")
    measured = result.get("verdict") in ("pass", "fail", "completed") and paced
    if measured and expected and (stats.get("count") or 0) < HELD_FRACTION * expected:
        return f"the probe made {stats.get('count') or 0:,} of the {expected:,} samples its rate asks"
    return None


def scan_events_hz(records: int | None, scan: str | None) -> float | None:
    """Monitor events per second the load records' periodic scan makes (each processing changes their value):
    records / the scan period ('.1 second' -> 10 per record); None when not known."""
    try:
        period_s = float(str(scan).split()[0])
    except (ValueError, IndexError):
        return None
    return records / period_s if records and period_s > 0 else None


def queue_problem(queues: dict | None) -> str | None:
    """A callback queue that overflowed (requests refused), or None."""
    for prio, q in _queues(queues):
        if q.get("overflows"):
            return f"callback queue {prio} overflowed {q['overflows']:,} times (size {queues.get('size')})"  # type: ignore[union-attr]
    return None


def _queues(queues: dict | None) -> list[tuple[str, dict]]:
    return [(k, v) for k, v in (queues or {}).items() if isinstance(v, dict)]


def queue_note(queues: dict | None) -> str:
    """The callback queues' high-water marks in a few words: 'callback queues high-water low 2, medium 0,
    high 0 of 2000'."""
    qs = _queues(queues)
    if not qs:
        return ""
    marks = ", ".join(f"{k} {v.get('high_water')}" for k, v in qs)
    return f"callback queues high-water {marks} of {queues.get('size')}"  # type: ignore[union-attr]


def classify(result: dict) -> tuple[str, str]:
    """A step's outcome (rtqual.capacity.sweep: pass, fail, not held, stopped) and its cause in words."""
    verdict, reason = result.get("verdict"), result.get("reason") or ""
    queues = (result.get("ioc") or {}).get("callback_queues")
    held = held_problem(result)
    if held and verdict != "error":
        return sw.NOT_HELD, f"the load was not held ({held})"
    overflow = queue_problem(queues)
    if overflow:
        return sw.FAIL, overflow
    if verdict == "pass":
        return sw.PASS, "every requirement met"
    if verdict == "fail":
        return sw.FAIL, reason
    if verdict == "error":
        return sw.FAIL, f"the step ended in error ({reason})"
    return sw.STOPPED, f"{verdict}: {reason}"


def evidence(result: dict, value: float, host_busy_pct: float | None) -> dict:
    """One step as capacity.json keeps it: value, case, stats, queues, cpu, verdict (the outcome), cause."""
    ioc = result.get("ioc") or {}
    outcome, cause = classify(result)
    cpu = {"host_busy_pct": host_busy_pct}
    if ioc.get("cpu"):
        c = ioc["cpu"]
        cpu.update(ioc_pct=c.get("cpu_pct"), ioc_threads_s=c.get("threads_s"), ioc_span_s=c.get("span_s"))
    stages = (result.get("probe_summary") or {}).get("stages") or {}
    return {
        "value": _number(value),
        "case": result["id"],
        "stats": {k: (result.get("stats") or {}).get(k) for k in STAT_KEYS},
        **({"stages_p99_ns": {k: v.get("p99_ns") for k, v in stages.items() if isinstance(v, dict)}} if stages else {}),
        "queues": ioc.get("callback_queues"),
        **({"ca_server": ioc["ca_server"]} if ioc.get("ca_server") else {}),
        "cpu": cpu,
        "verdict": outcome,
        "case_verdict": result.get("verdict"),
        "cause": cause,
        **({"ca_load": ioc["ca_load"]} if ioc.get("ca_load") else {}),
    }


def _grew(now: float | None, before: float | None) -> float:
    """How many times a figure grew between two steps (0 when either is missing)."""
    return now / before if now and before else 0.0


def _thread_pct(step: dict | None) -> dict[str, float]:
    """The IOC's threads' CPU over a step, % of one CPU (threads_s over the span the service measured)."""
    cpu = (step or {}).get("cpu") or {}
    span = cpu.get("ioc_span_s")
    return {k: 100 * v / span for k, v in (cpu.get("ioc_threads_s") or {}).items()} if span else {}


def what_broke(carried: dict | None, broke: dict) -> str:
    """What gave first, named from the IOC's own evidence: the response stage whose p99 grew most from the last step
    carried to the first that broke (or the largest, without a step carried; none named when no stage grew
    STAGE_GREW times), the IOC thread whose CPU grew most (or the busiest; 'saturated' at SATURATED_PCT of a CPU)
    and the callback queues' high-water marks then and now; '' without such evidence."""
    parts = []
    now, was = broke.get("stages_p99_ns") or {}, (carried or {}).get("stages_p99_ns") or {}
    named = {k: v for k, v in now.items() if v and k != "total"}
    if named:
        stage = max(named, key=lambda k: (_grew(named[k], was.get(k)), named[k]))
        grew = _grew(named[stage], was.get(stage))
        if not was:
            parts.append(f"stage {stage} p99 {format_ns(named[stage])} (the largest stage)")
        elif grew >= STAGE_GREW:
            parts.append(
                f"stage {stage} p99 {format_ns(named[stage])} (was {format_ns(was[stage])}: x{grew:.1f}, the stage "
                "that grew most)"
            )
        else:
            parts.append(f"no response stage's p99 grew x{STAGE_GREW:g} (the probe's own path held)")
    pct, pct_was = _thread_pct(broke), _thread_pct(carried)
    if pct:
        busiest = max(pct, key=lambda k: pct[k])
        grown = max(pct, key=lambda k: pct[k] - pct_was.get(k, 0.0))
        by_growth = bool(pct_was) and pct[grown] - pct_was.get(grown, 0.0) > GREW_FRACTION * pct[busiest]
        thread = grown if by_growth else busiest
        words = ["grew most" if by_growth else "busiest"]
        if pct[thread] >= SATURATED_PCT:
            words.append("saturated")
        if pct_was:
            words.append(f"was {pct_was.get(thread, 0.0):.0f}%")
        parts.append(f"IOC thread {thread} at {pct[thread]:.0f}% of a CPU ({', '.join(words)})")
        total, total_was = (broke.get("cpu") or {}).get("ioc_pct"), ((carried or {}).get("cpu") or {}).get("ioc_pct")
        if total is not None:
            parts.append(f"the IOC at {total:.0f}% of a CPU in all" + (f" (was {total_was:.0f}%)" if total_was else ""))
    q_now, q_was = queue_note(broke.get("queues")), queue_note((carried or {}).get("queues"))
    if q_now:
        parts.append(q_now + (f" (was {q_was.removeprefix('callback queues high-water ')})" if q_was else ""))
    cas = broke.get("ca_server")
    if cas:
        parts.append(f"the CA server at most {cas['clients_max']} clients, {cas['channels_max']} channels")
    return "; ".join(parts)


def _number(v: float | None) -> float | int | None:
    """A load as JSON keeps it: a whole number as an integer."""
    return int(v) if v is not None and float(v).is_integer() else v


class Sweeper:
    """The `more` hook of the run: each finished step recorded with its evidence, the next step decided by
    rtqual.capacity.sweep, its case built by the Sweep."""

    def __init__(self, sweep: Sweep, quiet: bool = True):
        self.sweep, self.quiet = sweep, quiet
        self.steps: list[sw.Step] = []
        self.evidence: list[dict] = []
        self.values: dict[str, float] = {}  # case id -> the step's load
        self._t0: tuple[int, int] | None = None

    def record(self, result: dict) -> None:
        """A finished step (once per case)."""
        value = self.values.pop(result["id"], None)
        if value is None:
            return
        busy = None
        t1 = _cpu_times()
        if self._t0 and t1 and t1[1] > self._t0[1]:
            busy = round(100 * (t1[0] - self._t0[0]) / (t1[1] - self._t0[1]), 1)
        ev = evidence(result, value, busy)
        self.evidence.append(ev)
        self.steps.append(sw.Step(ev["value"], ev["verdict"], ev["cause"]))
        if not self.quiet:
            p99 = ev["stats"].get("p99_ns")
            said = f"p99 {format_ns(p99)}; " if p99 is not None else ""
            note = queue_note(ev["queues"])
            cause = ev["cause"] + (f"; {note}" if note else "")
            print(f"capacity: {self.sweep.dim.name} {sw.fmt(value)}: {ev['verdict']} ({said}{cause})", flush=True)

    def more(self, last: dict | None) -> dict | None:
        if last is not None:
            self.record(last)
        value = sw.next_value(self.sweep.range, self.steps)
        if value is None:
            return None
        case = self.sweep.case(value, len(self.steps) + 1)
        self.values[case["id"]] = value
        self._t0 = _cpu_times()
        return case

    def document(self, facts: dict | None = None, status: str = "complete") -> dict:
        """capacity.json: {dimension, unit, steps, carries, breaks_at, cause, answer, ...}."""
        s = self.sweep
        ans = sw.answer(self.steps, s.range)
        by_value = {e["value"]: e for e in self.evidence}
        first = what_broke(by_value.get(_number(ans["carries"])), by_value[_number(ans["breaks_at"])]) if (
            ans["breaks_at"] is not None) else ""  # fmt: skip
        if status != "complete" and not ans["stopped"] and ans["breaks_at"] is None:
            ans["stopped"], ans["cause"] = True, f"not found: the sweep was {status} before its end"
        text = sw.sentence(ans, s.dim.unit) + (f"; first to give: {first}" if first else "")
        vm, _how = hypervisor(facts)
        if vm not in (None, "none"):
            text += f" (measured in a virtual machine, {vm}: the knee includes the hypervisor)"
        return {
            "schema_version": 1,
            "sweep": s.name,
            "probe": s.probe,
            "dimension": s.dim.name,
            "unit": s.dim.unit,
            "range": {
                "start": s.range.start,
                "ceiling": s.range.ceiling,
                "factor": s.range.factor,
                "resolution": s.range.resolution,
                "confirm": s.range.confirm,
            },  # fmt: skip
            "carried_times": ans["carried_times"],
            "requirements": texts(s.require),
            **({"profile": s.profile} if s.profile else {}),
            "step_ns": s.step_ns,
            "steps": sorted(self.evidence, key=lambda e: e["value"]),
            "order": [e["value"] for e in self.evidence],  # the steps in the order they ran
            "carries": _number(ans["carries"]),
            "breaks_at": _number(ans["breaks_at"]),
            "cause": ans["cause"],
            "stopped": ans["stopped"],
            "first_to_give": first or None,
            "hypervisor": vm,
            "answer": text,
        }


def measure(sweep: Sweep, argv: list[str], output: str | None, quiet: bool, store: str | None) -> Model:
    """Run the sweep into one new bundle, write its capacity.json, then publish it (also when it was stopped or
    failed): the bundle's model."""
    from rtqual.commands.run import measure_and_publish

    sweeper = Sweeper(sweep, quiet)
    plan = {"schema_version": 1, "cases": [], "capacity": {"sweep": sweep.name, "dimension": sweep.dim.name}}
    started = time.monotonic()

    def finish(model: Model) -> None:
        for result in model.cases:  # the last step (and one cut by a signal) never reached `more`
            sweeper.record(result)
        doc = sweeper.document(model.facts("before"), model.manifest.get("status") or "complete")
        doc["elapsed_s"] = round(time.monotonic() - started, 1)
        write_own(model.path, names.CAPACITY, json.dumps(doc, indent=1) + "\n")

    return measure_and_publish([], argv, store, finish, output=output, quiet=quiet, plan=plan, more=sweeper.more)

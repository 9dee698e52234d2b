"""`rtqual selftest`: proof on this host that the probes catch a stall of known size.

Each latency probe runs on one CPU while the `inject` load (rtqual-probe inject: a bounded SCHED_FIFO
busy loop at priority 90, above the probes' 80) stalls that CPU K times for D. From the raw samples and
the injector's stall records (both CLOCK_MONOTONIC) each stall is matched by time to the samples that
woke in its window; the case passes when every stall is caught (its largest sample lies in [D-eps, D+delta]),
the samples above D-eps number K plus at most the natural-spike tolerance, and the probe's histogram and
percentiles agree exactly with a recomputation from its raw samples. Also: CLOCK_MONOTONIC sanity.
docs/selftest.md gives the tolerances and why.

The cases run as an ordinary run (rtqual.measure.run: bundle, loads, the IOC service, the signal guard); the
analysis is pure (rtqual.answers.evidence.selftest) and is kept in the bundle as selftest.json (rtqual show
prints it too).
"""

from __future__ import annotations

import json
import time

from rtqual import services
from rtqual.answers.evidence.selftest import MS, NATURAL_NS, US, S, analyse, setup
from rtqual.answers.verdict import exit_code
from rtqual.errors import EXIT_SKIP, RtqError
from rtqual.probes.catalog import ALL_PROBES, check_params, probe_case
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import names
from rtqual.units import format_ns, online_cpus, parse_duration_ns

SELFTEST_FILE = names.SELFTEST

STALL_GAP_NS = 200 * MS  # between one stall's end and the next start
START_DELAY_NS = 1 * S  # the injector waits this long (plus a service's start-up) for the probe
TAIL_NS = 500 * MS  # the probe measures this long after the last stall

SIZES_NS = (2 * MS, 10 * MS, 50 * MS)
QUICK_SIZES_NS = (10 * MS,)  # --quick: one size, except for a probe whose SELFTEST keeps every size (the timer)
COUNT_FULL, COUNT_QUICK = 10, 5


def selftest_probes() -> list[str]:
    """The probes the selftest runs by default, in their order."""
    return sorted((p for p in ALL_PROBES if setup(p)), key=lambda p: setup(p)["order"])


def default_sizes(probe: str, quick: bool) -> tuple[int, ...]:
    """The stall sizes of a probe: every one, or with --quick one (the timer, the reference, keeps every one)."""
    return SIZES_NS if not quick or setup(probe).get("quick_every_size") else QUICK_SIZES_NS


# -- the plan ------------------------------------------------------------------------------------------


def measured_cpus() -> tuple[int, int]:
    """The CPU stalled and measured (the last online one) and another for the probes' other side."""
    cpus = online_cpus()
    if len(cpus) < 2:
        raise RtqError("selftest needs 2 online CPUs: the injector never stalls the only one", EXIT_SKIP)
    return cpus[-1], cpus[0]


def _case_id(n: int, probe: str, stall_ns: int) -> str:
    return f"{n:03d}-{probe}-{stall_ns // MS}ms" if stall_ns else f"{n:03d}-{probe}-natural"


def build_cases(
    plan: dict[str, tuple[int, ...]], count: int, claim_ns: int | None = None, cpus: tuple[int, int] | None = None
) -> list[dict]:
    """The run's cases: the natural-spike baseline (the timer alone), then each probe under each stall
    size, the injector on the measured CPU (claiming `claim_ns` if given: the lie of the tests)."""
    cpu, other = cpus or measured_cpus()
    for probe in plan:
        if not setup(probe):
            raise RtqError(f"--probes: unknown probe '{probe}' (selftest knows: {', '.join(selftest_probes())})")
    cases = [_probe_case(0, "timer", 0, f"{NATURAL_NS}ns", cpu, other)]
    n = 1
    for probe, sizes in plan.items():
        startup = _startup_ns(probe)
        for stall in sizes:
            start_delay = START_DELAY_NS + startup
            run_ns = start_delay + count * (stall + STALL_GAP_NS) + TAIL_NS
            case = _probe_case(n, probe, stall, f"{run_ns}ns", cpu, other)
            spec = {"type": "inject", "cpu": cpu, "stall": f"{stall}ns", "count": count}
            spec |= {"gap": f"{STALL_GAP_NS}ns", "start_delay": f"{start_delay}ns"}
            if claim_ns is not None:
                spec["claim"] = f"{claim_ns}ns"
            case.update(loads=[spec], load_names=["inject"], conditions={"settle_ns": 0})
            case["label"] += f" + {count} stalls of {format_ns(stall)}"
            case["selftest"] = {"probe": probe, "stall_ns": stall, "count": count, "cpu": cpu}
            cases.append(case)
            n += 1
    return cases


def _startup_ns(probe: str) -> int:
    """Time a probe's service takes to start before the probe (the IOC's), from its kind."""
    svc = ALL_PROBES[probe].service
    return services.kind("ioc").startup_ns if svc else 0


def _probe_case(n: int, probe: str, stall_ns: int, duration: str, cpu: int, other: int) -> dict:
    params = check_params(probe, setup(probe)["params"](cpu, other, duration), f"selftest.{probe}")
    case = probe_case(probe, params, [cpu], _case_id(n, probe, stall_ns))
    if not stall_ns:
        case["label"] = f"timer alone on CPU {cpu} (natural spikes)"
        case["selftest"] = {"probe": probe, "stall_ns": 0, "count": 0, "cpu": cpu}
    return case


def clock_sanity(reads: int = 200_000) -> dict:
    """CLOCK_MONOTONIC read back to back: never backwards; its resolution and the step between reads."""
    clk = time.CLOCK_MONOTONIC
    res_ns = round(time.clock_getres(clk) * S)
    prev, back, min_step, max_step = time.clock_gettime_ns(clk), 0, None, 0
    for _ in range(reads):
        now = time.clock_gettime_ns(clk)
        step = now - prev
        if step < 0:
            back += 1
        elif step > 0:
            min_step = step if min_step is None else min(min_step, step)
            max_step = max(max_step, step)
        prev = now
    ok = back == 0 and res_ns <= US and min_step is not None
    return {
        "clock": "CLOCK_MONOTONIC",
        "resolution_ns": res_ns,
        "reads": reads,
        "backward_steps": back,
        "min_step_ns": min_step,
        "max_step_ns": max_step,
        "ok": ok,
    }


def parse_options(probes: str | None, sizes: str | None, count: int | None, claim: str | None) -> dict:
    """`rtqual selftest`'s --probes, --sizes (within the injector's 100us..200ms), --count (1..100) and the
    hidden --claim, as run_selftest's arguments; a one-line RtqError otherwise."""
    sizes_ns = [parse_duration_ns(x.strip(), "--sizes") for x in sizes.split(",")] if sizes else None
    for ns in sizes_ns or ():
        if not 100_000 <= ns <= 200_000_000:
            raise RtqError(f"--sizes: {ns} ns is outside 100us..200ms (the injector's range)")
    if count is not None and not 1 <= count <= 100:
        raise RtqError(f"--count: must be in 1..100 (got {count})")
    return {
        "probes": [p.strip() for p in probes.split(",") if p.strip()] if probes else None,
        "sizes_ns": sizes_ns,
        "count": count,
        "claim_ns": parse_duration_ns(claim, "--claim") if claim else None,
    }


def run_selftest(
    quick: bool,
    probes: list[str] | None,
    sizes_ns: list[int] | None,
    count: int | None,
    claim_ns: int | None,
    output: str | None,
    quiet: bool,
    argv: list[str],
) -> tuple[dict, int]:
    """Check the clock, run the cases into a bundle (rtqual.measure.run), analyse it, keep selftest.json in it."""
    from rtqual.commands.run import measure_and_publish

    names = probes or selftest_probes()
    notes = []
    why = None if probes else _ioc_missing()
    if why:
        names = [n for n in names if n != "ioc"]
        notes.append(f"ioc left out: {why}")
    plan = {p: tuple(sizes_ns) if sizes_ns else default_sizes(p, quick) for p in names}
    k = count or (COUNT_QUICK if quick else COUNT_FULL)
    cases = build_cases(plan, k, claim_ns)
    clock = clock_sanity()
    model = measure_and_publish(cases, argv, output=output, quiet=quiet, raw_mb=64)
    result = analyse(model, clock, cases, k)
    result["notes"] = notes
    bundle_mod.write_own(model.path, SELFTEST_FILE, json.dumps(result, indent=1) + "\n")
    return result, exit_code(result["verdict"])


def _ioc_missing() -> str | None:
    """Why rtqual's IOC cannot run here (no epicscorelibs, EPICS parts not built), or None."""
    import importlib.util

    from rtqual.measure.run import native

    if importlib.util.find_spec("epicscorelibs") is None:
        return "epicscorelibs is not importable"
    try:
        native.epics_devsup()
    except RtqError as e:
        return f"rtqual's EPICS parts are not built ({e})"
    return None


__all__ = ["build_cases", "clock_sanity", "run_selftest"]

"""`rtqual advise`: what to change on this host for real-time work (docs/advise.md). add_arguments declares
the options, run() checks them, reads the facts (the live host, a recorded tree, or a bundle's), runs the
checks (rtqual.answers.advice.advise), measures the run-time fixes A/B with --measure (rtqual.advise.measure) and
prints text, --short, --json or --emit (rtqual.publish.advise)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rtqual.answers.advice import advise
from rtqual.answers.advice.hostchecks import MAX_CPUS, MAX_IRQ
from rtqual.answers.requirements import PROFILES, gather
from rtqual.commands.common import load_bundle, output_dir
from rtqual.errors import RtqError
from rtqual.publish import advise as shown

NAME = "advise"
HELP = "what to change for real-time work: findings, blockers first, each with its exact fix (docs/advise.md)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `rtqual advise`."""
    p.add_argument("--cpus", help="the CPUs that will run real-time work (default: the isolated ones, else all but 0)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--priority", type=int, help="the application's SCHED_FIFO priority (default 80)")
    who.add_argument(
        "--profile", choices=list(PROFILES), help="a requirement profile: its latency budget sets severities"
    )
    p.add_argument("--json", action="store_true", help='{"findings": [...], "passed": [...]} (and "measured")')
    p.add_argument("--short", action="store_true", help="only the 'What to change' lines")
    p.add_argument("--measure", action="store_true", help="apply each run-time fix for a while and measure it A/B")
    p.add_argument("--duration", default="10s", help="--measure: each round's measurement per arm (default 10s)")
    p.add_argument("--rounds", type=int, default=3, help="--measure: rounds of baseline and every fix (default 3)")
    p.add_argument(
        "--case",
        metavar="SCENARIO_OR_PROBE",
        help="--measure: a probe name or a scenario file's first case (default timer)",
    )
    p.add_argument(
        "--fix",
        action="append",
        metavar="ID",
        help="--measure: measure only this fix (a finding's id, e.g. irq-thread-priority; repeatable)",
    )
    p.add_argument(
        "--emit",
        choices=shown.FORMS,
        help="print the persistent form of the fixes (those that helped, with --measure)",
    )
    p.add_argument("-o", "--output", help="--measure: bundle directory (default rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="--measure: no live progress")
    p.add_argument(
        "--root", default="/", metavar="DIR", help="read /proc and /sys below DIR (a recorded tree; default /)"
    )
    p.add_argument(
        "--bundle",
        metavar="DIR",
        help="advise for the host a bundle ran on (its recorded facts) and explain its IOC cases' path",
    )
    p.add_argument("--ioc", type=int, metavar="PID", help="explain a running IOC's path (its threads, below --root)")
    p.add_argument(
        "--input-irq",
        metavar="NAME",
        action="append",
        help="--ioc/--bundle: the interrupt that brings the IOC's input (part of its irq/N-NAME thread, e.g. eth0)",
    )
    p.add_argument(
        "--require",
        action="append",
        metavar="EXPR",
        help="a requirement the severities are weighed against, as `run --require` takes it (e.g. 'max <= 2ms'); "
        "repeatable, beside --profile (docs/advise.md)",
    )


def run(a, argv: list[str]) -> int:
    """`rtqual advise`: check the options, advise, print; exit 0 (4 when a measurement was interrupted)."""
    from rtqual.answers.verdict import exit_code
    from rtqual.measure.host import facts, tuning
    from rtqual.units import parse_cpulist

    live = Path(a.root).resolve() == Path("/")
    if not Path(a.root).is_dir():
        raise RtqError(f"--root {a.root}: not a folder")
    if a.cpus and any(len(n) > 4 or int(n) >= MAX_CPUS for n in re.findall(r"\d+", a.cpus)):
        raise RtqError(f"--cpus: a CPU number is below {MAX_CPUS} (got {a.cpus})")
    cpus = parse_cpulist(a.cpus, check_online=live and a.bundle is None) if a.cpus else None  # a bundle's host's
    if a.priority is not None and not 1 <= a.priority <= 99:
        raise RtqError(f"--priority: must be 1..99 (got {a.priority})")
    if a.measure and not live:
        raise RtqError("--measure: only on the live host (--root /): it measures this kernel")
    if a.measure and a.rounds < 2:
        raise RtqError(f"--rounds: at least 2 (got {a.rounds}): the spread across rounds says what is noise")
    if a.bundle is not None and (a.measure or not live or a.ioc is not None):
        raise RtqError("--bundle: advises from the bundle's recorded facts; not with --measure, --root or --ioc")
    texts = gather(a.require, a.profile)
    name = " and ".join([*([f"profile {a.profile}"] if a.profile else []), *(a.require or [])])
    if a.fix and not a.measure:
        raise RtqError("--fix: goes with --measure (it names the fixes to measure)")
    case: dict | None = None
    if a.bundle is not None:
        result = advise_bundle(a.bundle, cpus, a.priority, texts, name, a.input_irq)
    else:
        tun = tuning.tuning(a.root)
        req = advise.requirement_of(texts, name=name)
        budget_ns = req.budget_ns if req else None
        host = facts.collect(root=a.root)
        result = advise.advise(host, tun, cpus, a.priority, budget_ns, req)
        if a.measure:  # the case's own interrupt (a UIO input): its IRQ threads are what irq-thread-priority raises
            output_dir(a.output)
            case = advise_case(a.case, result["cpus"], result["priority"], a.duration)
            irq = input_irq(case)
            if irq is not None:
                result = advise.advise(host, tun, cpus, a.priority, budget_ns, req, [irq])
                note = input_irq_note(result, tun, irq)
                if note:
                    print(f"rtqual: advise: {note}", file=sys.stderr)
        if a.ioc is not None:
            result["findings"] = advise.ranked([*result["findings"], live_ioc_finding(a.ioc, a.root, tun, a.input_irq)])
    for note in result.get("refused") or []:
        print(f"rtqual: warning: advise: {shown.plain(note)}", file=sys.stderr)
    measured: list[dict] = []
    bundle = None
    if case is not None:
        from rtqual.advise.measure import measure

        chosen = fixes_to_measure(result["findings"], a.fix)  # before any output: a --fix it cannot apply is refused
        model, measured = measure(case, chosen, a.rounds, argv, output=a.output, quiet=a.quiet or a.json)
        bundle = model.path
        if model.manifest.get("status") == "interrupted":
            print(f"rtqual: interrupted; every setting restored; the rounds so far: {bundle}", file=sys.stderr)
            return exit_code("inconclusive")
    if a.emit:
        emitted, notes = shown.emit(result["findings"], measured, a.emit)
        for note in notes:
            print(f"rtqual: warning: advise: {note}", file=sys.stderr)
        print(emitted, end="")
    elif a.json:
        out = {**result, **({"measured": measured, "bundle": str(bundle)} if a.measure else {})}
        print(json.dumps(out, indent=1))
    elif a.short:
        print("\n".join(["What to change", *shown.what_to_change(result["findings"], measured)]))
    else:
        print(shown.text(result, measured))
        if bundle is not None:
            print(bundle)
    return 0


def advise_bundle(path: str, cpus, priority, texts: list, name: str, inputs) -> dict:
    """`advise --bundle`: the checks over the host facts a bundle recorded, weighed against the requirement
    with what the bundle measured, and the `ioc-threads` finding of each of its IOC cases (answers.advice.iocpath:
    threads, interrupt threads, the traced responses' path)."""
    from rtqual.answers.advice import iocpath

    model = load_bundle(path)
    before = model.facts("before")
    if before is None:
        raise RtqError(f"--bundle {path}: no host facts recorded (host/facts-before.json missing or damaged)")
    req = advise.requirement_of(texts, list(model.cases), name)
    budget_ns = req.budget_ns if req else None
    result = advise.advise(before, model.tuning() or {}, cpus, priority, budget_ns, req)
    ioc = [f for r in model.cases if (f := iocpath.case_finding(model, r, inputs or []))]
    result["findings"] = advise.ranked([*result["findings"], *ioc])
    return result


def live_ioc_finding(pid: int, root: str, tun: dict, inputs) -> dict:
    """`advise --ioc PID`: the running IOC's threads (below root) against the interrupt threads."""
    from rtqual.answers.advice import iocpath
    from rtqual.measure.host import tuning

    threads = tuning.threads_of(pid, root)
    if not threads:
        raise RtqError(f"--ioc {pid}: no such process below {root}")
    ioc = [iocpath.thread(t["tid"], t["comm"], t["policy"], t["rt_priority"], t["cpus"]) for t in threads]
    if not any(iocpath.role(t["comm"]) for t in ioc):
        raise RtqError(f"--ioc {pid}: no EPICS IOC thread (callback, scan, CA) in process {pid} ({ioc[0]['comm']})")
    return iocpath.finding(ioc, iocpath.kernel_threads(tun.get("rt_tasks") or []), inputs or [])


def input_irq(case: dict) -> int | None:
    """The IRQ of a case's UIO input (`event --source uio --uio DEV [--irq N]`, `ioc --input uio:DEV`): its --irq,
    else the device's from sysfs (/sys/class/uio/uioN/device/irq); None for a case without one."""
    from rtqual.util import read_text

    params: dict = case["params"] if isinstance(case.get("params"), dict) else {}
    irq = params.get("irq")
    if isinstance(irq, int) and not isinstance(irq, bool) and 0 < irq <= MAX_IRQ:
        return irq
    given = str(params.get("input") or "")
    dev = params.get("uio") or (given.removeprefix("uio:") if given.startswith("uio:") else None)
    name = Path(str(dev)).name if dev else ""
    if not re.fullmatch(r"uio[0-9]{1,5}", name):
        return None
    text, _ = read_text(f"/sys/class/uio/{name}/device/irq")
    return int(text) if text and text.isdigit() and 0 < int(text) <= MAX_IRQ else None


def input_irq_note(result: dict, tun: dict, irq: int) -> str | None:
    """Why the irq-thread-priority fix has nothing to raise for the case's IRQ (None when it has): no IRQ thread
    (a kernel that runs the handler in the hard interrupt), or its threads not below the application."""
    from rtqual.answers.advice.hostchecks import irq_of_thread

    fix = next((f for f in result["findings"] if f["id"] == "irq-thread-priority"), None)
    if fix is not None and any(k.get("irq") == irq for k in fix["knobs"]):
        return None
    mine = [t for t in tun.get("rt_tasks") or [] if isinstance(t, dict) and irq_of_thread(str(t.get("comm"))) == irq]
    if not mine:
        return (
            f"IRQ {irq} (the case's input) has no irq/{irq}-* thread: this kernel runs its handler in the hard "
            "interrupt (no PREEMPT_RT, no threadirqs), so the irq-thread-priority fix does not apply"
        )
    return (
        f"IRQ {irq}'s thread is not below FIFO {result['priority']} on CPUs {result['cpus']}: "
        "the irq-thread-priority fix has nothing to raise"
    )


def fixes_to_measure(findings: list[dict], wanted: list[str] | None) -> list[dict]:
    """The findings whose fixes --measure applies: all, or those --fix names (each one a fix it can apply here)."""
    if not wanted:
        return findings
    can = [f["id"] for f in advise.measurable(findings)]
    for fid in wanted:
        if fid not in can:
            raise RtqError(
                f"--fix {fid}: not a fix advise can apply and measure here (these can: {', '.join(can) or 'none'})"
            )
    return [f for f in findings if f["id"] in wanted]


def advise_case(name: str | None, cpus: str, priority: int, duration: str) -> dict:
    """What `advise --measure` measures: a probe on the real-time CPUs at the application's priority for
    --duration (default the timer), or the first case of a scenario file as it is written."""
    from rtqual.probes.catalog import ALL_PROBES, check_params, probe_case
    from rtqual.units import online_cpus

    name = name or "timer"
    if name in ALL_PROBES and not ALL_PROBES[name].hidden:
        fields = ALL_PROBES[name].params
        given = {"duration": duration, "cpus": cpus, "priority": priority}
        params = check_params(name, {k: v for k, v in given.items() if k in fields}, "", name_of=lambda k: "--" + k)
        return probe_case(name, params, online_cpus(), f"001-{name}")
    if not Path(name).is_file():
        shown_probes = ", ".join(n for n, p in ALL_PROBES.items() if not p.hidden)
        raise RtqError(f"--case {name}: neither a probe ({shown_probes}) nor a scenario file")
    from rtqual import scenario

    _, cases = scenario.load_scaled(name, None)
    return cases[0]

"""rtqual command line. Only main() prints errors and exits; everything else raises RtqError."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rtqual import __version__, _native, rawfile, report
from rtqual import bundle as bundle_mod
from rtqual.conditions import CHANGES_FILE, Conditions, restore_from_bundle
from rtqual.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_SKIP, VERDICT_EXIT, RtqError
from rtqual.live.terminal import TerminalDisplay
from rtqual.runner import Interrupted, run_case, worst
from rtqual.scenario.probes import PROBES, check_params, probe_case
from rtqual.units import format_cpulist, online_cpus, parse_cpulist, parse_duration_ns


class Parser(argparse.ArgumentParser):
    """argparse that raises a one-line RtqError instead of printing usage and exiting 2."""

    def error(self, message):
        raise RtqError(f"{self.prog}: {message} (see --help)")


def build_scenario_run_parser() -> Parser:
    """`rtqual run SCENARIO.toml`: a separate parser, chosen when the run target is a file."""
    p = Parser(prog="rtqual run", description="Run every case of a scenario file into one bundle.")
    p.add_argument("scenario", help="scenario file (TOML); rtqual plan shows its cases")
    p.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    p.add_argument("--raw", action="store_true", help="keep every sample of every case")
    p.add_argument("-o", "--output", help="bundle directory (default: the scenario's, or rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    return p


def _is_scenario_target(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[0] == "run" and (argv[1].endswith(".toml") or Path(argv[1]).is_file())


def build_parser() -> Parser:
    p = Parser(prog="rtqual", description="Qualify a Linux host for real-time control.")
    p.add_argument("--version", action="store_true", help="print rtqual's and the probes' versions")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a measurement (PROBE or SCENARIO.toml) and write a result bundle")
    run_sub = run.add_subparsers(dest="probe", metavar="PROBE", required=True)
    t = run_sub.add_parser(
        "timer",
        help="cyclic timer wake-up latency (cyclictest-class)",
        description="One pinned thread per CPU sleeps to absolute deadlines; latency = wake-up time - deadline.",
    )
    t.add_argument("--cpus", help="CPU list, e.g. 0-3,8 (default: all online CPUs)")
    t.add_argument("--policy", choices=["fifo", "rr", "other"], default="fifo")
    t.add_argument("--priority", type=int, default=80, help="RT priority 1-99 (default 80)")
    t.add_argument("--interval", default="1ms", help="wake-up period (default 1ms)")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--duration", default="10s", help="measured time (default 10s)")
    g.add_argument("--loops", type=int, help="measured periods per CPU instead of --duration")
    t.add_argument("--warmup", type=int, default=100, help="samples discarded per CPU first (default 100)")
    t.add_argument("--threshold", default="100us", help="samples above it are logged as events (default 100us)")
    t.add_argument("--max-latency", help="requirement: fail (exit 2) if the max exceeds it")
    t.add_argument("--p99-latency", help="requirement: fail (exit 2) if p99 exceeds it")
    t.add_argument("--raw", action="store_true", help="keep every sample (raw.bin; rtqual export raw)")
    t.add_argument("--raw-max-mb", type=int, default=256, help="size cap of the raw file (default 256 MB)")
    t.add_argument("--no-dma-latency", action="store_true", help="do not hold /dev/cpu_dma_latency at 0")
    t.add_argument(
        "--allow-degraded",
        action="store_true",
        help="without RT privileges, run anyway as SCHED_OTHER and mark the result degraded",
    )
    t.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    t.add_argument("-q", "--quiet", action="store_true", help="no live progress")

    for name, probe in PROBES.items():  # every other probe: options from its parameter table
        if name != "timer":
            sp = add_probe_parser(run_sub, name, probe)
            if probe.service:
                sp.add_argument(
                    "--baseline",
                    default="5s",
                    help="timer latency measured first on the same host, for comparison (default 5s; 0: none)",
                )

    f = run_sub.add_parser("fake", help=argparse.SUPPRESS)  # pipeline tests: replays a script
    f.add_argument("--script", required=True)
    f.add_argument("--threshold", default="100us")
    f.add_argument("--raw", action="store_true")
    f.add_argument("--raw-max-mb", type=int, default=256)
    f.add_argument("-o", "--output")
    f.add_argument("-q", "--quiet", action="store_true")

    pl = sub.add_parser("plan", help="print a scenario's cases and total time; runs nothing")
    pl.add_argument("scenario", help="scenario file (TOML)")
    pl.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    pl.add_argument("--json", action="store_true")

    s = sub.add_parser("show", help="print the results of a bundle")
    s.add_argument("bundle")
    s.add_argument("--json", action="store_true", help="machine-readable statistics")
    s.add_argument(
        "--table",
        choices=["cases", *report.PAPER_TABLES],
        help="summary layout: one row per case, or a seed paper's columns (default: the scenario's)",
    )

    c = sub.add_parser("compare", help="two bundles side by side: their cases paired by id, with ratios B/A")
    c.add_argument("bundle_a", metavar="A")
    c.add_argument("bundle_b", metavar="B")
    c.add_argument("--json", action="store_true", help="machine-readable")

    e = sub.add_parser("export", help="export data from a bundle")
    e_sub = e.add_subparsers(dest="what", metavar="WHAT", required=True)
    er = e_sub.add_parser("raw", help="raw samples as CSV: case,cpu,time_ns,latency_ns")
    er.add_argument("bundle")

    r = sub.add_parser("restore", help="put back host settings a killed run left changed")
    r.add_argument("bundle")

    h = sub.add_parser("host", help="host facts that matter for real-time behaviour")
    h.add_argument("--json", action="store_true")
    return p


def add_probe_parser(run_sub, name: str, probe) -> None:
    """`rtqual run NAME [--option value ...]` from the probe's parameter table."""
    sp = run_sub.add_parser(name, help=probe.help, description=probe.help)
    for key, f in probe.params.items():
        opt = "--" + key.replace("_", "-")
        default = f" (default {f.default})" if f.default not in (None, False) else ""
        if f.kind == "bool":
            sp.add_argument(opt, action="store_true", help=f.help)
        else:
            sp.add_argument(opt, type=int if f.kind == "int" else str, help=f.help + default, choices=f.choices or None)
    sp.add_argument("--raw", action="store_true", help="keep every sample (raw.bin; rtqual export raw)")
    sp.add_argument("--raw-max-mb", type=int, default=256, help="size cap of the raw file (default 256 MB)")
    sp.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    return sp


def _given(value) -> bool:
    """An option the user gave: not left at None, a flag not False (a given 0 counts)."""
    return value is not None and value is not False


def probe_options_case(name: str, a) -> dict:
    """Validate a native probe's options with its table and make the case."""
    given = {k: getattr(a, k) for k in PROBES[name].params if _given(getattr(a, k, None))}
    params = check_params(name, given, "", name_of=lambda k: "--" + k.replace("_", "-"))
    return probe_case(name, params, online_cpus(), f"001-{name}")


def timer_case(a) -> dict:
    """Validate `rtqual run timer` options with the same table as scenario files and make the case."""
    raw = {
        "cpus": a.cpus,
        "policy": a.policy,
        "priority": a.priority,
        "interval": a.interval,
        "duration": None if a.loops is not None else a.duration,
        "loops": a.loops,
        "warmup": a.warmup,
        "threshold": a.threshold,
        "max_latency": a.max_latency,
        "p99_latency": a.p99_latency,
        "no_dma_latency": a.no_dma_latency,
        "allow_degraded": a.allow_degraded,
    }
    params = check_params(
        "timer", {k: v for k, v in raw.items() if _given(v)}, "", name_of=lambda k: "--" + k.replace("_", "-")
    )
    if a.cpus:
        parse_cpulist(a.cpus)  # every CPU asked for must be online here
    return probe_case("timer", params, online_cpus(), "001-timer")


def service_cases(name: str, a) -> list[dict]:
    """A probe measured against rtqual's IOC (`rtqual run ioc`): a timer baseline on the same host
    first (--baseline), then the probe's case, whose IOC the runner starts around it."""
    case = probe_options_case(name, a)
    if a.baseline.strip() == "0" or not parse_duration_ns(a.baseline, "--baseline"):
        return [case]
    base = {"duration": a.baseline, "policy": case["params"]["policy"], "priority": case["params"]["priority"]}
    if a.allow_degraded:
        base["allow_degraded"] = True
    params = check_params("timer", base, "", name_of=lambda k: "--baseline" if k == "duration" else "--" + k)
    timer = probe_case(
        "timer", params, online_cpus(), "001-timer-baseline", label=f"timer baseline {format_cpulist(online_cpus())}"
    )
    case["id"] = f"002-{name}"
    return [timer, case]


def fake_case(a) -> dict:
    """The fake probe replays a script of samples through the real pipeline (tests, no root)."""
    threshold_ns = _positive_ns(a.threshold, "--threshold")
    args = ["--script", str(Path(a.script).resolve()), "--threshold", f"{threshold_ns}ns"]
    return {
        "id": "001-fake",
        "label": f"fake {Path(a.script).name}",
        "probe": "fake",
        "args": args,
        "params": {"script": a.script, "threshold_ns": threshold_ns},
        "requirements": {},
    }


def _positive_ns(text: str, what: str) -> int:
    ns = parse_duration_ns(text, what)
    if ns <= 0:
        raise RtqError(f"{what}: must be greater than 0 (got {text})")
    return ns


def cmd_run(a, argv: list[str]) -> int:
    if PROBES.get(a.probe) and PROBES[a.probe].service:
        cases = service_cases(a.probe, a)
        return execute(
            cases,
            argv,
            a.output,
            a.quiet,
            raw_mb=a.raw_max_mb if a.raw else 0,
            plan={"schema_version": 1, "cases": cases},
            scenario_toml=None,
        )
    case = (
        timer_case(a) if a.probe == "timer" else fake_case(a) if a.probe == "fake" else probe_options_case(a.probe, a)
    )
    text = scenario_text(case, argv) if case["probe"] == "timer" else None
    return execute(
        [case],
        argv,
        a.output,
        a.quiet,
        raw_mb=a.raw_max_mb if a.raw else 0,
        plan={"schema_version": 1, "cases": [case]},
        scenario_toml=text,
    )


def load_scenario(a):
    """The scenario file of `run`/`plan`, validated, and its cases expanded at --scale."""
    from rtqual import scenario

    if a.scale is not None and not a.scale > 0:
        raise RtqError(f"--scale: must be greater than 0 (got {a.scale})")
    sc = scenario.load(a.scenario)
    return sc, scenario.expand(sc, scale=a.scale)


def cmd_run_scenario(a, argv: list[str]) -> int:
    from rtqual import scenario

    sc, cases = load_scenario(a)
    raw = a.raw or sc["run"].get("raw", False)
    return execute(
        cases,
        argv,
        a.output or sc["run"].get("output"),
        a.quiet,
        raw_mb=256 if raw else 0,
        plan=scenario.plan_json(cases, sc),
        scenario_toml=sc["text"],
    )


def execute(
    cases: list[dict],
    argv: list[str],
    output: str | None,
    quiet: bool,
    raw_mb: int,
    plan: dict,
    scenario_toml: str | None,
) -> int:
    """Check every case, then run them into a new bundle; print the results and, last, the bundle path.
    A case's "service" spec (an IOC) becomes the service the runner starts around its probe."""
    from rtqual.epics.service import make_service

    services = []
    try:
        runs = []
        for case in cases:  # the plan keeps the service specs; the runs get the services themselves
            run = dict(case)
            if case.get("service"):
                services.append(make_service(case["service"]))
                run["service"], run["args"] = services[-1], services[-1].resolve(case["args"])
            runs.append(run)
        return _execute(runs, argv, output, quiet, raw_mb, plan, scenario_toml)
    finally:
        for svc in services:
            svc.discard()


def _execute(
    cases: list[dict],
    argv: list[str],
    output: str | None,
    quiet: bool,
    raw_mb: int,
    plan: dict,
    scenario_toml: str | None,
) -> int:
    from rtqual.host import facts
    from rtqual.loads import LoadSet, make_load

    for case in cases:  # everything that can be known wrong is said before anything runs
        _native.check(case["probe"], case["args"])
        LoadSet([make_load(spec) for spec in case.get("loads", [])]).prepare_all()
    b = bundle_mod.Bundle(Path(output) if output else bundle_mod.default_path(), argv, _native.probe_version())
    if raw_mb:
        for case in cases:
            case["args"] = case["args"] + [
                "--raw",
                str(b.path / "cases" / case["id"] / "raw.bin"),
                "--raw-max-bytes",
                str(raw_mb * 1024 * 1024),
            ]
    tools = {"rtqual": __version__, "rtqual-probe": b.manifest["probe_version"]}
    before = facts.collect(tools=tools)
    bundle_mod.write_json(b.path / "host" / "facts-before.json", before)
    bundle_mod.write_json(b.path / "host" / "tunables-before.json", facts.tunables(before))
    bundle_mod.write_json(b.path / "plan.json", plan)
    if scenario_toml is not None:
        bundle_mod.write_text(b.path / "scenario.toml", scenario_toml)
    guard, verdicts = Interrupted(), []
    cond = Conditions(state_path=b.path / CHANGES_FILE)
    display = TerminalDisplay(quiet=quiet, cases=cases)
    try:
        with guard.installed():
            for case in cases:
                if guard.signum:
                    break
                verdicts.append(run_case(case, b, display, guard, cond)["verdict"])
    finally:
        cond.restore()
        after = facts.collect(tools=tools)
        bundle_mod.write_json(b.path / "host" / "facts-after.json", after)
        bundle_mod.write_json(b.path / "host" / "tunables-after.json", facts.tunables(after))
        interrupted = bool(guard.signum) or len(verdicts) < len(cases)
        b.finish("interrupted" if interrupted else "complete", "inconclusive" if interrupted else worst(verdicts))
    print(report.show_text(bundle_mod.load(b.path)))
    print(b.path)
    return VERDICT_EXIT[b.manifest["verdict"]]


def scenario_text(case: dict, argv: list[str]) -> str:
    """A one-case scenario equivalent to the command line, for the bundle (`rtqual plan` reads it)."""
    p = case["params"]
    params = {
        "cpus": format_cpulist(p["cpus"]),
        "policy": p["policy"],
        "priority": p["priority"],
        "interval": f"{p['interval_ns']}ns",
        "warmup": p["warmup"],
        "threshold": f"{p['threshold_ns']}ns",
    }
    params.update({"loops": p["loops"]} if p["loops"] else {"duration": f"{p['duration_ns']}ns"})
    params.update({k.replace("_ns", "_latency"): f"{v}ns" for k, v in case["requirements"].items()})
    body = ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items())
    return (
        f'# {" ".join(argv)}\n[[case]]\nprobe = "{case["probe"]}"\nlabel = {json.dumps(case["label"])}\n'
        f"params = {{ {body} }}\n"
    )


def cmd_plan(a) -> int:
    from rtqual import scenario

    sc, cases = load_scenario(a)
    if a.json:
        print(json.dumps(scenario.plan_json(cases, sc), indent=1))
    else:
        print(scenario.plan_text(cases, scenario.plan_title(sc)))
    return 0


def cmd_show(a) -> int:
    data = bundle_mod.load(a.bundle)
    if a.json:
        print(json.dumps(report.show_json(data), indent=1))
    else:
        print(report.show_text(data, a.table))
    return 0


def cmd_compare(a) -> int:
    from rtqual import compare

    first, second = bundle_mod.load(a.bundle_a), bundle_mod.load(a.bundle_b)
    if a.json:
        print(json.dumps(compare.compare_json(first, second), indent=1))
    else:
        print(compare.compare_text(first, second))
    return 0


def cmd_export_raw(a) -> int:
    data = bundle_mod.load(a.bundle)
    files = [(r["id"], Path(a.bundle) / "cases" / r["id"] / "raw.bin") for r in data["cases"]]
    files = [(cid, f) for cid, f in files if f.is_file()]
    if not files:
        raise RtqError(f"{a.bundle}: no raw samples (run with --raw)")
    out = sys.stdout
    out.write("case,cpu,time_ns,latency_ns\n")
    for cid, f in files:
        for cpu, time_ns, latency_ns, _ in rawfile.samples(f):
            out.write(f"{cid},{cpu},{time_ns},{latency_ns}\n")
    return 0


def cmd_restore(a) -> int:
    actions = restore_from_bundle(a.bundle)
    for act in actions:
        print(json.dumps(act))
    print(f"{len(actions)} setting(s) restored from {a.bundle}" if actions else f"{a.bundle}: nothing to restore")
    failed = [x for x in actions if x.get("error") or x.get("ok") is False]
    return EXIT_ERROR if failed else 0


def cmd_host(a) -> int:
    from rtqual.host import facts

    f = facts.collect(tools={"rtqual": __version__, "rtqual-probe": _try_probe_version()})
    if a.json:
        print(json.dumps(f, indent=1))
    else:
        print(report.format_table(["fact", "value"], [list(r) for r in facts.summary_rows(f)], left=2))
    return 0


def _try_probe_version() -> str:
    try:
        return _native.probe_version()
    except RtqError:
        return "not installed"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if _is_scenario_target(argv):
            return cmd_run_scenario(build_scenario_run_parser().parse_args(argv[1:]), ["rtqual", *argv])
        a = build_parser().parse_args(argv)
        if a.version:
            print(f"rtqual {__version__}\nrtqual-probe {_try_probe_version()}")
            return 0
        if a.command == "run":
            return cmd_run(a, ["rtqual", *argv])
        commands = {
            "plan": cmd_plan,
            "show": cmd_show,
            "compare": cmd_compare,
            "export": cmd_export_raw,
            "restore": cmd_restore,
            "host": cmd_host,
        }
        if a.command in commands:
            return commands[a.command](a)
        build_parser().print_help()
        return EXIT_ERROR
    except RtqError as e:
        kind = "skip" if e.exit_code == EXIT_SKIP else "error"
        msg = str(e).removeprefix("error: ").removeprefix("skip: ")
        print(f"rtqual: {kind}: {msg}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("rtqual: interrupted", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    except BrokenPipeError:
        return 0

"""rtqual command line. Only main() prints errors and exits; everything else raises RtqError."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

from rtqual import __version__
from rtqual.answers.verdict import exit_code
from rtqual.errors import EXIT_ERROR, EXIT_SKIP, RtqError
from rtqual.measure import _native
from rtqual.options import (
    build_monitor_parser,
    build_parser,
    build_scenario_run_parser,
    input_files,
    is_scenario_target,
    output_dir,
    output_file,
    outside_system_trees,
)
from rtqual.publish import report
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.results.bundle.names import REPORT
from rtqual.scenario.single import single_run


def cmd_monitor(argv: list[str]) -> int:
    from rtqual.measure.monitor.loop import Monitor, Options
    from rtqual.scenario.single import probe_options_case

    a = build_monitor_parser(argv).parse_args(argv)
    outside_system_trees(a.textfile, "--textfile")
    case = probe_options_case(a.probe, a)
    return Monitor(case, Options.from_args(a, case)).run()


def cmd_run(a, argv: list[str]) -> int:
    if a.raw_max_mb < 1:
        raise RtqError(f"--raw-max-mb: must be at least 1 (got {a.raw_max_mb})")
    cases, text = single_run(a, argv)
    for case in cases:
        if case.get("duration_auto"):  # said before the run starts, capped or not
            print(f"{case['id']}: {case['duration_auto']['note']}", flush=True)
    plan = {"schema_version": 1, "cases": cases}
    return execute(cases, argv, a.output, a.quiet, a.raw_max_mb if a.raw else 0, plan, text, a.store)


def load_scenario(a):
    from rtqual import scenario

    input_files([a.scenario], "scenario")
    return scenario.load_scaled(a.scenario, a.scale, a.require, a.profile)


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
        store=a.store,
    )


def execute(
    cases: list[dict],
    argv: list[str],
    output: str | None,
    quiet: bool,
    raw_mb: int,
    plan: dict,
    scenario_toml: str | None,
    store: str | None = None,
) -> int:
    """Run the cases into a new bundle (rtqual.measure.run.Run checks them all first); print the results and,
    last, the bundle path; the exit code is the bundle's verdict."""
    from rtqual.measure.run import run

    model = run(
        cases, argv, output=output, quiet=quiet, raw_mb=raw_mb, plan=plan, scenario_toml=scenario_toml, store=store
    )
    print(report.show_text(report.bundle_view(model)))
    if (model.path / REPORT).is_file():
        print(f"report: {model.path / REPORT}")
    print(model.path)
    return exit_code(model.manifest["verdict"])


def cmd_plan(a, argv: list[str]) -> int:
    from rtqual import scenario

    sc, cases = load_scenario(a)
    if a.json:
        print(json.dumps(scenario.plan_json(cases, sc), indent=1))
    else:
        print(scenario.plan_text(cases, scenario.plan_title(sc)))
    return 0


def load_bundle(path: str) -> Model:
    """The bundle's model for the printers (a case no printer can show is damage too); the warnings the model
    gives (each damaged file, the cut case) are said on stderr, never printed as data."""
    model = bundle_mod.load(path, check=report.check_printable)
    for warning in model.warnings:
        print(f"rtqual: warning: {warning}", file=sys.stderr)
    return model


def damage_exit(bundles: list[Model]) -> int:
    """Exit 1 when any bundle read had damage (the intact part was printed), else 0; damage met after loading
    (a stream's records of the wrong shape, left out when read) is said here."""
    for b in bundles:
        for line in b.late_damage():
            print(f"rtqual: warning: {b.path}/{line}", file=sys.stderr)
    return EXIT_ERROR if any(b.damage or b.door_damage for b in bundles) else 0


def cmd_show(a, argv: list[str]) -> int:
    from rtqual.measure import selftest

    data = load_bundle(a.bundle)
    st = selftest.stored(data)
    if a.json:
        out = report.show_json(report.bundle_view(data))
        if st is not None:
            out["selftest"] = st
        print(json.dumps(out, indent=1))
    else:
        print(report.show_text(report.bundle_view(data), a.table))
        if st is not None:
            print("\n" + selftest.text(st))
    return damage_exit([data])


def cmd_verify(a, argv: list[str]) -> int:
    model = bundle_mod.load(a.bundle)
    problems, notes = model.verify()
    for note in notes:
        print(f"{a.bundle}: note: {note}")
    for p in problems:
        print(f"{a.bundle}/{p}")
    n = len(model.manifest.get(bundle_mod.CHECKSUMS, {}))
    if problems:
        raise RtqError(f"{a.bundle}: {len(problems)} damaged, missing or unexpected file(s)")
    print(f"{a.bundle}: intact ({n} file(s) checked)" if n else f"{a.bundle}: no checksums recorded")
    return 0


def cmd_compare(a, argv: list[str]) -> int:
    from rtqual.answers.compare import parse_match
    from rtqual.publish import compare

    output_file(a.report, "--report")
    match = parse_match(a.match)
    seen: dict[Path, Model] = {}  # a bundle named twice is read (and hashed) once
    bundles = [seen.get(Path(p).resolve()) or seen.setdefault(Path(p).resolve(), load_bundle(p))
               for p in [a.bundle_a, a.bundle_b, *a.more]]  # fmt: skip
    data = [{**b.as_dict(), "facts": b.facts("before"), "tuning": b.tuning()} for b in bundles]  # settings differ
    if len(data) == 2:
        out = compare.compare_json(data[0], data[1], match) if a.json else compare.compare_text(data[0], data[1], match)
    else:
        out = compare.compare_many_json(data, match) if a.json else compare.compare_many_text(data, match)
    print(json.dumps(out, indent=1) if a.json else out)
    if a.report:
        from rtqual.publish import htmlreport

        path = htmlreport.write_compare(bundles, Path(a.report), match)
        print(f"report: {path}", file=sys.stderr if a.json else sys.stdout)
    return damage_exit(bundles)


def cmd_import(a, argv: list[str]) -> int:
    from rtqual.measure.run import remember
    from rtqual.publish import imports
    from rtqual.publish.store import check_url
    from rtqual.publish.store import is_off as store_is_off

    input_files(a.files, f"import {a.tool}:", folders=True)
    _ = store_is_off(a.store) or check_url(a.store)
    output_dir(a.output, "--output")
    path = imports.run(a.tool, a.files, a.output)
    remember(Path(path), a.store)
    print(path)
    return 0


def cmd_history(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    if a.history_command == "add":
        input_files(a.bundles, "history add:", folders=True)
        models = []
        with store.open_store(a.store) as s:
            for b in a.bundles:
                models.append(load_bundle(b))  # damage said on stderr: the intact cases are stored
                s.add_run(models[-1])
                print(f"stored {b} in {s.where}")
        return damage_exit(models)
    since = trend.since(a.since)
    with store.open_store(a.store, write=False) as s:
        runs = s.history(a.host, a.case, since)
        windows = s.windows(a.host, since) if not a.case else []
    if a.json:
        print(json.dumps(trend.history_json(runs, windows), indent=1))
    else:
        print(trend.history_text(runs, windows))
    return 0


def cmd_baseline(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    with store.open_store(a.store, write=a.baseline_command == "set") as s:
        if a.baseline_command == "set":
            input_files([a.bundle], "baseline set:", folders=True)
            model = load_bundle(a.bundle)  # damage said on stderr; a damaged manifest stops here
            s.set_baseline(a.name, s.add_run(model))
            print(f"baseline {a.name}: {a.bundle} (in {s.where})")
            return 0
        found = s.baselines()
    print(json.dumps(found, indent=1) if a.json else trend.baselines_text(found))
    return 0


def cmd_check(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    tolerance = trend.parse_tolerance(a.tolerance)
    input_files([a.bundle], "check:", folders=True)
    data = load_bundle(a.bundle)
    if data["damage"]:
        raise RtqError(f"{a.bundle}: damaged (rtqual verify {a.bundle}): not checked")
    with store.open_store(a.store, write=False) as s:
        base = s.baseline(a.baseline)
    findings = trend.check(base, data.as_dict(), tolerance)
    if a.json:
        print(json.dumps(trend.check_json(findings, a.baseline, base, a.bundle, tolerance), indent=1))
    else:
        print(trend.check_text(findings, a.baseline, base, a.bundle, tolerance))
    return exit_code("fail" if any(f["verdict"] == "regressed" for f in findings) else "pass")


def cmd_report(a, argv: list[str]) -> int:
    from rtqual.publish import htmlreport, svgplot

    output_file(a.output, "-o")
    outside_system_trees(a.png, "--png")
    if a.png:
        svgplot.require_png()
    if a.png and Path(a.png).exists() and not Path(a.png).is_dir():
        raise RtqError(f"--png {a.png}: exists and is not a folder")
    bundles = [load_bundle(p) for p in a.bundles]  # checked first: damage said on stderr, the report warns too
    out = Path(a.output) if a.output else bundles[0].path / REPORT if len(bundles) == 1 else None
    path = htmlreport.write_report(
        bundles, out or Path("rtqual-report.html"), Path(a.png) if a.png else None, tail=True
    )
    print(path)
    return damage_exit(bundles)


def cmd_export(a, argv: list[str]) -> int:
    from rtqual.publish import export

    model = load_bundle(a.bundle)
    return max(export.raw_csv(model, sys.stdout), damage_exit([model]))


def cmd_restore(a, argv: list[str]) -> int:
    from rtqual.measure.restore import restore

    actions, line, failed = restore(a.bundle, dry_run=a.dry_run)
    for act in actions:
        print(json.dumps(act))
    print(line)
    return EXIT_ERROR if failed else 0


def cmd_selftest(a, argv: list[str]) -> int:
    from rtqual.measure import selftest

    opts = selftest.parse_options(a.probes, a.sizes, a.count, a.claim)
    output_dir(a.output)
    result, code = selftest.run_selftest(a.quick, **opts, output=a.output, quiet=a.quiet or a.json, argv=argv)
    print(json.dumps(result, indent=1) if a.json else selftest.text(result))
    return code


def cmd_host(a, argv: list[str]) -> int:
    from rtqual.measure.host import facts

    f = facts.collect(tools={"rtqual": __version__, "rtqual-probe": _native.probe_version_or("not installed")})
    if a.json:
        print(json.dumps(f, indent=1))
    else:
        print(report.format_host(f))
    return 0


def cmd_table(a, argv: list[str]) -> int:
    from rtqual.publish import tables

    models = [load_bundle(p) for p in a.bundles]  # damage said on stderr; the intact cases are tabulated
    names = [Path(p).resolve().name for p in a.bundles]
    names = names if len(set(names)) == len(names) else list(a.bundles)  # same folder names: the paths
    t = tables.build(a.layout, [(n, m.cases) for n, m in zip(names, models)])
    print(tables.csv_text(t) if a.csv else tables.text(t), end="" if a.csv else "\n")
    return damage_exit(models)


def cmd_tail(a, argv: list[str]) -> int:
    from rtqual.publish import tail
    from rtqual.units import parse_duration_ns

    periods = tuple(parse_duration_ns(d, "--period") / 1e9 for d in a.period)
    folder = Path(a.bundle)
    data = None
    if (folder / "samples.raw").is_file() and not (folder / "manifest.json").exists():  # jitterdebugger -o DIR -s
        from rtqual.publish.imports import jitterdebugger

        result = tail.analyse_samples(jitterdebugger.timed_samples(folder), f"jitterdebugger {folder.name}", periods)
    else:
        data = load_bundle(a.bundle)
        result = tail.analyse_bundle(data, a.case, periods)
    if a.svg:
        outside_system_trees(a.svg, "--svg")
        bundle_mod.refuse_inputs(a.svg, [a.bundle], "--svg")
        Path(a.svg).mkdir(parents=True, exist_ok=True)
        for i, c in enumerate(result["cases"]):
            svg = tail.figure(c)
            if svg:
                bundle_mod.write_text(Path(a.svg) / f"tail-{i + 1:02d}-cpu{c['cpu']}.svg", svg)
    print(json.dumps(result, indent=1) if a.json else tail.text(result))
    return damage_exit([data]) if data is not None else 0


def cmd_advise(a, argv: list[str]) -> int:
    from rtqual.answers import advise
    from rtqual.measure.host import facts
    from rtqual.units import parse_cpulist

    live = Path(a.root).resolve() == Path("/")
    if not Path(a.root).is_dir():
        raise RtqError(f"--root {a.root}: not a folder")
    cpus = parse_cpulist(a.cpus, check_online=live) if a.cpus else None
    if a.priority is not None and not 1 <= a.priority <= 99:
        raise RtqError(f"--priority: must be 1..99 (got {a.priority})")
    if a.measure and not live:
        raise RtqError("--measure: only on the live host (--root /): it measures this kernel")
    if a.measure and a.rounds < 2:
        raise RtqError(f"--rounds: at least 2 (got {a.rounds}): the spread across rounds says what is noise")
    if a.bundle is not None and (a.measure or not live or a.ioc is not None):
        raise RtqError("--bundle: advises from the bundle's recorded facts; not with --measure, --root or --ioc")
    if a.bundle is not None:
        result = advise_bundle(a.bundle, cpus, a.priority, advise.profile_budget_ns(a.profile), a.input_irq)
    else:
        tun = facts.tuning(a.root)
        result = advise.advise(facts.collect(root=a.root), tun, cpus, a.priority, advise.profile_budget_ns(a.profile))
        if a.ioc is not None:
            result["findings"] = advise.ranked([*result["findings"], live_ioc_finding(a.ioc, a.root, tun, a.input_irq)])
    measured: list[dict] = []
    bundle = None
    if a.measure:
        from rtqual.measure.advise import measure

        output_dir(a.output)
        case = advise_case(a.case, result["cpus"], result["priority"], a.duration)
        model, measured = measure(case, result["findings"], a.rounds, argv, output=a.output, quiet=a.quiet or a.json)
        bundle = model.path
        if model.manifest.get("status") == "interrupted":
            print(f"rtqual: interrupted; every setting restored; the rounds so far: {bundle}", file=sys.stderr)
            return exit_code("inconclusive")
    if a.emit:
        print(advise.emit(result["findings"], measured, a.emit), end="")
    elif a.json:
        out = {**result, **({"measured": measured, "bundle": str(bundle)} if a.measure else {})}
        print(json.dumps(out, indent=1))
    elif a.short:
        print("\n".join(["What to change", *advise.what_to_change(result["findings"], measured)]))
    else:
        print(advise.text(result, measured))
        if bundle is not None:
            print(bundle)
    return 0


def advise_bundle(path: str, cpus, priority, budget_ns, inputs) -> dict:
    """`advise --bundle`: the checks over the host facts a bundle recorded, and the `ioc-threads` finding of
    each of its IOC cases (rtqual.answers.iocpath: threads, interrupt threads, the traced responses' path)."""
    from rtqual.answers import advise, iocpath

    model = load_bundle(path)
    before = model.facts("before")
    if before is None:
        raise RtqError(f"--bundle {path}: no host facts recorded (host/facts-before.json missing or damaged)")
    result = advise.advise(before, model.tuning() or {}, cpus, priority, budget_ns)
    ioc = [f for r in model.cases if (f := iocpath.case_finding(model, r, inputs or []))]
    result["findings"] = advise.ranked([*result["findings"], *ioc])
    return result


def live_ioc_finding(pid: int, root: str, tun: dict, inputs) -> dict:
    """`advise --ioc PID`: the running IOC's threads (below root) against the interrupt threads."""
    from rtqual.answers import iocpath
    from rtqual.measure.host import facts

    threads = facts.threads_of(pid, root)
    if not threads:
        raise RtqError(f"--ioc {pid}: no such process below {root}")
    ioc = [iocpath.thread(t["tid"], t["comm"], t["policy"], t["rt_priority"], t["cpus"]) for t in threads]
    if not any(iocpath.role(t["comm"]) for t in ioc):
        raise RtqError(f"--ioc {pid}: no EPICS IOC thread (callback, scan, CA) in process {pid} ({ioc[0]['comm']})")
    return iocpath.finding(ioc, iocpath.kernel_threads(tun.get("rt_tasks") or []), inputs or [])


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
        shown = ", ".join(n for n, p in ALL_PROBES.items() if not p.hidden)
        raise RtqError(f"--case {name}: neither a probe ({shown}) nor a scenario file")
    from rtqual import scenario

    _, cases = scenario.load_scaled(name, None)
    return cases[0]


def cmd_fleet(a, argv: list[str]) -> int:
    from rtqual.publish import fleet

    output_file(a.report, "--report")
    found = fleet.find(a.paths)
    if not found:
        raise RtqError(f"fleet: no bundle in {' '.join(a.paths)}")
    models = [load_bundle(str(p)) for _, p in found]  # damage said on stderr; the intact cases are shown
    by_host: dict[str, list] = {}
    for (host, _), m in zip(found, models):
        by_host.setdefault(host or str(m.manifest.get("hostname") or m.path.name), []).append(m)
    from rtqual.publish.htmlreport import advice_of

    doc = fleet.build(by_host, lambda m: report.bundle_view(m)["hists"], a.profile, lambda m: advice_of(m)[0])
    print(json.dumps(fleet.json_doc(doc), indent=1) if a.json else fleet.text(doc))
    if a.report:
        page = Path(a.report)
        bundle_mod.refuse_inputs(page, [m.path for m in models], "--report")
        try:
            bundle_mod.write_text(page, fleet.html(doc, page.resolve().parent))
        except OSError as e:
            raise RtqError(f"{page}: cannot write the report ({e.strerror or e})") from None
        print(f"report: {page}", file=sys.stderr if a.json else sys.stdout)
    return damage_exit(models)


def _terminated(signum: int, _frame) -> None:
    """SIGTERM before a run installs its own guard (or after it): stop like Ctrl-C, exit 4, no traceback."""
    raise KeyboardInterrupt


def stop_on_int_and_term() -> None:
    """SIGINT and SIGTERM stop the command at any moment (exit 4), as the run's guard does during the cases:
    also when started with SIGINT ignored (a background job of a script), which would otherwise lose it."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminated)


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the command, not a caller's test
        stop_on_int_and_term()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["monitor"]:
            return cmd_monitor(argv[1:])
        if is_scenario_target(argv):
            return cmd_run_scenario(build_scenario_run_parser().parse_args(argv[1:]), ["rtqual", *argv])
        a = build_parser().parse_args(argv)
        if a.version:
            print(f"rtqual {__version__}\nrtqual-probe {_native.probe_version_or('not installed')}")
            return 0
        command = globals().get(f"cmd_{a.command}")  # `rtqual X …` is cmd_X(parsed options, the command line)
        if command is not None:
            return command(a, ["rtqual", *argv])
        build_parser().print_help()
        return EXIT_ERROR
    except RtqError as e:
        kind = "skip" if e.exit_code == EXIT_SKIP else "error"
        msg = str(e).removeprefix("error: ").removeprefix("skip: ")
        msg = re.sub(r"[\x00-\x1f\x7f]", lambda c: repr(c.group())[1:-1], msg)  # one line, whatever it quotes
        print(f"rtqual: {kind}: {msg}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("rtqual: interrupted", file=sys.stderr)
        return exit_code("inconclusive")
    except BrokenPipeError:
        return 0

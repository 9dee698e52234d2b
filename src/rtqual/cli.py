"""rtqual command line. Only main() prints errors and exits; everything else raises RtqError."""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from pathlib import Path

from rtqual import __version__
from rtqual.answers.requirements import PROFILES
from rtqual.answers.verdict import exit_code
from rtqual.errors import EXIT_ERROR, EXIT_SKIP, RtqError
from rtqual.measure import _native
from rtqual.measure.conditions import restore_from_bundle
from rtqual.probes.catalog import ALL_PROBES, Probe, fields_of
from rtqual.publish import report, views
from rtqual.results import bundle as bundle_mod
from rtqual.results import rawfile
from rtqual.scenario.single import SETTLE_DEFAULT, single_run

STORE_HELP = (
    "history store: a path, sqlite:///PATH or postgresql://... (default: $RTQUAL_STORE, else the default path; "
    "off: store nothing; docs/store.md)"
)


class Parser(argparse.ArgumentParser):
    """argparse that raises a one-line RtqError instead of printing usage and exiting 2; a value that
    starts with a dash and a digit (--duration -5s) is a value, so the range check can name it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message):
        where = self.prog.removeprefix("rtqual").strip()  # main() names the program once
        raise RtqError(f"{where + ': ' if where else ''}{message} (see --help)")


def build_scenario_run_parser() -> Parser:
    """`rtqual run SCENARIO.toml`: a separate parser, chosen when the run target is a file."""
    p = Parser(prog="rtqual run", description="Run every case of a scenario file into one bundle.")
    p.add_argument("scenario", help="scenario file (TOML); rtqual plan shows its cases")
    p.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    p.add_argument("--raw", action="store_true", help="keep every sample of every case")
    p.add_argument("-o", "--output", help="bundle directory (default: the scenario's, or rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    return p


def _is_scenario_target(argv: list[str]) -> bool:
    """`rtqual run X` runs a scenario file when X ends in .toml or names a path (a slash), or is a file that is
    not a probe's name: a file called `timer` in the current folder never hides the timer probe."""
    if len(argv) < 2 or argv[0] != "run":
        return False
    target = argv[1]
    return target.endswith(".toml") or "/" in target or (target not in ALL_PROBES and Path(target).is_file())


def build_parser() -> Parser:
    p = Parser(prog="rtqual", description="Qualify a Linux host for real-time control.")
    p.add_argument("--version", action="store_true", help="print rtqual's and the probes' versions")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a measurement (PROBE or SCENARIO.toml) and write a result bundle")
    run_sub = run.add_subparsers(dest="probe", metavar="PROBE", required=True)
    for name, probe in ALL_PROBES.items():  # every probe: options from its native table (fake hidden)
        sp = add_probe_parser(run_sub, name, probe)
        if probe.service:
            sp.add_argument(
                "--baseline",
                default="5s",
                help="timer latency measured first on the same host, for comparison (default 5s; 0: none)",
            )

    pl = sub.add_parser("plan", help="print a scenario's cases and total time; runs nothing")
    pl.add_argument("scenario", help="scenario file (TOML)")
    pl.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    pl.add_argument("--json", action="store_true")

    s = sub.add_parser("show", help="print the results of a bundle")
    s.add_argument("bundle")
    s.add_argument("--json", action="store_true", help="machine-readable statistics")
    s.add_argument(
        "--table",
        choices=["cases", *views.PAPER_TABLES],
        help="summary layout: one row per case, or a seed paper's columns (default: the scenario's)",
    )

    c = sub.add_parser(
        "compare", help="bundles side by side: their cases paired by id (else label), with ratios to the first"
    )
    c.add_argument("bundle_a", metavar="A")
    c.add_argument("bundle_b", metavar="B")
    c.add_argument("more", metavar="C", nargs="*", help="more bundles (each compared with A)")
    c.add_argument("--json", action="store_true", help="machine-readable")
    c.add_argument("--report", metavar="FILE.html", help="also write the comparison as HTML with overlaid figures")

    im = sub.add_parser(
        "import",
        help="other tools' results as an rtqual bundle (cyclictest, rtla, jitterdebugger, rteval; docs/import.md)",
    )
    im.add_argument("tool", metavar="TOOL", help="cyclictest, rtla, jitterdebugger or rteval")
    im.add_argument("files", metavar="FILE", nargs="+", help="the tool's output files (jitterdebugger: its -o folder)")
    im.add_argument("-o", "--output", help="bundle directory (default rtqual-import-<tool>-<time>)")
    im.add_argument("--store", metavar="URL", help=STORE_HELP + "; the imported bundle is stored as a run")

    rp = sub.add_parser("report", help="a self-contained HTML report of bundles (figures, verdicts, host facts)")
    rp.add_argument("bundles", metavar="BUNDLE", nargs="+")
    rp.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="report file (default: BUNDLE/report.html of one bundle, else rtqual-report.html)",
    )
    rp.add_argument("--png", metavar="DIR", help="also write every figure as PNG (matplotlib) and SVG into DIR")

    e = sub.add_parser("export", help="export data from a bundle")
    e_sub = e.add_subparsers(dest="what", metavar="WHAT", required=True)
    er = e_sub.add_parser("raw", help="raw samples as CSV: case,cpu,time_ns,latency_ns")
    er.add_argument("bundle")

    r = sub.add_parser(
        "restore",
        help="put back host settings a killed run left changed, remove its temp folders (only rtqual's own, "
        "only a journal written on this host in this boot: docs/bundle.md)",
    )
    r.add_argument("bundle")
    r.add_argument("--dry-run", action="store_true", help="print what would be done (one line each), change nothing")

    v = sub.add_parser("verify", help="check every file of a bundle against the checksums in its manifest")
    v.add_argument("bundle")

    sub.add_parser(
        "monitor",
        help="measure without end and publish each window: Prometheus, node_exporter textfile, store, EPICS PVs",
        add_help=False,
    )
    st = sub.add_parser(
        "selftest",
        help="prove on this host that the probes catch injected stalls of known size (docs/selftest.md)",
    )
    st.add_argument("--quick", action="store_true", help="a subset: the timer at 2, 10, 50 ms, the others at 10 ms")
    st.add_argument("--json", action="store_true", help="the result as one JSON object")
    st.add_argument("--probes", help="comma-separated subset of timer,event,switch,msg,ioc")
    st.add_argument("--sizes", help="comma-separated stall lengths, e.g. 2ms,10ms (default 2ms,10ms,50ms)")
    st.add_argument("--count", type=int, help="stalls per case (default 10; --quick 5)")
    st.add_argument("--claim", help=argparse.SUPPRESS)  # the injector lies: the tests' failing selftest
    st.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    st.add_argument("-q", "--quiet", action="store_true", help="no live progress")

    h = sub.add_parser("host", help="host facts that matter for real-time behaviour")
    h.add_argument("--json", action="store_true")
    add_store_parsers(sub)
    return p


def add_store_parsers(sub) -> None:
    """`rtqual history [add BUNDLE...]`, `rtqual baseline set|list`, `rtqual check` (docs/store.md)."""
    hi = sub.add_parser("history", help="the trend of stored runs and monitor windows (docs/store.md)")
    hi.add_argument("--json", action="store_true", help="machine-readable")
    hi.add_argument("--host", metavar="H", help="only this host")
    hi.add_argument("--case", metavar="LABEL", help="only cases with this label (or case id)")
    hi.add_argument("--since", metavar="DUR", help="only runs and windows that started within DUR (e.g. 7d, 24h)")
    hi.add_argument("--store", metavar="URL", help=STORE_HELP)
    hi_sub = hi.add_subparsers(dest="history_command", metavar="add")
    ha = hi_sub.add_parser("add", help="store bundles (runs from before the store, copied from other hosts)")
    ha.add_argument("bundles", metavar="BUNDLE", nargs="+")
    ha.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help=STORE_HELP)

    bl = sub.add_parser("baseline", help="name a stored run as a baseline for rtqual check")
    bl_sub = bl.add_subparsers(dest="baseline_command", metavar="set|list", required=True)
    bs = bl_sub.add_parser("set", help="make BUNDLE (stored if needed) the baseline named --name")
    bs.add_argument("bundle", metavar="BUNDLE")
    bs.add_argument("--name", default="default", help="baseline name (default 'default')")
    bs.add_argument("--store", metavar="URL", help=STORE_HELP)
    bli = bl_sub.add_parser("list", help="the baselines: name, bundle, host, kernel")
    bli.add_argument("--json", action="store_true")
    bli.add_argument("--store", metavar="URL", help=STORE_HELP)

    ck = sub.add_parser(
        "check", help="compare a bundle with a baseline: exit 2 naming each statistic that regressed (a CI gate)"
    )
    ck.add_argument("bundle", metavar="BUNDLE")
    ck.add_argument("--baseline", default="default", metavar="N", help="baseline name (default 'default')")
    ck.add_argument(
        "--tolerance",
        default="10%",
        help="how far above the baseline's value a statistic (max, p99.99, p99, mean) may be (default 10%%)",
    )
    ck.add_argument("--json", action="store_true", help="machine-readable")
    ck.add_argument("--store", metavar="URL", help=STORE_HELP)


def add_probe_parser(run_sub, name: str, probe: Probe):
    """`rtqual run NAME [--option value ...]` from the probe's parameter table; options that exclude each
    other (--duration, --loops) in one group; --load and --settle for loads around the measurement."""
    listed = {} if probe.hidden else {"help": probe.help}  # argparse lists a sub-command only with a help
    sp = run_sub.add_parser(name, description=probe.help, **listed)
    add_param_options(sp, probe)
    return add_run_options(sp)


def add_param_options(sp, probe: Probe, skip: tuple = ()) -> None:
    """The probe's parameters as options (`--interval 1ms`), those that exclude each other in one group."""
    groups = {k: sp.add_mutually_exclusive_group() for pair in probe.exclusive for k in pair[:1]}
    where = {k: groups[pair[0]] for pair in probe.exclusive for k in pair}
    for key, f in fields_of(probe).items():
        if key in skip:
            continue
        opt = "--" + key.replace("_", "-")
        default = f" (default {f.default})" if f.default not in (None, False) else ""
        target = where.get(key, sp)
        if f.kind == "bool":
            target.add_argument(opt, action="store_true", help=f.help)
        else:
            target.add_argument(
                opt, type=int if f.kind == "int" else str, help=f.help + default, choices=f.choices or None
            )


def add_run_options(sp):
    """`rtqual run PROBE`'s own options beside the probe's: loads, requirements, raw, output."""
    sp.add_argument(
        "--load",
        action="append",
        metavar="NAME[,key=value...]",
        help="a load running during the measurement, as in scenario files (hackbench, pi_stress, stress-ng, "
        "cpu-hog, command), e.g. hackbench,groups=4 or cpu-hog,cpus=1; repeatable",
    )
    sp.add_argument("--settle", help=f"time the loads run before the probe starts (default {SETTLE_DEFAULT})")
    sp.add_argument(
        "--require",
        action="append",
        metavar="EXPR",
        help="a requirement judged on the measurement: 'STAT OP DURATION' (min p50 mean p99 p99.9 p99.99 "
        "p99.999 max stddev), 'over(DURATION) OP PERCENT', 'overruns OP N', 'count OP N'; OP <= < >= > ==; "
        "e.g. 'p99.9 <= 100us'; repeatable (docs/requirements.md)",
    )
    sp.add_argument("--profile", choices=list(PROFILES), help="a named set of requirements (docs/requirements.md)")
    sp.add_argument("--raw", action="store_true", help="keep every sample (raw.bin; rtqual export raw)")
    sp.add_argument("--raw-max-mb", type=int, default=256, help="size cap of the raw file (default 256 MB)")
    sp.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    sp.add_argument("--store", metavar="URL", help=STORE_HELP)
    return sp


def output_file(path: str | None, option: str) -> None:
    """An output file option (FILE.html) must name a file, not a folder or a device, outside /proc, /sys, /dev."""
    outside_system_trees(path, option)
    if path is not None and Path(path).exists() and not Path(path).is_file():
        raise RtqError(f"{option} {path}: exists and is not a regular file")


def outside_system_trees(path: str | None, what: str) -> None:
    """An output path (file or folder) in /proc, /sys or /dev is refused: writing there changes the system.
    `what` leads the message (the option, or what was being made)."""
    from rtqual.util import system_tree

    tree = system_tree(path) if path else None
    if tree:
        raise RtqError(f"{what} {path}: in {tree}, a kernel or device tree: write results to an ordinary folder")


def input_files(paths: list[str], what: str, folders: bool = False) -> None:
    """Input paths must exist and be regular files (or folders where the command reads one)."""
    for p in paths:
        f = Path(p)
        if not f.exists():
            raise RtqError(f"{what} {p}: no such file")
        if not (f.is_file() or (folders and f.is_dir())):
            raise RtqError(f"{what} {p}: not a regular file")


def build_monitor_parser(argv: list[str]) -> Parser:
    """`rtqual monitor [--probe NAME] [the probe's options] [monitor options]`: the probe's options come
    from its table, so --probe is read first (default timer)."""
    from rtqual.measure.monitor.loop import monitorable
    from rtqual.probes.catalog import REQUIREMENTS

    names = [n for n in ALL_PROBES if monitorable(n)]
    pre = Parser(prog="rtqual monitor", add_help=False)
    pre.add_argument("--probe", default="timer", choices=names)
    known, _ = pre.parse_known_args(argv)
    probe = ALL_PROBES[known.probe]
    p = Parser(
        prog="rtqual monitor",
        description="Measure without end (until SIGINT/SIGTERM) and publish each window's statistics: Prometheus "
        "/metrics, a node_exporter textfile, the history store, EPICS PVs (docs/monitoring.md). "
        f"Options below are --probe {known.probe}'s (rtqual monitor --probe NAME --help for another).",
    )
    p.add_argument(
        "--probe",
        default="timer",
        choices=names,
        metavar="NAME",
        help=f"the probe measured (default timer; {', '.join(n for n in names if not ALL_PROBES[n].hidden)})",
    )
    add_param_options(p, probe, skip=tuple(REQUIREMENTS))
    for action in p._actions:  # a monitor has no end of its own
        if action.dest in ("duration", "loops"):
            what = "time" if action.dest == "duration" else "many periods"
            action.help = f"stop after this {what} (default: at SIGINT/SIGTERM)"
    p.add_argument("--window", default="1m", help="statistics window (default 1m, at least 1s)")
    p.add_argument(
        "--listen",
        default="127.0.0.1:9841",
        help="HOST:PORT of the Prometheus /metrics endpoint (default 127.0.0.1:9841, loopback; 'off': none)",
    )
    p.add_argument(
        "--textfile", metavar="DIR", help="also write DIR/rtqual.prom for node_exporter's textfile collector"
    )
    p.add_argument("--store", metavar="URL", help=STORE_HELP + "; every window is stored, buffered while unreachable")
    p.add_argument("--pvs", metavar="PREFIX", help="publish each window as EPICS PVs PREFIX:LAT_MAX, ... (loopback)")
    p.add_argument("--json", action="store_true", help="print each window as a JSON line (default: one text line)")
    # compressed time for tests and benchmarks (a fake probe's day in minutes): a window per N progress records
    p.add_argument("--window-progress", type=int, default=0, help=argparse.SUPPRESS)
    return p


def cmd_monitor(argv: list[str]) -> int:
    from rtqual.measure.monitor.loop import Monitor, Options
    from rtqual.scenario.single import probe_options_case
    from rtqual.units import parse_duration_ns

    a = build_monitor_parser(argv).parse_args(argv)
    outside_system_trees(a.textfile, "--textfile")
    window_ns = parse_duration_ns(a.window, "--window")
    if window_ns < 10**9:
        raise RtqError(f"--window {a.window}: at least 1s")
    case = probe_options_case(a.probe, a)
    listen = None if a.listen in ("off", "") else a.listen
    from rtqual.publish.store import is_off

    bounded = any(getattr(a, k, None) is not None for k in ("duration", "loops"))
    opts = Options(window_ns, listen, a.textfile, not is_off(a.store), a.store, a.pvs, a.json, bounded)
    opts.every_progress = max(a.window_progress, 0)
    opts.trace = bool(case["params"].get("trace"))
    return Monitor(case, opts).run()


def cmd_run(a, argv: list[str]) -> int:
    if a.raw_max_mb < 1:
        raise RtqError(f"--raw-max-mb: must be at least 1 (got {a.raw_max_mb})")
    cases, text = single_run(a, argv)
    plan = {"schema_version": 1, "cases": cases}
    return execute(cases, argv, a.output, a.quiet, a.raw_max_mb if a.raw else 0, plan, text, a.store)


def load_scenario(a):
    """The scenario file of `run`/`plan`, validated, and its cases expanded at --scale."""
    from rtqual import scenario

    if a.scale is not None and not 0 < a.scale < float("inf"):
        raise RtqError(f"--scale: must be greater than 0 (got {a.scale})")
    input_files([a.scenario], "scenario")
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
    from rtqual.measure.run import REPORT_FILE, run
    from rtqual.publish.store import check_url, is_off

    _ = is_off(store) or check_url(store)  # an unsupported --store scheme is said before the run, not after
    outside_system_trees(output, "cannot create bundle")
    path = run(
        cases, argv, output=output, quiet=quiet, raw_mb=raw_mb, plan=plan, scenario_toml=scenario_toml, store=store
    )
    data = bundle_mod.load(path)
    print(report.show_text(data))
    if (path / REPORT_FILE).is_file():
        print(f"report: {path / REPORT_FILE}")
    print(path)
    return exit_code(data["manifest"]["verdict"])


def cmd_plan(a) -> int:
    from rtqual import scenario

    sc, cases = load_scenario(a)
    if a.json:
        print(json.dumps(scenario.plan_json(cases, sc), indent=1))
    else:
        print(scenario.plan_text(cases, scenario.plan_title(sc)))
    return 0


def load_bundle(path: str) -> dict:
    """bundle.load for the printers: a case that still cannot be printed (a shape the checks did not
    foresee) is left out as damaged too; each damaged file is said on stderr, never printed as data."""
    data = bundle_mod.load(path)
    printable = []
    for r in data["cases"]:
        try:
            report.show_text({**data, "cases": [r]})
            json.dumps(report.show_json({**data, "cases": [r]}))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
            data["damage"].append(f"cases/{r.get('id')}/result.json: damaged (cannot be shown: {e!r})")
            continue
        printable.append(r)
    data["cases"] = printable
    for damage in data["damage"]:
        print(f"rtqual: warning: {path}/{damage}", file=sys.stderr)
    if data["cut"]:
        print(f"rtqual: warning: {path}: the run was killed during case {data['cut']}", file=sys.stderr)
    return data


def damage_exit(bundles: list[dict]) -> int:
    """Exit 1 when any bundle read had damage (the intact part was printed), else 0."""
    return EXIT_ERROR if any(b["damage"] for b in bundles) else 0


def cmd_show(a) -> int:
    from rtqual.measure import selftest

    data = load_bundle(a.bundle)
    st = selftest.stored(Path(a.bundle))
    if a.json:
        out = report.show_json(data)
        if st is not None:
            out["selftest"] = st
        print(json.dumps(out, indent=1))
    else:
        print(report.show_text(data, a.table))
        if st is not None:
            print("\n" + selftest.text(st))
    return damage_exit([data])


def cmd_verify(a) -> int:
    problems, notes = bundle_mod.verify(a.bundle)
    for note in notes:
        print(f"{a.bundle}: note: {note}")
    for p in problems:
        print(f"{a.bundle}/{p}")
    n = len(bundle_mod.read_manifest(Path(a.bundle)).get(bundle_mod.CHECKSUMS, {}))
    if problems:
        raise RtqError(f"{a.bundle}: {len(problems)} damaged, missing or unexpected file(s)")
    print(f"{a.bundle}: intact ({n} file(s) checked)" if n else f"{a.bundle}: no checksums recorded")
    return 0


def cmd_compare(a) -> int:
    from rtqual.publish import compare

    output_file(a.report, "--report")
    bundles = [load_bundle(p) for p in [a.bundle_a, a.bundle_b, *a.more]]
    if len(bundles) == 2:
        out = compare.compare_json(*bundles) if a.json else compare.compare_text(*bundles)
    else:
        out = compare.compare_many_json(bundles) if a.json else compare.compare_many_text(bundles)
    print(json.dumps(out, indent=1) if a.json else out)
    if a.report:
        from rtqual.publish import htmlreport

        path = htmlreport.write_compare([a.bundle_a, a.bundle_b, *a.more], Path(a.report))
        print(f"report: {path}", file=sys.stderr if a.json else sys.stdout)
    return damage_exit(bundles)


def cmd_import(a) -> int:
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


def _since(text: str | None) -> float | None:
    """--since DUR as unix seconds (now minus DUR), or None."""
    import time

    from rtqual.units import parse_duration_ns

    return None if text is None else time.time() - parse_duration_ns(text, "--since") / 1e9


def cmd_history(a) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    if a.history_command == "add":
        input_files(a.bundles, "history add:", folders=True)
        with store.open_store(a.store) as s:
            for b in a.bundles:
                s.add_run(Path(b))
                print(f"stored {b} in {s.where}")
        return 0
    since = _since(a.since)
    with store.open_store(a.store, write=False) as s:
        runs = s.history(a.host, a.case, since)
        windows = s.windows(a.host, since) if not a.case else []
    if a.json:
        print(json.dumps(trend.history_json(runs, windows), indent=1))
    else:
        print(trend.history_text(runs, windows))
    return 0


def cmd_baseline(a) -> int:
    from rtqual.publish import store

    with store.open_store(a.store, write=a.baseline_command == "set") as s:
        if a.baseline_command == "set":
            input_files([a.bundle], "baseline set:", folders=True)
            load_bundle(a.bundle)  # damage said on stderr; a damaged manifest stops here
            s.set_baseline(a.name, s.add_run(Path(a.bundle)))
            print(f"baseline {a.name}: {a.bundle} (in {s.where})")
            return 0
        found = s.baselines()
    if a.json:
        print(json.dumps(found, indent=1))
    elif not found:
        print("no baselines (rtqual baseline set BUNDLE)")
    else:
        rows = [[b["name"], b["bundle"], b["host"], b["kernel"] or "-", b["started"] or "-"] for b in found]
        print(views.format_table(["name", "bundle", "host", "kernel", "started"], rows, left=5))
    return 0


def cmd_check(a) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    tolerance = trend.parse_tolerance(a.tolerance)
    input_files([a.bundle], "check:", folders=True)
    data = load_bundle(a.bundle)
    if data["damage"]:
        raise RtqError(f"{a.bundle}: damaged (rtqual verify {a.bundle}): not checked")
    with store.open_store(a.store, write=False) as s:
        base = s.baseline(a.baseline)
    findings = trend.check(base, data, tolerance)
    regressed = [f for f in findings if f["verdict"] == "regressed"]
    if a.json:
        out = {"baseline": a.baseline, "baseline_bundle": base["path"], "bundle": a.bundle, "tolerance": tolerance}
        print(json.dumps({**out, "regressed": [f"{f['label']}: {f['statistic']}" for f in regressed],
                          "findings": findings}, indent=1))  # fmt: skip
    else:
        print(trend.check_text(findings, a.baseline, base, a.bundle, tolerance))
    return exit_code("fail" if regressed else "pass")


def cmd_report(a) -> int:
    from rtqual.publish import htmlreport

    output_file(a.output, "-o")
    outside_system_trees(a.png, "--png")
    if a.png and Path(a.png).exists() and not Path(a.png).is_dir():
        raise RtqError(f"--png {a.png}: exists and is not a folder")
    out = Path(a.output) if a.output else Path(a.bundles[0]) / "report.html" if len(a.bundles) == 1 else None
    bundles = [load_bundle(p) for p in a.bundles]  # checked first: damage said on stderr, the report warns too
    path = htmlreport.write_report(a.bundles, out or Path("rtqual-report.html"), Path(a.png) if a.png else None)
    print(path)
    return damage_exit(bundles)


def cmd_export_raw(a) -> int:
    data = load_bundle(a.bundle)
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
    actions = restore_from_bundle(a.bundle, dry_run=a.dry_run)  # every check first: refused = nothing touched
    from rtqual.measure.epics.ioc import TEMP_PREFIX  # a killed run's IOC folder made before its bundle's journal
    from rtqual.measure.monitor.loop import TEMP_PREFIX as MONITOR_PREFIX  # a killed monitor's work folder
    from rtqual.measure.trace import remove_orphan_instances  # a killed monitor's (no bundle journals it)
    from rtqual.util import remove_orphan_dirs

    dry = a.dry_run
    orphans = [
        *remove_orphan_dirs(TEMP_PREFIX, dry_run=dry),
        *remove_orphan_dirs(MONITOR_PREFIX, dry_run=dry),
        *remove_orphan_instances(dry_run=dry),
    ]
    done = {"action": "would remove"} if dry else {"action": "removed", "restored": True}
    actions += [{"knob": str(d), **done} for d in orphans if str(d) not in {x["knob"] for x in actions}]
    for act in actions:
        print(json.dumps(act))
    if dry:
        said = (
            f"{len(actions)} action(s) would restore from {a.bundle}" if actions else f"{a.bundle}: nothing to restore"
        )
        print(f"{said} (dry run: nothing changed)")
    else:
        print(f"{len(actions)} setting(s) restored from {a.bundle}" if actions else f"{a.bundle}: nothing to restore")
    failed = [x for x in actions if x.get("restored") is False]
    return EXIT_ERROR if failed else 0


def cmd_selftest(a, argv: list[str]) -> int:
    from rtqual.measure import selftest
    from rtqual.units import parse_duration_ns

    probes = [p.strip() for p in a.probes.split(",") if p.strip()] if a.probes else None
    sizes = [parse_duration_ns(x.strip(), "--sizes") for x in a.sizes.split(",")] if a.sizes else None
    for ns in sizes or ():
        if not 100_000 <= ns <= 200_000_000:
            raise RtqError(f"--sizes: {ns} ns is outside 100us..200ms (the injector's range)")
    if a.count is not None and not 1 <= a.count <= 100:
        raise RtqError(f"--count: must be in 1..100 (got {a.count})")
    claim = parse_duration_ns(a.claim, "--claim") if a.claim else None
    output_dir(a.output)
    result, code = selftest.run_selftest(a.quick, probes, sizes, a.count, claim, a.output, a.quiet or a.json, argv)
    print(json.dumps(result, indent=1) if a.json else selftest.text(result))
    return code


def output_dir(path: str | None, option: str = "-o") -> None:
    """-o must be a new or empty folder (the bundle's) outside /proc, /sys, /dev, said before anything runs."""
    outside_system_trees(path, option)
    p = Path(path) if path else None
    if p is not None and p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise RtqError(f"output {p} exists and is not an empty directory: choose another with -o")


def cmd_host(a) -> int:
    from rtqual.measure.host import facts

    f = facts.collect(tools={"rtqual": __version__, "rtqual-probe": _try_probe_version()})
    if a.json:
        print(json.dumps(f, indent=1))
    else:
        print(report.format_host(f))
    return 0


def _try_probe_version() -> str:
    try:
        return _native.probe_version()
    except RtqError:
        return "not installed"


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
        if _is_scenario_target(argv):
            return cmd_run_scenario(build_scenario_run_parser().parse_args(argv[1:]), ["rtqual", *argv])
        a = build_parser().parse_args(argv)
        if a.version:
            print(f"rtqual {__version__}\nrtqual-probe {_try_probe_version()}")
            return 0
        if a.command == "run":
            return cmd_run(a, ["rtqual", *argv])
        if a.command == "selftest":
            return cmd_selftest(a, ["rtqual", *argv])
        commands = {
            "plan": cmd_plan,
            "show": cmd_show,
            "compare": cmd_compare,
            "report": cmd_report,
            "import": cmd_import,
            "export": cmd_export_raw,
            "restore": cmd_restore,
            "verify": cmd_verify,
            "host": cmd_host,
            "history": cmd_history,
            "baseline": cmd_baseline,
            "check": cmd_check,
        }
        if a.command in commands:
            return commands[a.command](a)
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

"""rtqual's command line declared: every command, its options and the checks of paths given as options (an
output outside /proc, /sys, /dev; inputs that exist). rtqual.cli parses with these and dispatches."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rtqual.answers.planning import AUTO_CAP_NS, MARGIN_PCT
from rtqual.answers.requirements import PROFILES
from rtqual.errors import RtqError
from rtqual.fields import suggest
from rtqual.probes.catalog import ALL_PROBES, Probe, fields_of
from rtqual.publish import tables, views
from rtqual.scenario.single import SETTLE_DEFAULT
from rtqual.units import format_duration
from rtqual.util import outside_system_trees

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
        raise RtqError(f"{where + ': ' if where else ''}{_with_hint(message)} (see --help)")

    def parse_args(self, args=None, namespace=None):
        """argparse's parse_args, with "did you mean" for an unknown option: suggested from the options of
        the command it was given to (`run timer --duraton` -> --duration), not only the top-level ones."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            names = [s[2:] for s in _chosen(self, ns)._option_string_actions if s.startswith("--")]
            close = (suggest(x[2:].split("=")[0], names) for x in extras if x.startswith("--"))
            hints = "".join(h.replace("mean '", "mean '--") for h in close)  # compared without the dashes
            self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return ns


def _chosen(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the deepest command given: `rtqual run timer` -> run's timer parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(ns, action.dest, None) in action.choices:
            return _chosen(action.choices[getattr(ns, action.dest)], ns)
    return parser


def _with_hint(message: str) -> str:
    """An invalid choice said without the internal probes (fake, inject) and with a "did you mean"."""
    m = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if not m:
        return message
    shown = [c.strip(" '") for c in m[2].split(",") if not getattr(ALL_PROBES.get(c.strip(" '")), "hidden", False)]
    return f"{message[: m.start()]}invalid choice: '{m[1]}'{suggest(m[1], shown)} (choose from {', '.join(shown)})"


def build_scenario_run_parser() -> Parser:
    """`rtqual run SCENARIO.toml`: a separate parser, chosen when the run target is a file."""
    p = Parser(prog="rtqual run", description="Run every case of a scenario file into one bundle.")
    p.add_argument("scenario", help="scenario file (TOML); rtqual plan shows its cases")
    p.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    p.add_argument("--raw", action="store_true", help="keep every sample of every case")
    add_require_options(p, "every case, after the case's own")
    p.add_argument("-o", "--output", help="bundle directory (default: the scenario's, or rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    return p


def is_scenario_target(argv: list[str]) -> bool:
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
                help="timer latency measured first on the same host, for comparison (default 5s, longer on a "
                f"host with few CPUs: as long as p99.9 needs with a {MARGIN_PCT}%% margin; 0: none)",
            )

    pl = sub.add_parser(
        "plan",
        help="print a scenario's cases, their expected samples, the statistics and requirements those decide, "
        "and the total time; runs nothing",
    )
    pl.add_argument("scenario", nargs="+", help="scenario file(s) (TOML): each one's plan, in the order given")
    pl.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    add_require_options(pl, "every case, after the case's own (whether the case can decide it)")
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
    c.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write the comparison as HTML: what differs between the bundles, each scenario matrix "
        "(e.g. the KEK study's stress methods, frequencies, run lengths) side by side, overlaid figures",
    )
    c.add_argument(
        "--match",
        action="append",
        metavar="A_LABEL=B_LABEL",
        help="pair a case of A with a differently labelled case of the others (label or id; repeatable)",
    )

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

    tb = sub.add_parser(
        "table", help="a seed paper's table: the paper's published values beside the bundles' (docs/tables.md)"
    )
    tb.add_argument("layout", metavar="LAYOUT", choices=list(tables.LAYOUTS), help=", ".join(tables.LAYOUTS))
    tb.add_argument("bundles", metavar="BUNDLE", nargs="+")
    tb.add_argument("--csv", action="store_true", help="the same rows as CSV on stdout (no title, no notes)")

    tl = sub.add_parser(
        "tail", help="the worst case beyond the run: return levels per hour/day/year (EVT, docs/tail.md)"
    )
    tl.add_argument("bundle", metavar="BUNDLE")
    tl.add_argument("--case", metavar="LABEL", help="only this case (its label or id)")
    tl.add_argument(
        "--period", metavar="D", action="append", default=[], help="also this return period (e.g. 7d; repeatable)"
    )
    tl.add_argument("--svg", metavar="DIR", help="also write each case's return-level plot into DIR")
    tl.add_argument("--json", action="store_true")
    add_advise_parser(sub)

    fl = sub.add_parser("fleet", help="many hosts' bundles side by side: worst first, outliers, what differs")
    fl.add_argument("paths", metavar="BUNDLE_OR_DIR", nargs="+", help="bundles, or folders of HOST/BUNDLE (Ansible's)")
    fl.add_argument("--json", action="store_true", help="hosts, their verdicts, outliers, facts; groups of facts")
    fl.add_argument("--report", metavar="FILE", help="also an HTML page: a heat map of hosts x cases, hosts linked")
    fl.add_argument("--profile", choices=list(PROFILES), help="judge every host's cases against this profile")
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
    for action in sp._actions:
        if action.dest == "duration":
            action.help = (action.help or "") + (
                "; auto: as long as every requirement (--require, --profile; none: p99.9 and p99.99) needs for "
                f"its samples with a {MARGIN_PCT}%% margin at the probe's rate, capped at "
                f"{format_duration(AUTO_CAP_NS)} (auto:CAP: another cap)"
            )
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
    add_require_options(sp)
    sp.add_argument("--raw", action="store_true", help="keep every sample (raw.bin; rtqual export raw)")
    sp.add_argument("--raw-max-mb", type=int, default=256, help="size cap of the raw file (default 256 MB)")
    sp.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    sp.add_argument("--store", metavar="URL", help=STORE_HELP)
    return sp


def add_require_options(sp, scope: str = "the measurement") -> None:
    """--require and --profile: requirements judged on `scope` (a probe's run, or every case of a scenario)."""
    sp.add_argument(
        "--require",
        action="append",
        metavar="EXPR",
        help=f"a requirement judged on {scope}: 'STAT OP DURATION' (min p50 mean p99 p99.9 p99.99 "
        "p99.999 max stddev), 'over(DURATION) OP PERCENT', 'overruns OP N', 'count OP N'; OP <= < >= > ==; "
        "e.g. 'p99.9 <= 100us'; repeatable (docs/requirements.md)",
    )
    sp.add_argument("--profile", choices=list(PROFILES), help="a named set of requirements (docs/requirements.md)")


def output_file(path: str | None, option: str) -> None:
    """An output file option (FILE.html) must name a file, not a folder or a device, outside /proc, /sys, /dev."""
    outside_system_trees(path, option)
    if path is not None and Path(path).exists() and not Path(path).is_file():
        raise RtqError(f"{option} {path}: exists and is not a regular file")


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
    add_require_options(p, "each window's PVs, as their alarm limits (docs/monitoring.md)")
    # compressed time for tests and benchmarks (a fake probe's day in minutes): a window per N progress records
    p.add_argument("--window-progress", type=int, default=0, help=argparse.SUPPRESS)
    return p


def output_dir(path: str | None, option: str = "-o") -> None:
    """-o must be a new or empty folder (the bundle's) outside /proc, /sys, /dev, said before anything runs."""
    outside_system_trees(path, option)
    p = Path(path) if path else None
    if p is not None and p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise RtqError(f"output {p} exists and is not an empty directory: choose another with -o")


def add_advise_parser(sub) -> None:
    """`rtqual advise`: what to change on this host, each finding with its fix (docs/advise.md)."""
    ad = sub.add_parser(
        "advise",
        help="what to change for real-time work: findings, blockers first, each with its exact fix (docs/advise.md)",
    )
    ad.add_argument("--cpus", help="the CPUs that will run real-time work (default: the isolated ones, else all but 0)")
    who = ad.add_mutually_exclusive_group()
    who.add_argument("--priority", type=int, help="the application's SCHED_FIFO priority (default 80)")
    who.add_argument(
        "--profile", choices=list(PROFILES), help="a requirement profile: its latency budget sets severities"
    )
    ad.add_argument("--json", action="store_true", help='{"findings": [...], "passed": [...]} (and "measured")')
    ad.add_argument("--short", action="store_true", help="only the 'What to change' lines")
    ad.add_argument("--measure", action="store_true", help="apply each run-time fix for a while and measure it A/B")
    ad.add_argument("--duration", default="10s", help="--measure: each round's measurement per arm (default 10s)")
    ad.add_argument("--rounds", type=int, default=3, help="--measure: rounds of baseline and every fix (default 3)")
    ad.add_argument(
        "--case",
        metavar="SCENARIO_OR_PROBE",
        help="--measure: a probe name or a scenario file's first case (default timer)",
    )
    ad.add_argument(
        "--emit",
        choices=("tuned", "sysctl", "cmdline"),
        help="print the persistent form of the fixes (those that helped, with --measure)",
    )
    ad.add_argument("-o", "--output", help="--measure: bundle directory (default rtqual-<host>-<time>)")
    ad.add_argument("-q", "--quiet", action="store_true", help="--measure: no live progress")
    ad.add_argument(
        "--root", default="/", metavar="DIR", help="read /proc and /sys below DIR (a recorded tree; default /)"
    )
    ad.add_argument(
        "--bundle",
        metavar="DIR",
        help="advise for the host a bundle ran on (its recorded facts) and explain its IOC cases' path",
    )
    ad.add_argument("--ioc", type=int, metavar="PID", help="explain a running IOC's path (its threads, below --root)")
    ad.add_argument(
        "--input-irq",
        metavar="NAME",
        action="append",
        help="--ioc/--bundle: the interrupt that brings the IOC's input (part of its irq/N-NAME thread, e.g. eth0)",
    )

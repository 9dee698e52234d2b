"""`rtqual run PROBE [options]` and `rtqual run SCENARIO.toml`: measure into a new bundle, then publish it (the
bundle's report.html, the history store) and print the results. Measuring (rtqual.measure.run) produces the bundle
and nothing else; this command decides what is published from it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtqual.answers.planning import AUTO_CAP_NS, MARGIN_PCT
from rtqual.answers.verdict import exit_code
from rtqual.commands.common import (
    STORE_HELP,
    Parser,
    add_param_options,
    add_require_options,
    add_store_option,
    input_files,
)
from rtqual.errors import RtqError
from rtqual.probes.catalog import ALL_PROBES, Probe
from rtqual.results.bundle import Model
from rtqual.results.bundle.names import REPORT
from rtqual.scenario.single import SETTLE_DEFAULT
from rtqual.units import format_duration

NAME = "run"
HELP = "run a measurement (PROBE or SCENARIO.toml) and write a result bundle"


def add_arguments(p) -> None:
    run_sub = p.add_subparsers(dest="probe", metavar="PROBE", required=True)
    for name, probe in ALL_PROBES.items():  # every probe: options from its native table (fake hidden)
        sp = add_probe_parser(run_sub, name, probe)
        if probe.service:
            sp.add_argument(
                "--baseline",
                help="timer latency measured first on the same host, for comparison (default 5s, longer on a "
                f"host with few CPUs: as long as p99.9 needs with a {MARGIN_PCT}%% margin; 0: none)",
            )


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
    add_store_option(sp)
    return sp


def scenario_parser() -> Parser:
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


def run(a, argv: list[str]) -> int:
    from rtqual.answers.requirements import kept
    from rtqual.scenario.single import single_run

    if a.raw_max_mb < 1:
        raise RtqError(f"--raw-max-mb: must be at least 1 (got {a.raw_max_mb})")
    cases, text = single_run(a, argv)
    for case in cases:
        if case.get("duration_auto"):  # said before the run starts, capped or not
            print(f"{case['id']}: {case['duration_auto']['note']}", flush=True)
    plan = {"schema_version": 1, "cases": [kept(c) for c in cases]}  # requirements kept as their text
    return execute(cases, argv, a.output, a.quiet, a.raw_max_mb if a.raw else 0, plan, text, a.store)


def load_scenario(path: str, scale, require, profile):
    from rtqual import scenario

    input_files([path], "scenario")
    return scenario.load_scaled(path, scale, require, profile)


def run_scenario(argv: list[str]) -> int:
    """`rtqual run SCENARIO.toml [options]` (argv without the program name)."""
    from rtqual import scenario

    a = scenario_parser().parse_args(argv[1:])
    sc, cases = load_scenario(a.scenario, a.scale, a.require, a.profile)
    raw = a.raw or sc["run"].get("raw", False)
    return execute(
        cases,
        ["rtqual", *argv],
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
    """Measure the cases into a new bundle and publish it; print the results and, last, the bundle path; the exit
    code is the bundle's verdict."""
    from rtqual.publish import report

    model = measure_and_publish(
        cases, argv, store, output=output, quiet=quiet, raw_mb=raw_mb, plan=plan, scenario_toml=scenario_toml
    )
    print(report.show_text(report.bundle_view(model)))
    if (model.path / REPORT).is_file():
        print(f"report: {model.path / REPORT}")
    print(model.path)
    return exit_code(model.manifest["verdict"])


def measure_and_publish(
    cases: list[dict],
    argv: list[str],
    store: str | None = None,
    finish: Callable[[Model], None] | None = None,
    **kw: Any,
) -> Model:
    """Check the cases and the store's URL, measure them into a new bundle (rtqual.measure.run.driver.Run), then
    publish the bundle, also when the run failed or was cut: its model (its path: .path). finish(model): what
    the command adds to the bundle before it is published (a capacity sweep's capacity.json)."""
    from rtqual.measure.run.driver import Run
    from rtqual.publish.store import check_url, is_off

    _ = is_off(store) or check_url(store)  # an unsupported scheme is said before the run, not after
    r = Run(cases, argv, **kw)
    try:
        r.check()
        r.execute()
    finally:
        r.discard()
        if r.model is not None:
            if finish is not None:
                finish(r.model)
            publish(r.model, store)
    assert r.model is not None
    return r.model


RUN_SHADOWS = 5  # a run's report.html: the baseline and the last 5 stored runs of each case as grey shadows


def publish(model: Model, store: str | None) -> None:
    """A finished (or cut) bundle published: its report.html, then the history store. Neither may cost the
    measured result: a failure is a warning on stderr."""
    from rtqual.publish import htmlreport

    try:
        from rtqual.publish.store.shadows import for_bundles

        grey, _ = for_bundles([model], RUN_SHADOWS, store)  # the earlier runs of its cases, grey behind each
        htmlreport.write_report([model], model.path / REPORT, shadows=grey)
    except Exception as e:  # noqa: BLE001 - the bundle is complete already; say what is missing
        print(f"rtqual: warning: {model.path}: no report.html ({e})", file=sys.stderr)
    remember(model, store)


def remember(bundle: Model | Path, url: str | None) -> None:
    """Store the finished (or cut) bundle in the history store (docs/store.md). The store may never cost a
    run: any trouble is one warning on stderr, the bundle stays and can be added later (rtqual history add)."""
    from rtqual.publish import store

    if store.is_off(url):
        return
    try:
        with store.open_store(url) as s:
            s.add_run(bundle)
    except Exception as e:  # noqa: BLE001 - the bundle is complete; say what is missing and how to add it
        path = bundle.path if isinstance(bundle, Model) else bundle
        print(
            f"rtqual: warning: not stored in the history: {e} (the bundle is kept; later: rtqual history add {path})",
            file=sys.stderr,
        )

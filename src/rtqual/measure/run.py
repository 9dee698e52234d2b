"""The run: the one owner of a measurement run. It checks every case before anything runs, then owns the
bundle, the host facts before and after, the host conditions, the signal guard, the services and the
order of cases; each case is run and written at once by rtqual.measure.runner.run_case."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rtqual import __version__
from rtqual.answers.verdict import run_verdict
from rtqual.errors import RtqError
from rtqual.measure import _native
from rtqual.measure.case import Case
from rtqual.measure.conditions import CHANGES_FILE, Conditions
from rtqual.measure.loads import LoadSet, make_load
from rtqual.measure.runner import run_case
from rtqual.measure.session import Interrupted, prepare
from rtqual.measure.terminal import TerminalDisplay
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model, names
from rtqual.util import outside_system_trees

REPORT_FILE = names.REPORT


class Run:
    """One run of cases into one new bundle. check() says everything that can be known wrong before
    anything runs; execute() runs the cases in order and leaves a finished bundle whatever happens."""

    def __init__(
        self,
        cases: list[dict],
        argv: list[str],
        output: str | None = None,
        quiet: bool = False,
        raw_mb: int = 0,
        plan: dict | None = None,
        scenario_toml: str | None = None,
        store: str | None = None,
    ):
        self.cases = [Case.from_plan(c) for c in cases]
        self.plan = plan if plan is not None else {"schema_version": 1, "cases": cases}
        self.argv, self.output, self.quiet, self.raw_mb = argv, output, quiet, raw_mb
        self.scenario_toml = scenario_toml
        self.store = store  # the history store's URL (None: $RTQUAL_STORE or the default)
        self.services: dict[str, Any] = {}  # case id -> its service (started only around its probe)
        self.loads: dict[str, LoadSet] = {}  # case id -> its loads, prepared once
        self.runnable: list[Case] = []  # the cases with the service's options filled in
        self.bundle: bundle_mod.Bundle | None = None

    def check(self) -> None:
        """Make each case's service (its options filled from what the service provides), check the probe's
        options and privileges (`--check`) and prepare its loads, after the output folder (not in /proc, /sys,
        /dev) and the store's URL: one-line RtqError before anything runs."""
        from rtqual.publish.store import check_url, is_off

        outside_system_trees(self.output, "cannot create bundle")
        _ = is_off(self.store) or check_url(self.store)  # an unsupported scheme is said before the run, not after
        for case in self.cases:
            svc, args = prepare(case.probe, case.run_as, case.args, case.service, case.require)
            if svc is not None:
                self.services[case.id] = svc
            loads = self.loads[case.id] = LoadSet([make_load(spec) for spec in case.loads])
            loads.prepare_all()
            self.runnable.append(case.with_args(args))

    def execute(self) -> Model:
        """Run every case into a new bundle (checked first if not yet); the bundle's result model (its files
        hashed once, as they were written). Interrupted or failed, the bundle still holds every finished case,
        the host facts after, and a manifest whose verdict is the exit code's."""
        from rtqual.measure.host import facts

        if len(self.runnable) != len(self.cases):
            self.check()
        out = Path(self.output) if self.output else bundle_mod.default_path()
        guard, verdicts, failed = Interrupted(), [], False
        # from the bundle's first file to its last, a signal only sets guard.signum: no case starts after it,
        # and the bundle is always finished (facts after, status, checksums, report)
        with guard.installed():
            b = self.bundle = bundle_mod.Bundle(out, self.argv, _native.probe_version())
            cond = Conditions(state_path=b.path / CHANGES_FILE)
            for svc in self.services.values():  # the IOC's temp folder: `rtqual restore` removes it after a kill
                for temp in getattr(svc, "temp_paths", list)():
                    cond.note_temp(temp)
            tools = {"rtqual": __version__, "rtqual-probe": b.manifest["probe_version"]}
            display = TerminalDisplay(quiet=self.quiet, cases=[c.view() for c in self.cases])
            try:
                before = facts.collect(tools=tools)
                bundle_mod.write_json(b.path / "host" / "facts-before.json", before)
                bundle_mod.write_json(b.path / "host" / "tunables-before.json", facts.tunables(before))
                bundle_mod.write_json(b.path / "host" / "tuning-before.json", facts.tuning())  # for "What to change"
                bundle_mod.write_json(b.path / "plan.json", self.plan)
                if self.scenario_toml is not None:
                    bundle_mod.write_text(b.path / "scenario.toml", self.scenario_toml)
                for case in self.runnable:
                    if guard.signum:
                        break
                    result = run_case(
                        case,
                        b,
                        display,
                        guard,
                        cond,
                        self.loads[case.id],
                        self.services.get(case.id),
                        raw_bytes=self.raw_mb * 1024 * 1024,
                    )
                    verdicts.append(result["verdict"])
            except RtqError:
                failed = True
                raise
            finally:
                cond.restore(final=True)
                journal = b.path / CHANGES_FILE  # final now: sealed, so `verify` and `restore` see an edit
                if journal.is_file():
                    b.record(journal, save=False, final=True)
                after = facts.collect(tools=tools)
                bundle_mod.write_json(b.path / "host" / "facts-after.json", after)
                bundle_mod.write_json(b.path / "host" / "tunables-after.json", facts.tunables(after))
                interrupted = bool(guard.signum) or len(verdicts) < len(self.cases)
                b.finish("interrupted" if interrupted else "complete", run_verdict(verdicts, interrupted, failed))
                model = conclude(b)
                b.close()
                remember(model, self.store)
        return model

    def discard(self) -> None:
        """Remove what the services prepared for cases that never ran (an IOC's FIFOs)."""
        for svc in self.services.values():
            svc.discard()


def conclude(b: bundle_mod.Bundle) -> Model:
    """The run's answer, kept in its bundle: the capability summary in the manifest and report.html beside
    it, both from the bundle's one model (returned). Neither may cost a measured result: a failure here is
    a warning on stderr."""
    from rtqual.answers import summary
    from rtqual.publish import htmlreport

    model = b.model()
    try:
        b.manifest["capability"] = summary.capability(model.cases)
        b.save_manifest()
        htmlreport.write_report([model], b.path / REPORT_FILE)
    except Exception as e:  # noqa: BLE001 - the bundle is complete already; say what is missing
        print(f"rtqual: warning: {b.path}: no capability summary or report.html ({e})", file=sys.stderr)
    return model


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


def run(cases: list[dict], argv: list[str], **kw: Any) -> Model:
    """Check and execute a run of cases; the bundle's result model (its path: .path)."""
    r = Run(cases, argv, **kw)
    try:
        r.check()
        return r.execute()
    finally:
        r.discard()

"""The run: the one owner of a measurement run. It checks every case before anything runs, then owns the
bundle, the host facts before and after, the host conditions, the signal guard, the services and the
order of cases; each case is run and written at once by rtqual.measure.run.runner.run_case."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtqual import __version__
from rtqual.answers.requirements import kept
from rtqual.answers.verdict import run_verdict
from rtqual.errors import RtqError
from rtqual.measure.conditions.applier import Conditions
from rtqual.measure.conditions.journal import CHANGES_FILE
from rtqual.measure.host import osnoise
from rtqual.measure.loads import LoadSet, make_load
from rtqual.measure.run import native
from rtqual.measure.run.case import Case
from rtqual.measure.run.runner import run_case
from rtqual.measure.run.session import Interrupted, prepare
from rtqual.measure.run.terminal import TerminalDisplay
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.util import outside_system_trees


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
        more: Callable[[dict | None], dict | None] | None = None,
    ):
        self.cases = [Case.from_plan(c) for c in cases]
        # after the given cases, the next one decided from the last result (None: the run is done): a sweep's
        # steps (rtqual.capacity), each checked just before it runs and added to plan.json
        self.more = more
        self.plan: dict[str, Any] = plan if plan is not None else {"schema_version": 1, "cases": list(map(kept, cases))}
        self.argv, self.output, self.quiet, self.raw_mb = argv, output, quiet, raw_mb
        self.scenario_toml = scenario_toml
        self.services: dict[str, Any] = {}  # case id -> its service (started only around its probe)
        self.loads: dict[str, LoadSet] = {}  # case id -> its loads, prepared once
        self.runnable: list[Case] = []  # the cases with the service's options filled in
        self.bundle: bundle_mod.Bundle | None = None
        self.model: Model | None = None  # the finished (or cut) bundle's model, also when execute() raised

    def check(self) -> None:
        """Make each case's service (its options filled from what the service provides), check the probe's
        options and privileges (`--check`) and prepare its loads, after the output folder (not in /proc, /sys,
        /dev): one-line RtqError before anything runs."""
        outside_system_trees(self.output, "cannot create bundle")
        for case in self.cases:
            self.runnable.append(self._prepare(case))

    def _prepare(self, case: Case) -> Case:
        """One case's service made and its probe's options checked, its loads prepared: the runnable case."""
        if case.params.get("hw") and (why := osnoise.hw_unavailable()):
            raise RtqError(why)  # `--hw` where the kernel cannot: one line before anything runs
        svc, args = prepare(case.probe, case.run_as, case.args, case.service, case.require)
        if svc is not None:
            self.services[case.id] = svc
        loads = self.loads[case.id] = LoadSet([make_load(spec) for spec in case.loads])
        loads.prepare_all()
        return case.with_args(args)

    def _next(self, last: dict | None, b: bundle_mod.Bundle, display: TerminalDisplay, cond: Conditions) -> Case | None:
        """The case `more` decides after the last result, checked and added to the plan (plan.json rewritten
        before it runs: a kill leaves a plan naming it); None when the run is done."""
        spec = self.more(last) if self.more else None
        if spec is None:
            return None
        case = Case.from_plan(spec)
        runnable = self._prepare(case)
        for temp in getattr(self.services.get(case.id), "temp_paths", list)():  # as execute() does for the first
            cond.note_temp(temp)
        self.cases.append(case)
        self.plan["cases"].append(kept(spec))  # requirements as their text
        display.cases.append(case.view())
        bundle_mod.write_json(b.path / "plan.json", self.plan)
        return runnable

    def execute(self) -> Model:
        """Run every case into a new bundle (checked first if not yet); the bundle's result model (its files
        hashed once, as they were written). Interrupted or failed, the bundle still holds every finished case,
        the host facts after, and a manifest whose verdict is the exit code's."""
        from rtqual.measure.host import facts, tuning

        if len(self.runnable) != len(self.cases):
            self.check()
        out = Path(self.output) if self.output else bundle_mod.default_path()
        guard, verdicts, failed = Interrupted(), [], False
        # from the bundle's first file to its last, a signal only sets guard.signum: no case starts after it,
        # and the bundle is always finished (facts after, status, checksums, report)
        with guard.installed():
            b = self.bundle = bundle_mod.Bundle(out, self.argv, native.probe_version())
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
                bundle_mod.write_json(b.path / "host" / "tuning-before.json", tuning.tuning())  # for "What to change"
                bundle_mod.write_json(b.path / "plan.json", self.plan)
                if self.scenario_toml is not None:
                    bundle_mod.write_text(b.path / "scenario.toml", self.scenario_toml)
                queue, last = list(self.runnable), None
                while not guard.signum and (queue or self.more):
                    case = queue.pop(0) if queue else self._next(last, b, display, cond)
                    if case is None:
                        break
                    last = run_case(
                        case,
                        b,
                        display,
                        guard,
                        cond,
                        self.loads[case.id],
                        self.services.get(case.id),
                        raw_bytes=self.raw_mb * 1024 * 1024,
                    )
                    verdicts.append(last["verdict"])
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
                model = self.model = summarize(b)
                b.close()
        return model

    def discard(self) -> None:
        """Remove what the services prepared for cases that never ran (an IOC's FIFOs)."""
        for svc in self.services.values():
            svc.discard()


def summarize(b: bundle_mod.Bundle) -> Model:
    """The run's answer kept in its manifest: the capability summary, from the bundle's one model (returned). It
    may not cost a measured result: a failure here is a warning on stderr."""
    from rtqual.answers import summary

    model = b.model()
    try:
        b.manifest["capability"] = summary.capability(model.cases)
        b.save_manifest()
    except Exception as e:  # noqa: BLE001 - the bundle is complete already; say what is missing
        print(f"rtqual: warning: {b.path}: no capability summary ({e})", file=sys.stderr)
    return model


def run(cases: list[dict], argv: list[str], **kw: Any) -> Model:
    """Check and execute a run of cases; the bundle's result model (its path: .path)."""
    r = Run(cases, argv, **kw)
    try:
        r.check()
        return r.execute()
    finally:
        r.discard()

"""`rtqual plan SCENARIO.toml`: a scenario's cases, the samples each is expected to give, what those decide, and
the total time; runs nothing."""

from __future__ import annotations

from rtqual.commands.common import add_require_options, emit
from rtqual.commands.run import load_scenario

NAME = "plan"
HELP = (
    "print a scenario's cases, their expected samples, the statistics and requirements those decide, "
    "and the total time; runs nothing"
)


def add_arguments(p) -> None:
    p.add_argument("scenario", nargs="+", help="scenario file(s) (TOML): each one's plan, in the order given")
    p.add_argument("--scale", type=float, help="multiply every duration (e.g. 0.1)")
    add_require_options(p, "every case, after the case's own (whether the case can decide it)")
    p.add_argument("--json", action="store_true")


def run(a, argv: list[str]) -> int:
    from rtqual import scenario

    plans = [load_scenario(f, a.scale, a.require, a.profile) for f in a.scenario]  # every file checked first
    docs = [scenario.plan_json(cases, sc) for sc, cases in plans] if a.json else []
    texts = [scenario.plan_text(cases, scenario.plan_title(sc)) for sc, cases in plans] if not a.json else []
    emit(a.json, lambda: docs[0] if len(docs) == 1 else docs, lambda: "\n\n".join(texts))  # one file: as before
    return 0

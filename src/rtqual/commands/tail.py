"""`rtqual tail BUNDLE`: the worst case beyond the run, return levels per hour/day/year (EVT, docs/tail.md)."""

from __future__ import annotations

from pathlib import Path

from rtqual.commands.common import damage_exit, emit, load_bundle
from rtqual.results import bundle as bundle_mod
from rtqual.util import outside_system_trees

NAME = "tail"
HELP = "the worst case beyond the run: return levels per hour/day/year (EVT, docs/tail.md)"


def add_arguments(p) -> None:
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--case", metavar="LABEL", help="only this case (its label or id)")
    p.add_argument(
        "--period", metavar="D", action="append", default=[], help="also this return period (e.g. 7d; repeatable)"
    )
    p.add_argument("--svg", metavar="DIR", help="also write each case's return-level plot into DIR")
    p.add_argument("--json", action="store_true")


def run(a, argv: list[str]) -> int:
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
    emit(a.json, result, lambda: tail.text(result))
    return damage_exit([data]) if data is not None else 0

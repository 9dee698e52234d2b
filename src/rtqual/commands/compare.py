"""`rtqual compare A B [C ...]`: bundles side by side, their cases paired, ratios to the first; --report as HTML."""

from __future__ import annotations

import sys
from pathlib import Path

from rtqual.commands.common import damage_exit, emit, load_bundle, output_file
from rtqual.results.bundle import Model

NAME = "compare"
HELP = "bundles side by side: their cases paired by id (else label), with ratios to the first"


def add_arguments(p) -> None:
    p.add_argument("bundle_a", metavar="A")
    p.add_argument("bundle_b", metavar="B")
    p.add_argument("more", metavar="C", nargs="*", help="more bundles (each compared with A)")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write the comparison as HTML: what differs between the bundles, each scenario matrix "
        "(e.g. the KEK study's stress methods, frequencies, run lengths) side by side, overlaid figures",
    )
    p.add_argument(
        "--match",
        action="append",
        metavar="A_LABEL=B_LABEL",
        help="pair a case of A with a differently labelled case of the others (label or id; repeatable)",
    )


def run(a, argv: list[str]) -> int:
    from rtqual.answers.compare import parse_match
    from rtqual.publish import compare, report

    output_file(a.report, "--report")
    match = parse_match(a.match)
    seen: dict[Path, Model] = {}  # a bundle named twice is read (and hashed) once
    bundles = [seen.get(Path(p).resolve()) or seen.setdefault(Path(p).resolve(), load_bundle(p))
               for p in [a.bundle_a, a.bundle_b, *a.more]]  # fmt: skip
    data = [report.bundle_view(b) for b in bundles]  # the one bundle view: facts, caveats, histograms
    if len(data) == 2:
        out = compare.compare_json(data[0], data[1], match) if a.json else compare.compare_text(data[0], data[1], match)
    else:
        out = compare.compare_many_json(data, match) if a.json else compare.compare_many_text(data, match)
    out = with_capacity(out, [b.capacity for b in bundles], data)
    emit(a.json, out, str(out))
    if a.report:
        from rtqual.publish import htmlreport

        path = htmlreport.write_compare(bundles, Path(a.report), match)
        print(f"report: {path}", file=sys.stderr if a.json else sys.stdout)
    return damage_exit(bundles)


def with_capacity(out, docs: list[dict | None], data: list[dict]):
    """The comparison with the capacity sweeps among the bundles (rtqual capacity): under `capacity` in JSON
    ({bundle name: capacity.json}), each answer and the p99 per load in text; unchanged without any."""
    from rtqual.answers.compare import bundle_names
    from rtqual.publish import capacity

    named = [(n, d) for n, d in zip(bundle_names(data), docs) if d]
    if not named:
        return out
    if isinstance(out, dict):
        return {**out, "capacity": dict(named)}
    return out + "\n\n" + "\n".join(capacity.compare_lines(named))

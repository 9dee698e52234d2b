"""`rtqual capacity PRESET|FILE [--dimension D] [--start N] [--ceiling N] [--scale S] [--require ...|--profile ...]
[-o DIR]`: sweep one load dimension step by step into one bundle until a requirement breaks, the load cannot be held
or the ceiling is reached; the answer says what the host carries and what broke first (docs/capacity.md)."""

from __future__ import annotations

from rtqual.answers.requirements import texts
from rtqual.commands.common import add_require_options, add_store_option

NAME = "capacity"
HELP = "how much load the host carries before the requirement breaks (a sweep of one load dimension)"


def add_arguments(p) -> None:
    from rtqual.capacity.spec import PRESETS

    names = ", ".join(f"{k} ({v['help']})" for k, v in PRESETS.items())
    p.add_argument("target", metavar="PRESET|FILE", help=f"a preset: {names}; or a sweep file (TOML)")
    p.add_argument("--dimension", help="the load raised (a preset's: aps records|put_rate, kek rate|hackbench.groups, "
                   "madoca rate; default its first)")  # fmt: skip
    p.add_argument("--start", type=float, help="the first step's load (default: the preset's)")
    p.add_argument("--ceiling", type=float, help="the highest load tried (default: the preset's)")
    p.add_argument("--factor", type=float, help="the ratio between climbing steps (default 2)")
    p.add_argument("--confirm", type=int, metavar="N", help="measure the load answered as carried N more times "
                   "(default 1; 0: once): each time it must meet every requirement")  # fmt: skip
    p.add_argument("--step", help="measured time of each step (default 10s; lengthened to decide the requirements)")
    p.add_argument("--longest-step", help="the longest a step is lengthened to (default 60s)")
    p.add_argument("--scale", type=float, help="multiply every step's time (e.g. 0.2)")
    add_require_options(p, "every step")
    p.add_argument("-o", "--output", help="bundle directory (default rtqual-<host>-<time>)")
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    add_store_option(p)


def run(a, argv: list[str]) -> int:
    from rtqual.capacity import run as capacity_run
    from rtqual.capacity.spec import resolve
    from rtqual.publish import report
    from rtqual.results.bundle.names import REPORT

    sweep = resolve(
        a.target,
        dimension=a.dimension,
        start=a.start,
        ceiling=a.ceiling,
        factor=a.factor,
        require=a.require,
        profile=a.profile,
        scale=a.scale,
        step=a.step,
        longest=a.longest_step,
        confirm=a.confirm,
    )
    if not a.quiet:
        r = sweep.range
        print(
            f"capacity {sweep.name}: {sweep.dim.name} from {r.start:g} to at most {r.ceiling:g} {sweep.dim.unit}, "
            f"x{r.factor:g} then bisection; each step {sweep.step_ns / 1e9:g}s, "
            f"judged on: {'; '.join(texts(sweep.require))}",
            flush=True,
        )
    model = capacity_run.measure(sweep, argv, a.output, a.quiet, a.store)
    print(report.show_text(report.bundle_view(model)))
    if (model.path / REPORT).is_file():
        print(f"report: {model.path / REPORT}")
    print(model.path)
    return answer_exit(model.capacity, model.manifest.get("verdict"))


def answer_exit(doc: dict | None, verdict: str | None) -> int:
    """0 when the sweep answered (a break found, or the ceiling carried), 4 when it was stopped or found nothing,
    the run's own code when it failed (error: 1). A step that broke is the answer, not a failure."""
    from rtqual.answers.verdict import exit_code
    from rtqual.errors import EXIT_ERROR

    if verdict == "error" or doc is None:
        return EXIT_ERROR if verdict == "error" else exit_code(verdict or "inconclusive")
    found = doc.get("breaks_at") is not None or str(doc.get("cause", "")).startswith("not found: carried the ceiling")
    return 0 if found and not doc.get("stopped") else exit_code("inconclusive")

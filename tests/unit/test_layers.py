"""The package's folders are the stages of a run (docs/architecture.md): every import points down the list
cli → commands → scenario → measure | publish → answers → results → base, where measure and publish stand side by
side (neither imports the other: measuring produces a bundle, publishing reads one), and no modules import each
other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import rtqual

PACKAGE = Path(rtqual.__file__).resolve().parent
LAYERS = ["cli", "commands", "scenario", "measure", "publish", "answers", "results", "base"]  # top first
RANK = {"cli": 0, "commands": 1, "scenario": 2, "measure": 3, "publish": 3, "answers": 4, "results": 5, "base": 6}
TOP = {"cli", "__main__"}
# one module per command; a command package of its own
COMMANDS = {"commands", "advise", "capacity", "monitor", "selftest"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> str:
    """The stage folder of rtqual.X.Y, "cli" for the entry points, "base" for the shared modules."""
    parts = module.split(".")
    if len(parts) == 1:
        return "base"
    if parts[1] in TOP:
        return "cli"
    if parts[1] in COMMANDS:
        return "commands"
    return parts[1] if parts[1] in LAYERS else "base"


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every rtqual module a file imports, at module level or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("rtqual")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rtqual"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in known else node.module)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: {i for i in imports_of(p, known) if i != m and i in known} for m, p in mods.items()}


def test_every_import_points_down_the_stages():
    upward = [
        f"{m} ({layer(m)}) imports {i} ({layer(i)})"
        for m, deps in graph().items()
        for i in deps
        if RANK[layer(i)] < RANK[layer(m)] or (RANK[layer(i)] == RANK[layer(m)] and layer(i) != layer(m))
    ]
    assert not upward, "imports that run back up the stages:\n" + "\n".join(sorted(upward))


def test_no_import_circles():
    g = graph()
    # a package's __init__ is imported by its submodules' own import: circles through it are Python's, not ours
    g = {m: {i for i in deps if not m.startswith(i + ".")} for m, deps in g.items()}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for i in sorted(g.get(m, ())):
            if state.get(i) == 1:
                circles.append(path[path.index(i) :] + [i] if i in path else [m, i])
            elif not state.get(i):
                visit(i, [*path, i])
        state[m] = 2

    for m in sorted(g):
        if not state.get(m):
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_layer_check_sees_an_upward_import():
    """The check itself can fail: a results module importing a publisher would be named, and so would a measuring
    module importing a publisher (siblings)."""
    assert RANK[layer("rtqual.publish.report")] < RANK[layer("rtqual.results.bundle")]
    assert RANK[layer("rtqual.measure.run.driver")] == RANK[layer("rtqual.publish.report")]
    assert layer("rtqual.monitor.loop") == "commands" and layer("rtqual.commands.show") == "commands"
    assert layer("rtqual.cli") == "cli" and layer("rtqual.units") == "base" and layer("rtqual.probes.timer") == "base"

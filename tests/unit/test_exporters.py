"""The exporters depend on the result model, the answers and the shared presentation helpers, never on each
other (issue 20): read every publish module's imports (function-level ones too) from its source."""

import ast
from pathlib import Path

import rtqual.publish

PUBLISH = Path(rtqual.publish.__file__).parent
# rows, cells, advice text, a capacity sweep's lines and plot data: no exporter
SHARED = {"rtqual.publish.views", "rtqual.publish.hostview", "rtqual.publish.advise", "rtqual.publish.capacity"}
OWN_PARTS = {  # the HTML report draws its figures with svgplot, and its tail section with rtqual tail's own part
    "htmlreport": {"rtqual.publish.svgplot", "rtqual.publish.tail"},
    "tail": {"rtqual.publish.svgplot"},  # rtqual tail's return-level plot
}


def imported(path: Path) -> set[str]:
    """Every rtqual module a file imports (`from rtqual.x import y` counts x and x.y)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in names if n.startswith("rtqual.")}


def exporter_of(path: Path) -> str:
    """The exporter a file belongs to: its module, or its package for store/ and imports/."""
    rel = path.relative_to(PUBLISH)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_no_exporter_imports_another():
    files = [p for p in PUBLISH.rglob("*.py") if p.parent != PUBLISH or p.stem != "__init__"]
    wrong, exporters = [], set()
    for path in files:
        me = exporter_of(path)
        if f"rtqual.publish.{me}" in SHARED:
            continue
        exporters.add(me)
        allowed = SHARED | OWN_PARTS.get(me, set()) | {f"rtqual.publish.{me}"}
        heads = {".".join(n.split(".")[:3]) for n in imported(path) if n.startswith("rtqual.publish.")}
        wrong += [f"{path.relative_to(PUBLISH)} imports {h}" for h in sorted(heads - allowed)]
    assert {"report", "compare", "htmlreport", "svgplot", "metrics", "store", "imports"} <= exporters
    assert wrong == []


def test_shared_helpers_import_no_exporter():
    for name in SHARED:
        path = PUBLISH / f"{name.rsplit('.', 1)[1]}.py"
        assert {n for n in imported(path) if n.startswith("rtqual.publish")} == set(), path


def test_answers_compare_prints_nothing():
    """The comparison computation sits below the publishers: it imports no publisher."""
    path = PUBLISH.parent / "answers" / "compare.py"
    assert not {n for n in imported(path) if n.startswith("rtqual.publish")}

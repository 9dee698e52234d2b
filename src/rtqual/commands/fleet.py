"""`rtqual fleet BUNDLE_OR_DIR...`: many hosts' bundles side by side: worst first, outliers, what differs."""

from __future__ import annotations

import sys
from pathlib import Path

from rtqual.answers.requirements import PROFILES
from rtqual.commands.common import damage_exit, emit, load_bundle, output_file
from rtqual.errors import RtqError
from rtqual.results import bundle as bundle_mod

NAME = "fleet"
HELP = "many hosts' bundles side by side: worst first, outliers, what differs"


def add_arguments(p) -> None:
    p.add_argument("paths", metavar="BUNDLE_OR_DIR", nargs="+", help="bundles, or folders of HOST/BUNDLE (Ansible's)")
    p.add_argument("--json", action="store_true", help="hosts, their verdicts, outliers, facts; groups of facts")
    p.add_argument("--report", metavar="FILE", help="also an HTML page: a heat map of hosts x cases, hosts linked")
    p.add_argument("--profile", choices=list(PROFILES), help="judge every host's cases against this profile")


def run(a, argv: list[str]) -> int:
    from rtqual.publish import fleet, report
    from rtqual.publish.htmlreport import advice_of

    output_file(a.report, "--report")
    found = fleet.find(a.paths)
    if not found:
        raise RtqError(f"fleet: no bundle in {' '.join(a.paths)}")
    models = [load_bundle(str(p)) for _, p in found]  # damage said on stderr; the intact cases are shown
    by_host = fleet.by_host([(host, m) for (host, _), m in zip(found, models)])
    views: dict[int, dict] = {}  # the one bundle view, read for the bundles that stand for a host only

    def view(m) -> dict:
        return views[id(m)] if id(m) in views else views.setdefault(id(m), report.bundle_view(m))

    doc = fleet.build(by_host, lambda m: view(m)["hists"], a.profile, lambda m: advice_of(m)[0],
                      lambda m: view(m)["caveats"])  # fmt: skip
    emit(a.json, lambda: fleet.json_doc(doc), lambda: fleet.text(doc))
    if a.report:
        page = Path(a.report)
        bundle_mod.refuse_inputs(page, [m.path for m in models], "--report")
        try:
            bundle_mod.write_text(page, fleet.html(doc, page.resolve().parent))
        except OSError as e:
            raise RtqError(f"{page}: cannot write the report ({e.strerror or e})") from None
        print(f"report: {page}", file=sys.stderr if a.json else sys.stdout)
    return damage_exit(models)

"""`rtqual baseline set BUNDLE [--name N]` and `rtqual baseline list`: the references `rtqual check` compares with."""

from __future__ import annotations

from rtqual.commands.common import add_store_option, emit, input_files, load_bundle

NAME = "baseline"
HELP = "name a stored run as a baseline for rtqual check"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="baseline_command", metavar="set|list", required=True)
    bs = sub.add_parser("set", help="make BUNDLE (stored if needed) the baseline named --name")
    bs.add_argument("bundle", metavar="BUNDLE")
    bs.add_argument("--name", default="default", help="baseline name (default 'default')")
    add_store_option(bs)
    bl = sub.add_parser("list", help="the baselines: name, bundle, host, kernel")
    bl.add_argument("--json", action="store_true")
    add_store_option(bl)


def run(a, argv: list[str]) -> int:
    from rtqual.publish import store
    from rtqual.publish.store import trend

    with store.open_store(a.store, write=a.baseline_command == "set") as s:
        if a.baseline_command == "set":
            input_files([a.bundle], "baseline set:", folders=True)
            model = load_bundle(a.bundle)  # damage said on stderr; a damaged manifest stops here
            s.set_baseline(a.name, s.add_run(model))
            print(f"baseline {a.name}: {a.bundle} (in {s.where})")
            return 0
        found = s.baselines()
    emit(a.json, found, lambda: trend.baselines_text(found))
    return 0

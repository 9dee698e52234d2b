"""tests/epics: a real EPICS 7 IOC (epicscorelibs) with rtqual's device support, and rtqual-ca's
CA clients, on loopback. Every test here is marked `epics` and skipped, with the reason, when
those parts are missing (a build without EPICS)."""
from pathlib import Path

import pytest


def missing() -> str | None:
    import importlib.util
    if importlib.util.find_spec("epicscorelibs") is None:
        return "epicscorelibs is not importable (pip install epicscorelibs, or pip install .)"
    from rtqual import _native
    from rtqual.errors import RtqError
    try:
        _native.epics_devsup()
        _native.ca_path()
    except RtqError as e:
        return f"rtqual's EPICS parts are not built: {e}"
    return None


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    why = None
    for item in items:
        if here in Path(str(item.fspath)).parents:
            why = why or missing() or ""
            item.add_marker(pytest.mark.epics)
            if why:
                item.add_marker(pytest.mark.skip(reason=why))

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tracing"]  # the tracefs_view fixture of the --trace tests (tests/tracing.py)


def pytest_collection_modifyitems(config, items):
    """Tier markers from the folder: system tests run real probes; epics tests run a real IOC and
    CA clients, and are skipped with the reason when those parts are missing (a build without EPICS)."""
    why = None
    for item in items:
        if "/system/" in str(item.fspath):
            item.add_marker(pytest.mark.rt)
        if "/epics/" in str(item.fspath):
            why = why if why is not None else epics_missing() or ""
            item.add_marker(pytest.mark.epics)
            if why:
                item.add_marker(pytest.mark.skip(reason=why))


def epics_missing() -> str | None:
    """Why the EPICS tests cannot run here, or None."""
    import importlib.util

    if importlib.util.find_spec("epicscorelibs") is None:
        return "epicscorelibs is not importable (pip install epicscorelibs, or pip install .)"
    from rtqual.errors import RtqError
    from rtqual.measure import _native

    try:
        _native.epics_devsup()
        _native.ca_path()
    except RtqError as e:
        return f"rtqual's EPICS parts are not built: {e}"
    return None


@pytest.fixture(autouse=True)
def _own_history_store(tmp_path_factory, monkeypatch):
    """Every test (and every rtqual it starts) stores runs in a temp store, never the developer's default."""
    monkeypatch.setenv("RTQUAL_STORE", str(tmp_path_factory.mktemp("store") / "history.sqlite"))


@pytest.fixture
def rtqual_cmd():
    """Run the installed rtqual CLI as a user would; returns CompletedProcess."""

    def run(*args, timeout=120, **kw):
        return subprocess.run(
            [sys.executable, "-m", "rtqual", *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw
        )

    return run


def probe_available() -> bool:
    from rtqual.errors import RtqError
    from rtqual.measure import _native

    try:
        _native.probe_path()
        return True
    except RtqError:
        return False


needs_probe = pytest.mark.skipif(not probe_available(), reason="rtqual-probe not built/installed")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (SCHED_FIFO, mlockall)")
needs_cyclictest = pytest.mark.skipif(shutil.which("cyclictest") is None, reason="cyclictest (rt-tests) missing")
DATA = Path(__file__).parent / "data"


def probe_records(probe: str, *args, timeout: float = 60):
    """Run `rtqual-probe PROBE ARGS` directly; (CompletedProcess, its JSON Lines records)."""
    import json

    from rtqual.measure import _native

    out = subprocess.run(
        [str(_native.probe_path()), probe, *map(str, args)], capture_output=True, text=True, timeout=timeout
    )
    return out, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def one(recs: list[dict], kind: str) -> dict:
    """The single record of a type (asserts there is exactly one)."""
    found = [r for r in recs if r["type"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} records"
    return found[0]

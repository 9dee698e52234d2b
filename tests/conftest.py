import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: on a shared 2-vCPU VM an example's time says nothing about its correctness.
settings.register_profile("rtqual", deadline=None)
settings.load_profile("rtqual")

pytest_plugins = ["tracing", "pgserver"]  # fixtures: tracefs_view (tests/tracing.py), pg_server (tests/pgserver.py)
# the kernel tier runs inside scripts/kernel-lab guests only (tests/kernels/run sets RTQUAL_LAB_KERNEL there)
collect_ignore_glob = [] if os.environ.get("RTQUAL_LAB_KERNEL") else ["kernels/*"]


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
    from rtqual.measure.run import native

    try:
        native.epics_devsup()
        native.ca_path()
    except RtqError as e:
        return f"rtqual's EPICS parts are not built: {e}"
    return None


@pytest.fixture(autouse=True)
def _own_history_store(tmp_path_factory, monkeypatch):
    """Every test (and every rtqual it starts) stores runs in a temp store, never the developer's default."""
    monkeypatch.setenv("RTQUAL_STORE", str(tmp_path_factory.mktemp("store") / "history.sqlite"))


def rtqual_argv(*args) -> list[str]:
    """The command line of the installed rtqual CLI with ARGS (as strings), for Popen and rtqual_run."""
    return [sys.executable, "-m", "rtqual", *map(str, args)]


def rtqual_run(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    """Run the installed rtqual CLI as a user would; its CompletedProcess."""
    return subprocess.run(rtqual_argv(*args), capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def rtqual_cmd():
    """Run the installed rtqual CLI as a user would; returns CompletedProcess."""
    return rtqual_run


def show_json(bundle) -> dict:
    """`rtqual show BUNDLE --json`, loaded: what a script reading a bundle sees."""
    import json

    return json.loads(rtqual_run("show", bundle, "--json").stdout)


def run_case(bundle, *args, timeout=120) -> dict:
    """`rtqual run ARGS -o BUNDLE -q`, which must exit 0 (its output the message otherwise); the first
    case as `show --json` gives it."""
    out = rtqual_run("run", *args, "-o", bundle, "-q", timeout=timeout)
    assert out.returncode == 0, out.stderr + out.stdout
    return show_json(bundle)["cases"][0]


def probe_available() -> bool:
    from rtqual.errors import RtqError
    from rtqual.measure.run import native

    try:
        native.probe_path()
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

    from rtqual.measure.run import native

    out = subprocess.run(
        [str(native.probe_path()), probe, *map(str, args)], capture_output=True, text=True, timeout=timeout
    )
    return out, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def start_probe(probe: str, *args) -> tuple[subprocess.Popen, dict]:
    """`rtqual-probe PROBE ARGS` started with text pipes; (the process, its header record)."""
    import json

    from rtqual.measure.run import native

    proc = subprocess.Popen(
        [str(native.probe_path()), probe, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    header = json.loads(proc.stdout.readline())
    assert header["type"] == "header"
    return proc, header


def wait_measured(proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """Read a started probe's records until a progress record shows measured samples (or TIMEOUT_S passed)."""
    import json
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rec = json.loads(proc.stdout.readline())
        if rec["type"] == "progress" and rec["cpus"][0]["count"] > 0:
            return


def interrupt(proc: subprocess.Popen) -> list[dict]:
    """SIGINT to a running probe, which must end inconclusive (exit 4); the records it wrote after."""
    import json
    import signal

    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, err
    return [json.loads(line) for line in rest.splitlines() if line.strip()]


def one(recs: list[dict], kind: str) -> dict:
    """The single record of a type (asserts there is exactly one)."""
    found = [r for r in recs if r["type"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} records"
    return found[0]


def seal(b: Path) -> Path:
    """A bundle's checksums written again after a test edited it: every regular file, as rtqual writes them."""
    import json

    from rtqual.results import bundle as bundle_mod

    m = json.loads((b / "manifest.json").read_text())
    m["checksums"] = {
        rel: bundle_mod.sha256_file(b / rel)
        for rel in (f.relative_to(b).as_posix() for f in sorted(b.rglob("*")))
        if (b / rel).is_file() and not (b / rel).is_symlink() and rel not in bundle_mod.UNSEALED
    }
    (b / "manifest.json").write_text(json.dumps(m, indent=1))
    return b

"""README's commands from README's first install: a venv made with `python3 -m venv` and `pip install .`
alone (no extras, as scripts/setup does). Every command README shows that needs no root and no real probe
exits 0, or, for an optional part (`report --png` without matplotlib), 1 with one line naming what to
install; none prints a traceback. The other tests run with every extra installed and cannot see this."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
BUNDLES = ("timer-raw", "scenario", "ioc")
# README's probes: `run PROBE --help` imports each probe's module and its options
PROBES = ("timer", "switch", "rhealstone", "event", "msg", "pio", "rtsafety", "noise", "ioc", "ca-rtt", "pva-rtt")
IMPORTS = {
    "cyclictest": [DATA / "imports" / "cyclictest" / "cyclictest-h3000.json"],
    "rtla": [DATA / "imports" / "rtla" / "timerlat-hist.txt"],
    "jitterdebugger": [DATA / "imports" / "jitterdebugger" / "run"],
    "rteval": [DATA / "imports" / "rteval" / "summary.xml"],
}


@pytest.fixture(scope="session")
def plain_venv(tmp_path_factory) -> Path:
    """A venv holding rtqual from `pip install REPO` and nothing else (built once per session; pip's own
    cache keeps the downloads); its bin folder."""
    venv = tmp_path_factory.mktemp("plain") / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300, env=env)
    pip = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", REPO],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv / "bin"


def rtqual(bin_dir: Path, *args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """The plain venv's rtqual with ARGS, as a user runs it (the test's own venv kept out of its path)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [bin_dir / "rtqual", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def assert_works(out: subprocess.CompletedProcess, args, optional: bool = False) -> None:
    """Exit 0; or, for an optional part, exit 1 with one line naming what to install; never a traceback."""
    said = out.stdout + out.stderr
    assert "Traceback" not in said, (args, said[-3000:])
    if optional and out.returncode == 1:
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install" in lines[0], (args, out.stderr)
    else:
        assert out.returncode == 0, (args, out.returncode, said[-3000:])


def frozen_copies(tmp_path: Path) -> dict[str, Path]:
    """The frozen bundles copied (report writes report.html into its bundle)."""
    return {b: Path(shutil.copytree(DATA / "bundles" / b, tmp_path / b)) for b in BUNDLES}


def test_readme_commands_on_frozen_bundles(plain_venv, tmp_path):
    b = frozen_copies(tmp_path)
    commands = [
        ["--version"],
        ["--help"],
        ["host"],
        ["host", "--json"],
        *[["plan", p] for p in sorted((REPO / "scenarios").glob("*.toml"))],
        *[["run", p, "--help"] for p in PROBES],
        ["monitor", "--help"],
        ["selftest", "--help"],
        ["restore", "--help"],
        ["history"],
        ["baseline", "list"],
    ]
    for path in b.values():
        commands += [["show", path], ["show", path, "--json"], ["verify", path], ["report", path]]
    commands += [
        ["export", "raw", b["timer-raw"]],
        *[["compare", path, path] for path in b.values()],  # runs of the same cases, as README's STD and RT
        ["compare", b["scenario"], b["scenario"], b["scenario"], "--report", tmp_path / "kernels.html"],
        ["baseline", "set", b["timer-raw"]],
        ["baseline", "list"],
        ["check", b["timer-raw"], "--tolerance", "10%"],
        ["history", "--since", "30d"],
        ["table", "kek", b["scenario"]],
        ["table", "aps", b["ioc"], "--csv"],
        ["advise", "--cpus", "1"],
        ["advise", "--json"],
        ["advise", "--bundle", b["ioc"]],
        ["fleet", b["timer-raw"], b["scenario"], b["ioc"]],
    ]
    for args in commands:
        assert_works(rtqual(plain_venv, *args, cwd=tmp_path), args)
    args = ["report", b["timer-raw"], "--png", tmp_path / "figs"]
    out = rtqual(plain_venv, *args, cwd=tmp_path)
    assert_works(out, args, optional=True)
    if out.returncode == 1:  # said before any work: nothing half written
        assert "matplotlib" in out.stderr and not (tmp_path / "figs").exists()
    args = ["tail", b["timer-raw"]]  # scipy and statsmodels are the tail extra
    assert_works(rtqual(plain_venv, *args, cwd=tmp_path), args, optional=True)
    args = ["history", "--store", "postgresql://rtqual@127.0.0.1:9/none"]  # psycopg is the postgresql extra
    out = rtqual(plain_venv, *args, cwd=tmp_path)
    assert_works(out, args, optional=True)
    assert out.returncode == 1 and "psycopg" in out.stderr


@pytest.mark.parametrize("tool", sorted(IMPORTS))
def test_import_then_show(plain_venv, tmp_path, tool):
    out = tmp_path / "old"
    for args in (["import", tool, *IMPORTS[tool], "--output", out], ["show", out], ["compare", out, out]):
        assert_works(rtqual(plain_venv, *args, cwd=tmp_path), args)


def test_fake_run_is_stored_and_monitored(plain_venv, tmp_path):
    """The pipeline from the plain install: a fake-probe run into a bundle and the history store, and the
    monitor's windows into a node_exporter textfile (prometheus_client)."""
    script = tmp_path / "s.txt"
    script.write_text("repeat 3\nsample 0 20000\nsample 1 90000\nprogress\nend\n")
    bundle = tmp_path / "b"
    (tmp_path / "tf").mkdir()
    for args in (
        ["run", "fake", "--script", script, "--raw", "-o", bundle, "-q"],
        ["show", bundle],
        ["history"],
        ["export", "raw", bundle],
        [
            "monitor", "--probe", "fake", "--script", script, "--window-progress", "1",
            "--listen", "off", "--textfile", tmp_path / "tf", "--store", "off",
        ],
    ):  # fmt: skip
        assert_works(rtqual(plain_venv, *args, cwd=tmp_path), args)
    assert list((tmp_path / "tf").glob("*.prom"))

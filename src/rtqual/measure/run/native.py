"""The one boundary between Python and the native executables: find, version-check and spawn them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path

from rtqual.errors import EXIT_ERROR, EXIT_SKIP, RtqError
from rtqual.procs import die_with_parent

PROBE = "rtqual-probe"
CA = "rtqual-ca"  # Channel Access tools over libca; built only with EPICS
PVA = "rtqual-pva"  # PV Access probe over pvxs; built only with pvxslibs
PYTHON = {"rtqual-timerlat": "rtqual.measure.probes.timerlat"}  # probes whose process is a module of this package


def _installed(name: str, override_var: str, built_with: str = "", exit_code: int = EXIT_ERROR) -> Path:
    """An executable in the package's rtqual/_bin, or the one $override_var names (development)."""
    override = os.environ.get(override_var)
    path = Path(override) if override else Path(str(resources.files("rtqual"))) / "_bin" / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RtqError(
            f"{name} not found at {path}: reinstall rtqual{built_with} (pip install .) or set {override_var}", exit_code
        )
    return path


def probe_path() -> Path:
    """The installed rtqual-probe, or $RTQUAL_PROBE."""
    return _installed(PROBE, "RTQUAL_PROBE")


def ca_path() -> Path:
    """The installed rtqual-ca (built when EPICS was found), or $RTQUAL_CA."""
    return _installed(CA, "RTQUAL_CA", " with epicscorelibs", EXIT_SKIP)


def pva_path() -> Path:
    """The installed rtqual-pva (built when pvxslibs was found), or $RTQUAL_PVA."""
    return _installed(PVA, "RTQUAL_PVA", " with pvxslibs", EXIT_SKIP)


def binary_for(probe: str) -> Path:
    """The executable that runs `probe`: the native table's "binary" (rtqual-ca, rtqual-pva), else rtqual-probe."""
    from rtqual.probes import binary_of

    return {CA: ca_path, PVA: pva_path}.get(binary_of(probe), probe_path)()


def command_for(probe: str) -> list[str]:
    """The command that runs `probe`: its executable, or this Python running the probe's module."""
    from rtqual.probes import binary_of

    module = PYTHON.get(binary_of(probe))
    return [sys.executable, "-m", module] if module else [str(binary_for(probe))]


def _devsup_dir() -> Path:
    override = os.environ.get("RTQUAL_DEVSUP_DIR")
    return Path(override) if override else Path(str(resources.files("rtqual"))) / "epics"


def epics_site() -> dict | None:
    """The site EPICS base the device support was built against ({"lib_dir", "dbd_dir"}, written
    by the build as epics_site.json beside it), or None: EPICS from the epicscorelibs wheel."""
    try:
        return json.loads((_devsup_dir() / "epics_site.json").read_text())
    except FileNotFoundError:
        return None


def epics_devsup() -> tuple[Path, Path]:
    """The EPICS device support built with the package: (librtqual_devsup.so, rtqual.dbd) in
    rtqual/epics/, or in $RTQUAL_DEVSUP_DIR for development (a CMake build's native/epics)."""
    folder = _devsup_dir()
    lib, dbd = folder / "librtqual_devsup.so", folder / "rtqual.dbd"
    if not lib.is_file() or not dbd.is_file():
        raise RtqError(
            f"EPICS device support not found in {folder}: reinstall rtqual with epicscorelibs "
            "(pip install .) or set RTQUAL_DEVSUP_DIR",
            EXIT_SKIP,
        )
    return lib, dbd


def probe_version() -> str:
    """'0.1.0' from `rtqual-probe --version`."""
    out = subprocess.run([probe_path(), "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip().split()[-1] if out.returncode == 0 and out.stdout.strip() else "unknown"


def probe_version_or(default: str) -> str:
    """rtqual-probe's version, or `default` where it is not installed (rtqual --version, rtqual host)."""
    try:
        return probe_version()
    except RtqError:
        return default


def probe_list() -> list[dict]:
    """The probe table: name, summary, supported, why_not, binary, label_keys, service, sections,
    options (docs/protocol.md); then the probes of rtqual-ca and rtqual-pva, where built. "binary" is
    the executable's name (set here too, for binaries that do not say it yet)."""
    rows: list[dict] = []
    for name, path in ((PROBE, probe_path), (CA, ca_path), (PVA, pva_path)):
        try:
            binary = path()
        except RtqError:
            if name == PROBE:
                raise
            continue
        out = subprocess.run([binary, "--list"], capture_output=True, text=True, timeout=10)
        for line in out.stdout.splitlines():
            if line.strip():
                rows.append(json.loads(line))
                rows[-1].setdefault("binary", name)
    return rows


def check(probe: str, args: list[str]) -> None:
    """Validate options and privileges with `--check`; raise the probe's one-line message."""
    command = command_for(probe)
    name = Path(command[-1]).name
    out = subprocess.run([*command, probe, "--check", *args], capture_output=True, text=True, timeout=30)
    if out.returncode in (EXIT_ERROR, EXIT_SKIP):
        raise RtqError(_last_line(out.stderr) or f"{name} {probe}: exit {out.returncode}", out.returncode)
    if out.returncode != 0:
        raise RtqError(f"{name} {probe} --check failed (exit {out.returncode}): {_last_line(out.stderr)}")


def default_stop_signals() -> None:
    """In a child before exec: SIGINT and SIGTERM back to their default action. An ignored signal stays ignored
    across exec (a shell's background job starts with SIGINT ignored), and a stop sent before the probe set its
    handler would be lost: the probe would run its whole duration."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


def spawn(probe: str, args: list[str], stderr, preexec=None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a probe in its own session (signals are forwarded by the runner); JSON Lines on stdout.
    preexec runs in the child before exec (e.g. joining a cpuset); env (default: ours) is the
    child's environment, e.g. rtqual.measure.epics.env.epics_env(...) for ca-rtt."""

    def setup():
        die_with_parent(signal.SIGTERM)  # the probe stops cleanly if rtqual is killed
        default_stop_signals()
        if preexec:
            preexec()

    return subprocess.Popen(
        [*command_for(probe), probe, *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        start_new_session=True,
        preexec_fn=setup,
        env=env,
    )


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1]
    for name in (PROBE, CA, PVA, *PYTHON):
        last = last.removeprefix(f"{name}: ")
    return last

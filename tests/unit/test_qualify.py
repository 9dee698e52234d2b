"""README's first command where PyPI has no EPICS wheels (arm64, armhf; issue 37): scripts/setup says each missing
compiler or header in one line naming its Debian package, and where EPICS comes from before anything is built
(`--preflight` checks and installs nothing); scripts/qualify then runs quick.toml without its IOC cases, whose
cases stay quick.toml's. The checks run on this machine with the commands the script sees narrowed (a PATH of
links) and the machine named by a `uname` that prints another."""

import os
import shutil
import socket
import subprocess
from pathlib import Path

from rtqual import scenario

REPO = Path(__file__).resolve().parents[2]
CPUS = [0, 1, 2, 3]
TOOLS = ("bash", "dirname", "dpkg-query", "grep", "id", "make", "env", "cat", "cc", "c++", "perl", "cmake")


def test_quick_no_ioc_is_quick_without_its_ioc_cases():
    def cases(name: str) -> list[dict]:
        return scenario.expand(scenario.load(REPO / "scenarios" / name), cpus=CPUS)

    quick = [c for c in cases("quick.toml") if c["run_as"] != "ioc"]
    assert len(quick) == 3 and [c["run_as"] for c in cases("quick.toml")].count("ioc") == 2
    assert cases("quick-no-ioc.toml") == quick


def preflight(tmp_path: Path, leave_out: tuple[str, ...] = (), machine: str | None = None, **env: str):
    """scripts/setup --preflight seeing only TOOLS (less leave_out), the system's python3, and a uname -m that
    says `machine`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for tool in TOOLS:
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if tool not in leave_out and found:
            (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to("/usr/bin/python3")
    uname = bin_dir / "uname"
    uname.write_text(f"#!/bin/sh\necho {machine or os.uname().machine}\n")
    uname.chmod(0o755)
    return subprocess.run(
        [bin_dir / "bash", REPO / "scripts" / "setup", "--preflight"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(bin_dir), "HOME": str(tmp_path), **env},
    )


def test_a_missing_compiler_is_one_line_naming_the_debian_package(tmp_path):
    out = preflight(tmp_path, leave_out=("cc", "cmake"))
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "setup: no C compiler (cc): install the Debian package build-essential (apt-get install build-essential)",
        "setup: no cmake: install the Debian package cmake (apt-get install cmake)",
    ]


def test_arm64_without_a_base_builds_epics_from_source_and_a_base_is_checked(tmp_path):
    out = preflight(tmp_path / "a", machine="aarch64")
    assert out.returncode == 0 and out.stdout.splitlines() == [
        "setup: preflight: the build can start (EPICS: source, aarch64)"
    ]
    out = preflight(tmp_path / "a0", machine="aarch64", RTQUAL_EPICS_FROM_SOURCE="0")
    assert out.stdout.splitlines() == ["setup: preflight: the build can start (EPICS: none, aarch64)"]
    out = preflight(tmp_path / "a1", leave_out=("c++",), machine="aarch64")  # EPICS base is C++
    assert out.returncode == 1 and out.stdout.splitlines() == [
        "setup: no C++ compiler (c++), for EPICS base: install the Debian package g++ (apt-get install g++)"
    ]
    base = tmp_path / "base"
    out = preflight(tmp_path / "b", machine="aarch64", RTQUAL_EPICS_BASE=str(base))
    assert out.returncode == 1 and len(out.stdout.splitlines()) == 1
    assert "no lib/linux-aarch64/libdbCore.so" in out.stdout and "docs/epics.md" in out.stdout
    for rel in ("lib/linux-aarch64/libdbCore.so", "dbd/base.dbd"):
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text("")
    out = preflight(tmp_path / "c", machine="aarch64", RTQUAL_EPICS_BASE=str(base))
    assert out.stdout.splitlines() == ["setup: preflight: the build can start (EPICS: site, aarch64)"]
    out = preflight(tmp_path / "d", machine="armv7l", RTQUAL_EPICS_BASE=str(base))  # armhf's base: linux-arm
    assert out.returncode == 1 and "no lib/linux-arm/libdbCore.so" in out.stdout


def test_an_unreachable_package_index_is_one_line_before_anything_is_built(tmp_path):
    """pip getting no answer from its index (here a proxy on a closed port; on a Pi behind a proxy, its CA missing)
    is said in one line, exit 1, before anything is built: not taken for "PyPI has no wheels", not left to a
    missing requirement later."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup", repo / "scripts" / "setup")
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{s.getsockname()[1]}"
    env = {**os.environ, "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "NO_PROXY": "", "PIP_RETRIES": "1"}
    out = subprocess.run(["bash", repo / "scripts" / "setup"], capture_output=True, text=True, timeout=300, env=env)
    said = [line for line in out.stdout.splitlines() if line.startswith("setup:")]
    assert out.returncode == 1 and said, out.stdout + out.stderr
    assert said[-1].startswith("setup: pip gets no answer from its package index (") and "nothing was built" in said[-1]
    assert "(NewConnectionError)" in said[-1] or "(ProxyError)" in said[-1], said[-1]  # pip retried once: named
    assert not list(repo.glob(".venv/lib/python3*/site-packages/rtqual*"))


def lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([REPO / "scripts" / "kernel-lab", *args], capture_output=True, text=True, timeout=60)


def test_arm64_lab_flavours_are_arm64_and_arm64_rt():
    """The flavour names are the contract: both reach the arm64 lab (its own checks answer), others are named."""
    for flavour in ("arm64", "arm64-rt"):
        out = lab(flavour, "--cpus", "0", "--", "true")
        assert (out.returncode, out.stderr) == (1, "kernel-lab: --cpus 0: a number of CPUs, 1-99\n")
    out = lab("arm64-foo", "--", "true")
    assert out.returncode == 1 and out.stderr.strip().endswith("arm64 or arm64-rt")
    out = subprocess.run([REPO / "scripts" / "kernel-lab-arm64", "--kernel", "rt", "--", "true"], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert (out.returncode, out.stderr) == (1, "kernel-lab: unknown arm64 kernel 'rt': arm64 or arm64-rt\n")

"""A site EPICS base chosen at build time (-DRTQUAL_EPICS_BASE): the device support is built
against it and the IOC runs on its libraries, one copy of each. The "site base" here is laid
out like an installed base (include/, lib/linux-x86_64/, dbd/) from copies of the wheel's files,
so the test can tell from /proc/PID/maps which libraries the IOC really loaded."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import epicscorelibs.path
import pytest

from rtqual.measure.epics.ioc import Ioc

ROOT = Path(__file__).resolve().parents[2]
ARCH = "linux-x86_64"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base folder, build folder) with the device support built against the base."""
    tmp = tmp_path_factory.mktemp("site")
    base = tmp / "base"
    (base / "lib").mkdir(parents=True)
    shutil.copytree(epicscorelibs.path.lib_path, base / "lib" / ARCH, ignore=shutil.ignore_patterns("*.py", "__*"))
    (base / "include").symlink_to(epicscorelibs.path.include_path)
    (base / "dbd").symlink_to(Path(epicscorelibs.path.base_path) / "dbd")
    build = tmp / "build"
    env = {**os.environ, "EPICS_HOST_ARCH": ARCH}
    for cmd in (
        ["cmake", "-S", ROOT, "-B", build, f"-DRTQUAL_EPICS_BASE={base}", "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", build, "--target", "rtqual_devsup", "-j2"],
    ):
        p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return base, build / "native" / "epics"


def loaded(pid: int, name: str) -> set[str]:
    """Paths of the files named `name`* mapped into the process."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {line.split()[-1] for line in maps if os.path.basename(line.split()[-1]).startswith(name)}


def test_the_build_names_the_site_base_for_the_ioc(site):
    base, devsup = site
    assert json.loads((devsup / "epics_site.json").read_text()) == {
        "lib_dir": str(base / "lib" / ARCH),
        "dbd_dir": str(base / "dbd"),
    }


def test_the_ioc_runs_on_the_site_base_libraries_only(site):
    base, devsup = site
    with Ioc(preset="aps", env={**os.environ, "RTQUAL_DEVSUP_DIR": str(devsup)}) as ioc:
        assert ioc.ready["epics_libs"] == str(base / "lib" / ARCH) and ioc.ready["epicscorelibs"] is None
        for lib in ("libCom.so", "libdbCore.so", "libdbRecStd.so", "librtqual_devsup.so"):
            paths = loaded(ioc.proc.pid, lib)
            assert len(paths) == 1, (lib, paths)  # one copy, never the wheel's and the base's
        assert loaded(ioc.proc.pid, "libdbCore.so") == {str(base / "lib" / ARCH / "libdbCore.so")}
        ioc.trigger()
        ((t_stim, t_wake, t_process, t_out),) = ioc.responses(1)
        assert t_stim <= t_wake <= t_process <= t_out


def test_explicit_directories_without_dbd_dir_are_refused(tmp_path):
    p = subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(tmp_path / "b"),
            f"-DRTQUAL_EPICS_INCLUDE_DIR={epicscorelibs.path.include_path}",
            f"-DRTQUAL_EPICS_LIB_DIR={epicscorelibs.path.lib_path}",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "RTQUAL_EPICS_DBD_DIR" in p.stderr


def test_without_a_site_base_the_ioc_runs_on_the_wheel():
    with Ioc() as ioc:
        assert ioc.ready["epicscorelibs"] and ioc.ready["epics_libs"] == str(Path(epicscorelibs.path.lib_path))
        (path,) = loaded(ioc.proc.pid, "libdbCore.so")
        assert Path(path).parent == Path(epicscorelibs.path.lib_path)

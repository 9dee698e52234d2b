"""The arm64 lab's cached builds (issue 37 item 5; scripts/lib/labcache.sh, docs/kernel-lab.md): a missing or
half-built cache is cold and said in one line, a full disk or a failed step is one line naming its cause and the
log (never the log's tail), an interrupted build leaves nothing the next run uses. The shell functions are run
by bash on a folder of this test; `--cache-status` of both scripts on an empty cache. No build, no root needed."""

import os
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "scripts" / "lib" / "labcache.sh"
FILES = ("root.img", "vmlinuz-arm64")


def sh(cache: Path, script: str, **kw) -> subprocess.CompletedProcess:
    """`script` run by bash with labcache.sh sourced, lc_name=lab and lc_cache=cache."""
    prelude = f'set -euo pipefail; . "{LIB}"; lc_name=lab lc_cache="{cache}"\n'
    return subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, timeout=30, **kw)


def spawn(cache: Path, script: str, **kw) -> subprocess.Popen:
    """`script` started by bash with labcache.sh sourced; once it has staged, it touches cache/staged."""
    return subprocess.Popen(["bash", "-c", f'. "{LIB}"; lc_name=lab lc_cache="{cache}"; lc_stage; {script}'], **kw)


def wait_staged(cache: Path) -> None:
    deadline = time.monotonic() + 10
    while not (cache / "staged").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def status(cache: Path, recipe: str = "r1") -> subprocess.CompletedProcess:
    return sh(cache, f'lc_status "$lc_cache/recipe" {recipe} {" ".join(FILES)}')


def build(cache: Path, recipe: str = "r1", after: str = "") -> subprocess.CompletedProcess:
    """A build of FILES: staged, committed (the recipe last); `after` runs between staging and committing."""
    return sh(cache, f'lc_lock; lc_stage; for f in {" ".join(FILES)}; do echo new > "$lc_staging/$f"; done\n'
                     f'{after}\nlc_commit "$lc_cache/recipe" {recipe} {" ".join(FILES)}')  # fmt: skip


def test_a_missing_or_half_built_cache_is_cold_in_one_line(tmp_path):
    out = status(tmp_path)
    assert out.returncode == 2
    assert out.stdout == f"lab: cold: no {tmp_path}/recipe (never built, or a build did not finish)\n"
    assert build(tmp_path).returncode == 0 and status(tmp_path).returncode == 0
    assert status(tmp_path).stdout == "" and (tmp_path / "root.img").read_text() == "new\n"
    (tmp_path / "vmlinuz-arm64").unlink()  # a cache someone emptied in part
    assert status(tmp_path).stdout == f"lab: cold: {tmp_path}/vmlinuz-arm64 is missing\n"
    build(tmp_path)
    out = status(tmp_path, recipe="r2")  # the recipe changed
    assert out.returncode == 2 and out.stdout == f"lab: stale: built from another recipe ({tmp_path}/recipe)\n"


def test_a_build_that_stops_while_committing_leaves_the_cache_cold(tmp_path):
    """The stamp goes first: a commit that fails half-way (here: a part the build did not make) is no whole cache,
    neither the old one nor the new one."""
    assert build(tmp_path).returncode == 0
    out = build(tmp_path, recipe="r2", after='rm "$lc_staging/vmlinuz-arm64"')
    assert out.returncode != 0 and not (tmp_path / "recipe").exists()
    assert status(tmp_path).returncode == 2 and status(tmp_path, recipe="r2").returncode == 2
    assert not list(tmp_path.glob(".build.*"))  # the staging folder went with it


def test_a_killed_build_is_never_used_and_its_leftovers_go_next_time(tmp_path):
    """SIGKILL runs no trap: the staged parts stay behind, the cache stays cold, the next build removes them."""
    proc = spawn(tmp_path, 'echo half > "$lc_staging/root.img"; touch "$lc_cache/staged"; exec sleep 30')
    wait_staged(tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    (leftover,) = tmp_path.glob(".build.*")
    assert status(tmp_path).returncode == 2 and not (tmp_path / "root.img").exists()
    out = build(tmp_path)
    assert out.returncode == 0 and out.stderr == f"lab: removing what an interrupted build left ({leftover})\n"
    assert not leftover.exists() and status(tmp_path).returncode == 0


def test_an_interrupted_build_is_one_line_and_removes_its_staging(tmp_path):
    script = 'sleep 30 >/dev/null 2>&1 & echo $! > "$lc_cache/sleeper"; touch "$lc_cache/staged"; wait'
    proc = spawn(tmp_path, script, stderr=subprocess.PIPE, text=True)
    wait_staged(tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    os.kill(int((tmp_path / "sleeper").read_text()), signal.SIGKILL)
    assert proc.returncode == 130
    assert err == "lab: interrupted: nothing half-built is kept, the next run builds it again\n"
    assert not list(tmp_path.glob(".build.*")) and status(tmp_path).returncode == 2


def test_a_full_disk_is_one_line(tmp_path):
    out = sh(tmp_path, 'lc_need_space "$lc_cache" 999999999 "building the arm64 root"')
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
    need = f"lab: building the arm64 root needs about 999999999 MB free in {tmp_path} and there are "
    assert out.stderr.startswith(need)
    assert out.stderr.endswith(" MB: free some space (nothing was built)\n")
    log = tmp_path / "build.log"
    log.write_text("".join(f"line {i}\n" for i in range(50)) + "cp: error writing 'x': No space left on device\nmore\n")
    out = sh(tmp_path, f'lc_fail "{log}" "mkfs.ext4 -d of the arm64 root"')
    assert out.returncode == 1
    full = "the disk is full (No space left on device"
    assert out.stderr == f"lab: mkfs.ext4 -d of the arm64 root failed: {full}; log: {log})\n"


def test_a_failed_step_is_one_line_with_its_cause_not_the_log_tail(tmp_path):
    log = tmp_path / "epics-base.log"
    log.write_text("".join(f"make[2]: compiling {i}\n" for i in range(40)) + "foo.c:1: error: bad\x1b[0m thing\nend\n")
    out = sh(tmp_path, f'lc_fail "{log}" "make in src"')
    assert out.returncode == 1 and out.stderr == f"lab: make in src failed: foo.c:1: error: bad[0m thing (log: {log})\n"
    log.write_text("nothing to see\n")
    assert sh(tmp_path, f'lc_fail "{log}" "make in src"').stderr == f"lab: make in src failed (log: {log})\n"


def test_both_scripts_say_a_cold_cache_in_one_line_and_build_nothing(tmp_path):
    env = {**os.environ, "RTQUAL_ARM64_CACHE": str(tmp_path / "cache")}
    for cmd, prefix, stamp in (
        (["scripts/kernel-lab", "arm64-rt"], "kernel-lab", "recipe"),
        (["scripts/epics-arm64"], "epics-arm64", "epics-base/.recipe"),
    ):
        out = subprocess.run([REPO / cmd[0], *cmd[1:], "--cache-status"], capture_output=True, text=True,
                             timeout=30, env=env)  # fmt: skip
        assert (out.returncode, out.stderr) == (2, "")
        assert out.stdout == f"{prefix}: cold: no {tmp_path}/cache/{stamp} (never built, or a build did not finish)\n"
    assert not (tmp_path / "cache").exists()

"""remove_orphan_dirs: a temp folder whose rtqual died before any bundle journal named it is found by the pid
in its name and removed; a live process's folder and other names are left alone."""

import os
from pathlib import Path

from rtqual.util import remove_orphan_dirs


def _dead_pid() -> int:
    pid = 4_000_000  # above the default pid_max's range when free; otherwise the next free one
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid


def test_only_folders_of_dead_processes_are_removed(tmp_path):
    dead = tmp_path / f"rtqual-ioc-{_dead_pid()}-abc"
    alive = tmp_path / f"rtqual-ioc-{os.getpid()}-def"
    old_style = tmp_path / "rtqual-ioc-3paub0wo"  # 0.1.0's names carry no pid: never guessed at
    other = tmp_path / "unrelated-1-x"
    for d in (dead, alive, old_style, other):
        d.mkdir()
    (dead / "in.fifo").write_text("")
    assert remove_orphan_dirs("rtqual-ioc-", tmp_path) == [dead]
    assert not dead.exists()
    assert alive.exists() and old_style.exists() and other.exists()
    assert remove_orphan_dirs("rtqual-ioc-", tmp_path) == []

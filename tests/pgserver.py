"""A throw-away PostgreSQL server for tests (the history store's, the fleet playbook's): initdb and pg_ctl of
Debian's `postgresql` in a temp folder on a free loopback port, removed at the end; skips saying why where the
server, psycopg or runuser is missing."""

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir() -> Path | None:
    """The newest PostgreSQL server's bin folder (Debian: /usr/lib/postgresql/N/bin), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


class PgServer:
    """A throw-away PostgreSQL cluster: initdb in a temp folder, run by an unprivileged user (nobody when we
    are root) on a free loopback port, trust authentication for the user rtqual; stop()/start() for the
    unreachable-store tests."""

    def __init__(self, bindir: Path):
        self.bindir, self.port = bindir, free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="rtqual-pg-"))
        self.as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody")
        self._pg("initdb", "-D", self.dir / "data", "-U", "rtqual", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    def _pg(self, tool: str, *args) -> None:
        out = subprocess.run(
            [*self.as_user, self.bindir / tool, *map(str, args)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, f"{tool}: {out.stdout}{out.stderr}"

    def start(self) -> None:
        opts = f"-h 127.0.0.1 -p {self.port} -k {self.dir} -F"  # loopback only, socket in our folder, no fsync
        self._pg("pg_ctl", "-D", self.dir / "data", "-l", self.dir / "log", "-w", "-t", "30", "-o", opts, "start")

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", self.dir / "data", "-w", "-t", "30", "-m", "fast", "stop")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://rtqual@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A fresh, empty database for one test; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        subprocess.run(
            [*self.as_user, self.bindir / "pg_ctl", "-D", self.dir / "data", "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server not installed (Debian package postgresql; scripts/setup --test)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 not installed (pip install '.[postgresql]'; scripts/setup --test)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("runuser missing: cannot run PostgreSQL as an unprivileged user")
    server = PgServer(bindir)
    try:
        yield server
    finally:
        server.remove()

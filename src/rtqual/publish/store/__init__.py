"""The history store (docs/store.md): every run's case summaries and every monitor window, in SQLite (default,
one file) or PostgreSQL (`postgresql://…`, psycopg 3), one schema with versioned migrations (schema.py).
Store methods raise StoreError (one line) on any trouble of the store; WindowSink (sink.py) never raises."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from rtqual.answers import caveats
from rtqual.answers.requirements import describe
from rtqual.errors import RtqError
from rtqual.publish.store.schema import MIGRATIONS, SCHEMA_VERSION_TABLE, statements
from rtqual.publish.views import environment_of
from rtqual.results import bundle as bundle_mod
from rtqual.results.bundle import Model
from rtqual.results.window import coarse_text, parse_coarse
from rtqual.util import system_tree

ENV = "RTQUAL_STORE"
OFF = "off"  # --store off / RTQUAL_STORE=off: runs are not stored
BUSY_TIMEOUT_MS = 30_000  # SQLite: how long a writer waits for another one's transaction
CONNECT_TIMEOUT_S = 5  # PostgreSQL: how long an unreachable server may delay a run's end
STAT_KEYS = ("count", "min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns", "stddev_ns")
COUNT_KEYS = ("overruns", "over_threshold", "out_of_range")
DAY_S = 86400  # window_days: one row per host, probe, CPU and UTC day
WINDOW_KEYS = (
    "probe", "run_as", "cpu", "start_unix_s", "duration_s", "samples", "min_ns", "mean_ns", "p50_ns", "p99_ns",
    "p9999_ns", "max_ns", "over_threshold", "overruns", "threshold_ns", "kernel", "preempt",
)  # fmt: skip
SPIKE_KEYS = (
    "probe", "cpu", "time_unix_s", "latency_ns", "kind", "comm", "pid", "policy", "priority", "cause_cpu", "evidence",
)  # fmt: skip


def _top(a: Any, b: Any) -> int | None:
    """The larger of two maxima where either may be unknown (None)."""
    return None if a is None and b is None else max(int(a or 0), int(b or 0))


class StoreError(RtqError):
    """The store cannot be opened, read or written: one line saying which store and why."""


def default_url() -> str:
    """The default store: /var/lib/rtqual/history.sqlite as root, $XDG_DATA_HOME/rtqual/history.sqlite
    (~/.local/share/…) otherwise."""
    if os.geteuid() == 0:
        return "/var/lib/rtqual/history.sqlite"
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "rtqual", "history.sqlite")


def resolve_url(url: str | None) -> str:
    """The store to use: the given URL, else $RTQUAL_STORE, else the default path."""
    return url or os.environ.get(ENV) or default_url()


def is_off(url: str | None) -> bool:
    """True when storing is switched off (`--store off` or RTQUAL_STORE=off)."""
    return resolve_url(url) == OFF


SCHEMES = ("sqlite://", "postgresql://", "postgres://")  # and a plain path (SQLite)
TABLES = ("hosts", "runs", "cases", "windows", "baselines", "schema_version")


def check_url(url: str | None) -> str:
    """The store's URL ($RTQUAL_STORE, else the default path, when url is None) if rtqual can use it, else a
    one-line StoreError: a path, sqlite:///PATH, postgresql://… or off; any other scheme (mysql://, http://)
    is refused rather than taken for a file name."""
    where = resolve_url(url)
    scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", where)
    if scheme and not where.lower().startswith(SCHEMES):
        raise StoreError(
            f"history store {_redact(where)}: unsupported scheme {scheme.group(0)!r} "
            "(use a path, sqlite:///PATH, postgresql://... or off)"
        )
    if where.lower().startswith("sqlite://") and not where[len("sqlite://") :]:
        raise StoreError(f"history store {where}: no path (sqlite:///PATH)")
    tree = None if where == OFF or where.lower().startswith(SCHEMES[1:]) else system_tree(_sqlite_path(where))
    if tree:
        raise StoreError(f"history store {where}: in {tree}, a kernel or device tree: choose an ordinary file")
    return where


def _sqlite_path(where: str) -> Path:
    """The file of an SQLite store URL: sqlite:///PATH or a plain path."""
    return Path(where[len("sqlite://") :] if where.lower().startswith("sqlite://") else where)


def open_store(url: str | None = None, write: bool = True) -> Store:
    """Open the store at url (None: $RTQUAL_STORE, else the default path): "sqlite:///path", a plain path, or
    "postgresql://…". write=True migrates it to the newest schema (creating it); write=False (history,
    baseline list, check) reads an existing SQLite store read-only when it cannot be written (a read-only
    mount). A foreign database or one written by a newer rtqual is refused (StoreError)."""
    where = check_url(url)
    if where == OFF:
        raise StoreError(f"the history store is switched off ({ENV}=off or --store off)")
    if where.lower().startswith(("postgresql://", "postgres://")):
        return Store(_connect_postgresql(where), "postgresql", _redact(where))
    path = _sqlite_path(where)
    if not write and path.is_file() and _read_only(path):
        return Store(_connect_read_only(path), "sqlite", str(path), write=False)
    if path.exists() and not path.is_file():
        raise StoreError(f"history store {path}: not a regular file")
    if (path.is_file() or path.parent.is_dir()) and _read_only(path):
        raise StoreError(f"history store {path}: read-only ({_read_only(path)}): rtqual history can read it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
    except (OSError, sqlite3.Error) as e:
        raise StoreError(f"history store {path}: cannot open ({_sqlite_reason(e)})") from None
    return Store(conn, "sqlite", str(path))


def _read_only(path: Path) -> str | None:
    """Why the SQLite store at path (or the folder it would be made in) cannot be written: "read-only file
    system", "no write permission", or None when it can."""
    target = path if path.exists() else path.parent
    try:
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        return None
    folder_ok = os.access(path.parent, os.W_OK)  # SQLite writes its -wal and -shm beside the file
    return None if os.access(target, os.W_OK) and folder_ok else "no write permission"


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only SQLite connection to a store nobody can write (a read-only mount or file): mode=ro, and
    immutable=1 where a WAL store's shared-memory file cannot be made (then no other writer can exist)."""
    from urllib.parse import quote

    last: Exception | None = None
    for flags in ("mode=ro", "immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{flags}", uri=True, check_same_thread=False)
            conn.isolation_level = None
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as e:
            last = e
    raise StoreError(f"history store {path}: cannot open read-only ({_sqlite_reason(last)})")


def _sqlite_reason(e: BaseException | None) -> str:
    """An SQLite error in words a user acts on: locked, read-only, not a database; else its first line."""
    text = _first_line(e) if e is not None else "unknown error"
    name = getattr(e, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return f"locked by another writer (waited {BUSY_TIMEOUT_MS // 1000} s)"
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return "read-only: this store cannot be written here"
    if name == "SQLITE_NOTADB" or "file is not a database" in text:
        return "not an SQLite database"
    return text


def writer_lock(url: str | None) -> str | None:
    """Why a writer cannot write the SQLite store at url right now ("locked by another writer", "read-only
    ..."), None when it could (or for PostgreSQL): asked without waiting, for the monitor's last message."""
    try:
        where = check_url(url)
    except StoreError as e:
        return str(e)
    if where == OFF or where.lower().startswith(("postgresql://", "postgres://")):
        return None
    path = _sqlite_path(where)
    if not path.is_file():
        return None
    if _read_only(path):
        return f"history store {path}: read-only ({_read_only(path)})"
    try:
        conn = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as e:
        reason = _sqlite_reason(e)
        return f"history store {path}: {'locked by another writer' if reason.startswith('locked') else reason}"
    return None


def _connect_postgresql(url: str) -> Any:
    """A psycopg 3 connection in autocommit mode (transactions are explicit), or StoreError."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("postgresql:// stores need psycopg 3: pip install 'rtqual[postgresql]'") from None
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as e:
        raise StoreError(f"history store {_redact(url)}: cannot connect ({_first_line(e)})") from None


def _redact(url: str) -> str:
    """A URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, user = head.partition("//")
    return f"{scheme}//{user.split(':', 1)[0]}:***@{tail}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _parse_time(text: Any) -> float | None:
    """Unix seconds of a manifest time ("2026-11-25T01:40:12+0000"), None if absent or unreadable."""
    if not isinstance(text, str):
        return None
    for parse in (lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S%z"), datetime.fromisoformat):
        try:
            return parse(text).timestamp()
        except ValueError:
            continue
    return None


def run_record(bundle: Model | Path) -> tuple[dict, list[dict]]:
    """What the store keeps of a bundle (its model, or a path read into one): the run (host, kernel, preempt,
    scenario, times, state, verdict) and its case rows (overall: cpu None, then one per CPU). A damaged manifest
    is an RtqError; damaged cases are left out (the model names them)."""
    data = bundle if isinstance(bundle, Model) else bundle_mod.load(bundle)
    m = data.as_dict()["manifest"]  # with its cases read: the run's verdict by today's rule (unjudged: completed)
    path = data.path
    facts = data.facts("before") or data.facts("after") or {}
    kernel = facts["kernel"].get("release") if isinstance(facts.get("kernel"), dict) else None
    pre: dict = facts["preempt"] if isinstance(facts.get("preempt"), dict) else {}
    preempt = pre.get("model")
    if preempt and pre.get("dynamic_mode"):
        preempt = f"{preempt} ({pre['dynamic_mode']})"
    scenario = (data.plan or {}).get("name")
    source = m["source"] if isinstance(m.get("source"), dict) else {}
    run = {
        "bundle": str(path.resolve()),
        "host": str(m.get("hostname") or "unknown"),
        "kernel": kernel,
        "preempt": preempt,
        "scenario": scenario if isinstance(scenario, str) else None,
        "source": source.get("tool"),
        "started": m.get("start"),
        "started_unix_s": _parse_time(m.get("start")),
        "ended": m.get("end"),
        "state": str(m.get("status") or "unknown"),
        "verdict": m.get("verdict"),
    }
    rows = []
    said = {c["id"]: caveats.words(c) or None for c in caveats.records(environment_of(data), data.cases)}
    for r in data.cases:
        run_as = (data.params(r["id"]) or {}).get("run_as")
        judged = r.get("requirement_verdicts") or []
        requirement = "; ".join(describe(v) for v in judged) if judged else None
        base = {
            "case_id": r["id"],
            "label": r["label"],
            "probe": r["probe"],
            "run_as": run_as if isinstance(run_as, str) else r["probe"],
            "verdict": r["verdict"],
            "requirement": requirement,
            "caveats": said.get(r["id"]),
        }
        per_cpu = sorted(((int(c), s) for c, s in r["per_cpu"].items() if str(c).isdigit()), key=lambda x: x[0])
        for cpu, stats in [(None, r["stats"]), *per_cpu]:
            rows.append({**base, "cpu": cpu, **{k: stats.get(k) for k in STAT_KEYS + COUNT_KEYS}})
    return run, rows


def run_spikes(data: Model, host: str) -> list[dict]:
    """The spikes a bundle's cases captured (`run --capture`: those with a cause and a time), as the spikes table
    keeps them."""
    out = []
    for r in data.cases:
        run_as = (data.params(r["id"]) or {}).get("run_as")
        for s in r.get("spikes") or []:
            c = s.get("cause")
            if not isinstance(c, dict) or not isinstance(s.get("time_unix_s"), (int, float)):
                continue
            out.append(
                {
                    "host": host,
                    "probe": run_as if isinstance(run_as, str) else r["probe"],
                    "cpu": s.get("cpu"),
                    "time_unix_s": s["time_unix_s"],
                    "latency_ns": s.get("latency_ns"),
                    **{k: c.get(k) for k in ("kind", "comm", "pid", "policy", "priority")},
                    "cause_cpu": c.get("cpu"),
                    "evidence": json.dumps({**(s.get("evidence") or {}), "bundle": str(data.path), "case": r["id"]}),
                }
            )
    return out


class Store:
    """An open history store. Every method is one transaction; trouble is a StoreError."""

    def __init__(self, conn: Any, engine: str, where: str, write: bool = True):
        self.conn, self.engine, self.where, self.writable = conn, engine, where, write
        try:
            self.migrate() if write else self.check_schema()
            if write and engine == "sqlite":  # only once the file is known to be ours: this rewrites its header
                conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as e:
            self.close()
            raise StoreError(f"history store {where}: cannot open ({_sqlite_reason(e)})") from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection: nothing left to lose
            pass

    def _q(self, sql: str) -> str:
        """The SQL with the engine's parameter marks (the SQL text uses ?, psycopg wants %s)."""
        return sql.replace("?", "%s") if self.engine == "postgresql" else sql

    @contextmanager
    def tx(self, write: bool = True) -> Iterator[Any]:
        """One transaction (SQLite: a writer's is BEGIN IMMEDIATE, so writers queue instead of deadlocking, a
        reader's plain BEGIN does not wait for them); a cursor. Any engine error becomes a StoreError."""
        cur = None
        try:
            cur = self.conn.cursor()
            cur.execute("BEGIN IMMEDIATE" if self.engine == "sqlite" and write else "BEGIN")
            yield cur
            cur.execute("COMMIT")
        except Exception as e:
            if cur is not None:
                try:
                    cur.execute("ROLLBACK")
                except Exception:  # noqa: BLE001 - the connection may be gone; the error below says why
                    pass
            if isinstance(e, RtqError):
                raise
            if isinstance(e, sqlite3.Error):
                raise StoreError(f"history store {self.where}: {self._reason(e)}") from None
            if type(e).__module__.startswith("psycopg"):
                raise StoreError(f"history store {self.where}: {_first_line(e)}") from None
            raise

    def _exec(self, cur: Any, sql: str, params: tuple = ()) -> Any:
        cur.execute(self._q(sql), params)
        return cur

    def _reason(self, e: sqlite3.Error) -> str:
        """An SQLite error in words; writing a store opened read-only says so."""
        reason = _sqlite_reason(e)
        return "read-only: opened for reading only" if not self.writable and "read" in reason else reason

    def _schema(self, cur: Any) -> int:
        """The store's schema version (0: an empty database); a StoreError for another program's database
        (tables of its own, or a schema_version table of another shape) or one written by a newer rtqual."""
        if self.engine == "sqlite":
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        else:
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        tables = {str(r[0]) for r in cur.fetchall()}
        mine = tables & set(TABLES)
        if "schema_version" not in tables:
            # SQLite: one file is one program's database; PostgreSQL: other programs' tables may share it
            others = sorted(tables if self.engine == "sqlite" else mine)
            if others:
                raise StoreError(
                    f"history store {self.where}: not an rtqual history store (tables {', '.join(others[:5])}): "
                    "another program's database? choose another --store"
                )
            return 0
        try:
            rows = cur.execute("SELECT version FROM schema_version").fetchall()
        except Exception:  # noqa: BLE001 - a schema_version table of another program's shape
            rows = None
        if rows is None or not all(isinstance(r[0], int) for r in rows):
            raise StoreError(f"history store {self.where}: not an rtqual history store (a foreign schema_version)")
        have = max((int(r[0]) for r in rows), default=0)
        if have > len(MIGRATIONS):
            raise StoreError(
                f"history store {self.where}: written by a newer rtqual (schema {have}; this rtqual knows up to "
                f"{len(MIGRATIONS)}): upgrade rtqual"
            )
        if not set(TABLES) <= tables and have:
            missing = ", ".join(sorted(set(TABLES) - tables))
            raise StoreError(f"history store {self.where}: damaged (tables missing: {missing})")
        return have

    def check_schema(self) -> int:
        """A read-only store's schema version, checked like migrate() checks it; an older one cannot be read."""
        with self.tx(write=False) as cur:
            have = self._schema(cur)
        if have < len(MIGRATIONS):
            raise StoreError(
                f"history store {self.where}: schema {have}, older than this rtqual's {len(MIGRATIONS)} and "
                "read-only: open it once where it can be written"
            )
        return have

    def migrate(self) -> int:
        """Apply every migration newer than the store's schema_version, in order, under a lock (two
        processes opening a new store at once); the version now. A foreign or newer store is refused."""
        with self.tx() as cur:
            if self.engine == "postgresql":
                cur.execute("SELECT pg_advisory_xact_lock(1515)")  # serialises migrations between processes
            have = self._schema(cur)
            cur.execute(SCHEMA_VERSION_TABLE)
            for n, migration in enumerate(MIGRATIONS, 1):
                if n <= have:
                    continue
                for statement in statements(migration, self.engine):
                    cur.execute(statement)
                self._exec(cur, "INSERT INTO schema_version (version, applied_unix_s) VALUES (?, ?)", (n, time.time()))
            return max(have, len(MIGRATIONS))

    def version(self) -> int:
        with self.tx(write=False) as cur:
            return int(cur.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])

    def _host_id(self, cur: Any, name: str) -> int:
        self._exec(cur, "INSERT INTO hosts (name) VALUES (?) ON CONFLICT (name) DO NOTHING", (name,))
        return int(self._exec(cur, "SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()[0])

    def add_window(self, window: dict) -> None:
        """One monitor window (one CPU, keys as in docs/store.md)."""
        self.add_windows([window])

    def add_windows(self, windows: list[dict]) -> None:
        """Monitor windows in one transaction: all are stored or none."""
        if not windows:
            return
        cols = ", ".join(("host_id", *WINDOW_KEYS))
        marks = ", ".join("?" * (1 + len(WINDOW_KEYS)))
        with self.tx() as cur:
            hosts = {name: self._host_id(cur, name) for name in sorted({str(w["host"]) for w in windows})}
            rows = [(hosts[str(w["host"])], *(w.get(k) for k in WINDOW_KEYS), w.get("hist")) for w in windows]
            cur.executemany(self._q(f"INSERT INTO windows ({cols}, hist) VALUES ({marks}, ?)"), rows)
            self._add_days(cur, hosts, windows)

    def _add_days(self, cur: Any, hosts: dict[str, int], windows: list[dict]) -> None:
        """The windows added to their day's row of window_days (per host, probe, CPU, UTC day and kernel): counts
        summed, maxima kept, span widened, histograms merged. The one writer of a host's windows is its monitor's
        sink (a read, then a write, in one transaction)."""
        days: dict[tuple, dict] = {}
        for w in windows:
            start = float(w["start_unix_s"])
            key = (hosts[str(w["host"])], str(w["probe"]), int(w["cpu"]), int(start // DAY_S * DAY_S),
                   str(w.get("kernel") or ""), str(w.get("preempt") or ""))  # fmt: skip
            d = days.setdefault(key, {"windows": 0, "samples": 0, "max_ns": None, "p9999_ns": None,
                                      "p9999_windows": 0, "over_threshold": 0, "first_unix_s": start,
                                      "end_unix_s": start, "hist": {}})  # fmt: skip
            d["windows"] += 1
            d["samples"] += int(w["samples"] or 0)
            d["over_threshold"] += int(w["over_threshold"] or 0)
            d["max_ns"] = _top(d["max_ns"], w.get("max_ns"))
            d["p9999_ns"] = _top(d["p9999_ns"], w.get("p9999_ns"))
            d["p9999_windows"] += w.get("p9999_ns") is not None
            d["first_unix_s"] = min(d["first_unix_s"], start)
            d["end_unix_s"] = max(d["end_unix_s"], start + float(w["duration_s"] or 0))
            for k, n in parse_coarse(w.get("hist")).items():
                d["hist"][k] = d["hist"].get(k, 0) + n
        cols = ("windows", "samples", "max_ns", "p9999_ns", "p9999_windows", "over_threshold", "first_unix_s",
                "end_unix_s", "hist")  # fmt: skip
        where = "host_id = ? AND probe = ? AND cpu = ? AND day_unix_s = ? AND kernel = ? AND preempt = ?"
        for key, d in sorted(days.items()):
            old = self._exec(cur, f"SELECT {', '.join(cols)} FROM window_days WHERE {where}", key).fetchone()
            if old:
                o = dict(zip(cols, old))
                for name in ("windows", "samples", "p9999_windows", "over_threshold"):
                    d[name] += int(o[name])
                d["max_ns"], d["p9999_ns"] = _top(d["max_ns"], o["max_ns"]), _top(d["p9999_ns"], o["p9999_ns"])
                d["first_unix_s"] = min(d["first_unix_s"], float(o["first_unix_s"]))
                d["end_unix_s"] = max(d["end_unix_s"], float(o["end_unix_s"]))
                for k, n in parse_coarse(o["hist"]).items():
                    d["hist"][k] = d["hist"].get(k, 0) + n
            d["hist"] = coarse_text(d["hist"])
            names = ("host_id", "probe", "cpu", "day_unix_s", "kernel", "preempt", *cols)
            self._exec(
                cur,
                f"INSERT INTO window_days ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
                "ON CONFLICT (host_id, probe, cpu, day_unix_s, kernel, preempt) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in cols),
                (*key, *(d[c] for c in cols)),
            )

    def add_spikes(self, spikes: list[dict], run_id: int | None = None) -> None:
        """Captured spikes (keys: host and SPIKE_KEYS; evidence as JSON text) in one transaction."""
        if not spikes:
            return
        cols = ", ".join(("host_id", "run_id", *SPIKE_KEYS))
        marks = ", ".join("?" * (2 + len(SPIKE_KEYS)))
        with self.tx() as cur:
            hosts = {name: self._host_id(cur, name) for name in sorted({str(x["host"]) for x in spikes})}
            rows = [(hosts[str(x["host"])], run_id, *(x.get(k) for k in SPIKE_KEYS)) for x in spikes]
            cur.executemany(self._q(f"INSERT INTO spikes ({cols}) VALUES ({marks})"), rows)

    def add_run(self, bundle: Model | Path) -> int:
        """Store a finished (or cut) bundle (its model, or a path); storing the same bundle again replaces its
        rows. The run's id. Tried twice: two processes storing the same new bundle at once (PostgreSQL) collide
        on its key once."""
        data = bundle if isinstance(bundle, Model) else bundle_mod.load(bundle)
        run, rows = run_record(data)
        spikes = run_spikes(data, run["host"])
        try:
            return self._add_run(run, rows, spikes)
        except StoreError:
            return self._add_run(run, rows, spikes)

    def _add_run(self, run: dict, rows: list[dict], spikes: list[dict] = ()) -> int:  # type: ignore[assignment]
        """add_run's one transaction: the run row inserted or updated, its case rows replaced."""
        run_cols = ("kernel", "preempt", "scenario", "source", "started", "started_unix_s", "ended", "state", "verdict")
        with self.tx() as cur:
            host_id = self._host_id(cur, run["host"])
            found = self._exec(
                cur, "SELECT id FROM runs WHERE host_id = ? AND bundle = ?", (host_id, run["bundle"])
            ).fetchone()
            values = tuple(run[k] for k in run_cols) + (time.time(),)
            if found:
                run_id = int(found[0])
                sets = ", ".join(f"{k} = ?" for k in (*run_cols, "stored_unix_s"))
                self._exec(cur, f"UPDATE runs SET {sets} WHERE id = ?", (*values, run_id))
                self._exec(cur, "DELETE FROM cases WHERE run_id = ?", (run_id,))
                self._exec(cur, "DELETE FROM spikes WHERE run_id = ?", (run_id,))
            else:
                cols = ", ".join(("host_id", "bundle", *run_cols, "stored_unix_s"))
                marks = ", ".join("?" * (len(run_cols) + 3))
                run_id = int(
                    self._exec(
                        cur,
                        f"INSERT INTO runs ({cols}) VALUES ({marks}) RETURNING id",
                        (host_id, run["bundle"], *values),
                    ).fetchone()[0]
                )
            keys = ("case_id", "label", "probe", "run_as", "cpu", *STAT_KEYS, *COUNT_KEYS, "verdict", "requirement",
                    "caveats")  # fmt: skip
            marks = ", ".join("?" * (len(keys) + 1))
            cur.executemany(
                self._q(f"INSERT INTO cases (run_id, {', '.join(keys)}) VALUES ({marks})"),
                [(run_id, *(r[k] for k in keys)) for r in rows],
            )
            cols = ", ".join(("host_id", "run_id", *SPIKE_KEYS))
            cur.executemany(
                self._q(f"INSERT INTO spikes ({cols}) VALUES ({', '.join('?' * (2 + len(SPIKE_KEYS)))})"),
                [(host_id, run_id, *(x.get(k) for k in SPIKE_KEYS)) for x in spikes],
            )
        return run_id

    def set_baseline(self, name: str, run_id: int) -> None:
        """Name a stored run as a baseline (an existing name is moved to it)."""
        with self.tx() as cur:
            self._exec(
                cur,
                "INSERT INTO baselines (name, run_id, set_unix_s) VALUES (?, ?, ?) ON CONFLICT (name) "
                "DO UPDATE SET run_id = excluded.run_id, set_unix_s = excluded.set_unix_s",
                (name, run_id, time.time()),
            )

    def _rows(self, sql: str, params: tuple = ()) -> list[dict]:
        with self.tx(write=False) as cur:
            self._exec(cur, sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def baselines(self) -> list[dict]:
        """Every baseline: name, when set, and its run (bundle, host, kernel, preempt, started, verdict)."""
        return self._rows(
            "SELECT b.name, b.set_unix_s, r.id AS run_id, r.bundle, h.name AS host, r.kernel, r.preempt, "
            "r.started, r.verdict FROM baselines b JOIN runs r ON r.id = b.run_id JOIN hosts h ON h.id = r.host_id "
            "ORDER BY b.name"
        )

    def baseline(self, name: str) -> dict:
        """A baseline's run shaped like rtqual.results.bundle.load's answer (path, manifest, overall stats per case),
        for compare.matches; StoreError when there is no such baseline."""
        found = [b for b in self.baselines() if b["name"] == name]
        if not found:
            names = ", ".join(b["name"] for b in self.baselines()) or "none"
            raise StoreError(f"no baseline named {name!r} in {self.where} (known: {names}; rtqual baseline set)")
        b = found[0]
        cases = self._rows("SELECT * FROM cases WHERE run_id = ? AND cpu IS NULL ORDER BY id", (b["run_id"],))
        return {
            "path": b["bundle"],
            "manifest": {"hostname": b["host"], "start": b["started"], "verdict": b["verdict"]},
            "baseline": b,
            "cases": [
                {
                    "id": c["case_id"],
                    "label": c["label"],
                    "probe": c["probe"],
                    "verdict": c["verdict"],
                    "stats": {k: c[k] for k in STAT_KEYS + COUNT_KEYS},
                }
                for c in cases
            ],
        }

    def history(self, host: str | None = None, case: str | None = None, since_unix_s: float | None = None) -> list:
        """One row per stored run and case (overall statistics), oldest first, filtered by host, case (a part
        of its label, or its id) and start time."""
        where, params = ["c.cpu IS NULL"], list[Any]()
        if host:
            where.append("h.name = ?")
            params.append(host)
        if case:
            like = "%" + case.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where += ["(c.label LIKE ? ESCAPE '\\' OR c.case_id = ?)"]  # a part of the label, or the id
            params += [like, case]
        if since_unix_s is not None:
            where.append("r.started_unix_s >= ?")
            params.append(since_unix_s)
        return self._rows(
            "SELECT r.id AS run_id, r.started, r.started_unix_s, h.name AS host, r.kernel, r.preempt, r.scenario, "
            "r.source, r.bundle, r.state, c.case_id, c.label, c.probe, c.run_as, c.count, c.p99_ns, c.p9999_ns, "
            "c.max_ns, c.verdict, c.caveats, c.requirement FROM cases c JOIN runs r ON r.id = c.run_id "
            "JOIN hosts h ON h.id = r.host_id "
            f"WHERE {' AND '.join(where)} ORDER BY r.started_unix_s, r.id, c.id",
            tuple(params),
        )

    def windows(self, host: str | None = None, since_unix_s: float | None = None) -> list[dict]:
        """Monitor windows (host name included), oldest first, filtered by host and start time."""
        where, params = ["1 = 1"], list[Any]()
        if host:
            where.append("h.name = ?")
            params.append(host)
        if since_unix_s is not None:
            where.append("w.start_unix_s >= ?")
            params.append(since_unix_s)
        cols = ", ".join(f"w.{k}" for k in WINDOW_KEYS)
        return self._rows(
            f"SELECT h.name AS host, {cols} FROM windows w JOIN hosts h ON h.id = w.host_id "
            f"WHERE {' AND '.join(where)} ORDER BY w.start_unix_s, w.id",
            tuple(params),
        )

    def _filters(self, host: str | None, since_unix_s: float | None, column: str) -> tuple[str, tuple]:
        where, params = ["1 = 1"], list[Any]()
        if host:
            where.append("h.name = ?")
            params.append(host)
        if since_unix_s is not None:
            where.append(f"{column} >= ?")
            params.append(since_unix_s)
        return " AND ".join(where), tuple(params)

    def window_days(self, host: str | None = None, since_unix_s: float | None = None) -> list[dict]:
        """The monitor windows per host, probe, CPU, UTC day and kernel (window_days): windows, samples, maximum,
        worst p99.99 (and the windows carrying one), over-threshold count, first start, last end and the day's
        histogram ({bin: count}, rtqual.results.window.COARSE_PER_DECADE), oldest first. A day counts when one of
        its windows ended after since_unix_s."""
        where, params = self._filters(host, since_unix_s, "d.end_unix_s")
        rows = self._rows(
            "SELECT h.name AS host, d.probe, d.cpu, d.day_unix_s, d.kernel, d.preempt, d.windows, d.samples, "
            "d.max_ns, d.p9999_ns, d.p9999_windows, d.over_threshold, d.first_unix_s, d.end_unix_s, d.hist "
            f"FROM window_days d JOIN hosts h ON h.id = d.host_id WHERE {where} "
            "ORDER BY d.day_unix_s, d.first_unix_s, h.name, d.probe, d.cpu",
            params,
        )
        return [{**r, "hist": parse_coarse(r["hist"])} for r in rows]

    def window_series(
        self, host: str | None = None, since_unix_s: float | None = None, step_s: int = 3600
    ) -> list[dict]:
        """The monitor windows in steps of step_s (all CPUs of a host and probe together), oldest first: the
        worst window's max and p99.99, the windows, those whose samples carry p99.99 (100,000), samples, the
        largest threshold. Summed by the engine; steps of a day or more come from window_days (a year of
        1-minute windows is 365 rows a CPU), shorter ones from the windows."""
        where, params = self._filters(host, since_unix_s, "w.start_unix_s")
        if step_s >= DAY_S:
            days = self.window_days(host, since_unix_s)
            t0 = int(min((d["day_unix_s"] for d in days), default=0)) // step_s * step_s
            out: dict[tuple, dict] = {}
            for d in days:
                start = t0 + (int(d["day_unix_s"]) - t0) // step_s * step_s
                blank = {"host": d["host"], "probe": d["probe"], "max_ns": None, "p9999_ns": None, "windows": 0,
                         "p9999_windows": 0, "samples": 0, "threshold_ns": None, "start_unix_s": start,
                         "step_s": step_s}  # fmt: skip
                r = out.setdefault((start, d["host"], d["probe"]), blank)
                r["max_ns"], r["p9999_ns"] = _top(r["max_ns"], d["max_ns"]), _top(r["p9999_ns"], d["p9999_ns"])
                r["windows"] += d["windows"]
                r["p9999_windows"] += d["p9999_windows"]
                r["samples"] += d["samples"]
            return [out[k] for k in sorted(out)]
        t0 = int(since_unix_s or 0) // step_s * step_s
        bucket = "(CAST(w.start_unix_s AS BIGINT) - ?) / ?"  # integer division in both engines
        rows = self._rows(
            f"SELECT h.name AS host, w.probe, {bucket} AS bucket, MAX(w.max_ns) AS max_ns, "
            "MAX(w.p9999_ns) AS p9999_ns, COUNT(*) AS windows, COUNT(w.p9999_ns) AS p9999_windows, "
            "SUM(w.samples) AS samples, MAX(w.threshold_ns) AS threshold_ns "
            f"FROM windows w JOIN hosts h ON h.id = w.host_id WHERE {where} "
            "GROUP BY 1, 2, 3 ORDER BY 3, 1, 2",  # by position: PostgreSQL would not match a repeated parameter
            (t0, step_s, *params),
        )
        for r in rows:
            r["start_unix_s"], r["step_s"] = t0 + int(r.pop("bucket")) * step_s, step_s
        return rows

    def window_span(self, host: str | None = None, since_unix_s: float | None = None) -> tuple[float, float] | None:
        """The first window's start and the last window's end within the filters (from window_days); None when
        there is none."""
        days = self.window_days(host, since_unix_s)
        if not days:
            return None
        return max(min(d["first_unix_s"] for d in days), since_unix_s or 0), max(d["end_unix_s"] for d in days)

    def window_kernels(self, host: str | None = None, since_unix_s: float | None = None) -> list[dict]:
        """The kernels (release and preemption model) the monitor windows ran on, each with its first window's
        start, its last window's end and its windows, in order of the first (from window_days)."""
        out: dict[tuple, dict] = {}
        for d in self.window_days(host, since_unix_s):
            k = out.setdefault(
                (d["host"], d["kernel"], d["preempt"]),
                {"host": d["host"], "kernel": d["kernel"], "preempt": d["preempt"], "first_unix_s": d["first_unix_s"],
                 "last_unix_s": d["end_unix_s"], "windows": 0},
            )  # fmt: skip
            k["first_unix_s"] = min(k["first_unix_s"], d["first_unix_s"])
            k["last_unix_s"] = max(k["last_unix_s"], d["end_unix_s"])
            k["windows"] += d["windows"]
        return sorted(out.values(), key=lambda k: k["first_unix_s"])

    def has_table(self, name: str) -> bool:
        """Whether the store holds a table of this name (one another rtqual's migration added: spikes)."""
        if self.engine == "sqlite":
            sql = "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?"
        else:
            sql = (
                "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_name = ?"
            )
        return bool(self._rows(sql, (name,))[0]["n"])

    def spikes(
        self, host: str | None = None, since_unix_s: float | None = None, limit: int | None = None
    ) -> list[dict]:
        """Captured spikes (host name included, evidence as JSON text), oldest first, filtered by host and time; with
        `limit`, only the largest `limit` of them. [] for a store without the table (written before captures and
        opened read-only: not migrated)."""
        if not self.has_table("spikes"):
            return []
        where, params = self._filters(host, since_unix_s, "s.time_unix_s")
        cols = ", ".join(f"s.{k}" for k in SPIKE_KEYS)
        order = f"s.latency_ns DESC LIMIT {int(limit)}" if limit else "s.time_unix_s, s.id"
        rows = self._rows(
            f"SELECT h.name AS host, {cols} FROM spikes s JOIN hosts h ON h.id = s.host_id WHERE {where} "
            f"ORDER BY {order}",
            params,
        )
        return sorted(rows, key=lambda r: r["time_unix_s"]) if limit else rows

    def count(self, table: str) -> int:
        """Rows in one of the store's tables (tests, the benchmark)."""
        if table not in ("hosts", "runs", "cases", "windows", "window_days", "baselines", "spikes"):
            raise StoreError(f"no table {table!r}")
        return int(self._rows(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


def dumps(rows: list[dict]) -> str:
    """Rows as JSON (for --json printers)."""
    return json.dumps(rows, indent=1)


from rtqual.publish.store.sink import WindowSink  # noqa: E402 - the sink uses open_store above

__all__ = ["Store", "StoreError", "WindowSink", "open_store", "default_url", "resolve_url", "run_record"]

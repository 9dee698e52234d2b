"""The history store (docs/store.md) against SQLite and a real PostgreSQL server, the SAME tests for both:
migrations from empty, real bundles and a fresh fake-probe run, history filters, baseline and check, two
sinks and a run writing at once, an unreachable store (a run still completes with one warning; the sink
buffers, writes when the store is back, drops the oldest beyond its bound)."""

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import DATA, needs_probe
from pgserver import PgServer, free_port
from rtqual.publish import store as store_mod
from rtqual.publish.store import WindowSink, open_store
from rtqual.publish.store.schema import MIGRATIONS

BUNDLES = DATA / "bundles"
FROZEN = ["ioc", "scenario", "timer-raw"]


class Engine:
    """One store under test: its URL, and how to make it unreachable and back."""

    def __init__(self, kind: str, tmp_path: Path, pg: PgServer | None):
        self.kind, self.pg = kind, pg
        self.blocker = tmp_path / "store"
        self.url = pg.new_database() if pg else str(self.blocker / "history.sqlite")

    def down(self) -> None:
        if self.pg:
            self.pg.stop()
        else:  # the store's folder is a regular file: SQLite cannot open the store
            shutil.rmtree(self.blocker, ignore_errors=True)
            self.blocker.write_text("not a folder\n")

    def up(self) -> None:
        if self.pg:
            self.pg.start()
        else:
            self.blocker.unlink()

    @contextlib.contextmanager
    def made_then_down(self):
        """The store made (its schema in place), then unreachable for the with block, back after it."""
        open_store(self.url).close()
        self.down()
        try:
            yield
        finally:
            self.up()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path):
    pg = request.getfixturevalue("pg_server") if request.param == "postgresql" else None
    e = Engine(request.param, tmp_path, pg)
    try:
        yield e
    finally:
        if pg and not _listening(pg.port):
            pg.start()  # a failed down/up test leaves the shared server running for the next


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def window(host="h1", cpu=0, start=0.0, max_ns=5000, **kw) -> dict:
    w = {
        "host": host, "probe": "timer", "run_as": "timer", "cpu": cpu, "start_unix_s": start, "duration_s": 60.0,
        "samples": 60000, "min_ns": 1000, "mean_ns": 2000.5, "p50_ns": 1900, "p99_ns": 4000, "p9999_ns": 4900,
        "max_ns": max_ns, "over_threshold": 1, "overruns": 0, "threshold_ns": 100000, "kernel": "6.1.0",
        "preempt": "PREEMPT_DYNAMIC (full)",
    }  # fmt: skip
    return {**w, **kw}


def fake_run(rtqual_cmd, tmp_path, name, *more, latency_ns=50_000, **kw):
    """A fresh `rtqual run fake` (no root); its CompletedProcess and bundle path."""
    script = tmp_path / f"{name}.txt"
    script.write_text("".join(f"sample {i % 2} {latency_ns + i} 0\n" for i in range(200)))
    out = rtqual_cmd("run", "fake", "--script", script, "-o", tmp_path / name, "-q", *more, **kw)
    return out, tmp_path / name


def test_migrations_from_empty(engine):
    with open_store(engine.url) as s:
        assert s.version() == len(MIGRATIONS)
        for table in ("hosts", "runs", "cases", "windows", "baselines"):
            assert s.count(table) == 0
    with open_store(engine.url) as s:  # opening again applies nothing twice
        assert s.version() == len(MIGRATIONS)


def test_frozen_bundles_and_history_filters(engine, rtqual_cmd):
    with open_store(engine.url) as s:
        ids = [s.add_run(BUNDLES / b) for b in FROZEN]
        assert s.add_run(BUNDLES / "ioc") == ids[0]  # the same bundle again replaces, never duplicates
        assert s.count("runs") == 3
        rows = s.history()
        assert len(rows) == 5 and {r["host"] for r in rows} == {"vm"}
        assert all(r["kernel"] and r["preempt"] and r["max_ns"] >= r["p99_ns"] for r in rows)
        assert [r["label"] for r in s.history(case="timer idle")] == ["timer idle"]
        assert [r["case_id"] for r in s.history(case="002-ioc")] == ["002-ioc"]
        assert s.history(host="no-such-host") == []
        assert s.history(since_unix_s=time.time() + 60) == []
        # per-CPU rows are kept besides the overall one
        assert s.count("cases") == 5 + sum(len(json.loads((p / "result.json").read_text())["per_cpu"])
                                           for b in FROZEN for p in (BUNDLES / b / "cases").iterdir())  # fmt: skip
    out = rtqual_cmd("history", "--json", "--store", engine.url, "--case", "timer idle")
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)["runs"]
    assert len(runs) == 1 and runs[0]["p99_ns"] == 55519 and runs[0]["verdict"] == "completed"
    text = rtqual_cmd("history", "--store", engine.url, "--host", "vm", "--since", "3650d")
    assert text.returncode == 0 and "timer hackbench" in text.stdout and "6.18.44" in text.stdout
    head = text.stdout.splitlines()[0].split()
    assert "probe" in head and "bundle" in head and "run" not in head  # which probe, which bundle: not "complete"
    assert all(b in text.stdout for b in FROZEN)  # each run named by its bundle's folder
    part = rtqual_cmd("history", "--json", "--store", engine.url, "--case", "idle")  # a part of the label
    labels = [r["label"] for r in json.loads(part.stdout)["runs"]]
    assert "timer idle" in labels and all("idle" in x for x in labels)
    assert json.loads(rtqual_cmd("history", "--json", "--store", engine.url, "--case", "%").stdout)["runs"] == []
    assert "timer idle" not in rtqual_cmd("history", "--store", engine.url, "--since", "1s").stdout
    bad = rtqual_cmd("history", "--store", engine.url, "--since", "yesterday")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


@needs_probe
def test_fresh_run_is_stored(engine, rtqual_cmd, tmp_path):
    out, bundle = fake_run(rtqual_cmd, tmp_path, "fresh", "--store", engine.url, "--require", "max <= 1ms")
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr
    with open_store(engine.url) as s:
        rows = s.history()
        assert len(rows) == 1 and rows[0]["bundle"] == str(bundle.resolve())
        assert rows[0]["count"] == 200 and rows[0]["state"] == "complete" and rows[0]["verdict"] == "pass"
        assert rows[0]["host"] == socket.gethostname()
        cases = s._rows("SELECT cpu, count, requirement FROM cases ORDER BY id")
        assert [(c["cpu"], c["count"]) for c in cases] == [(None, 200), (0, 100), (1, 100)]
        assert "max" in cases[0]["requirement"] and "1ms" in cases[0]["requirement"]


def _regressed_copy(src: Path, dest: Path, factor: float) -> Path:
    """A copy of a bundle whose first case's max is `factor` times larger, with its checksum kept right."""
    shutil.copytree(src, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    case = manifest["cases"][0]["id"]
    f = dest / "cases" / case / "result.json"
    r = json.loads(f.read_text())
    r["stats"]["max_ns"] = int(r["stats"]["max_ns"] * factor)
    f.write_text(json.dumps(r))
    if "checksums" in manifest:
        manifest["checksums"][f"cases/{case}/result.json"] = hashlib.sha256(f.read_bytes()).hexdigest()
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def test_baseline_set_and_check(engine, rtqual_cmd, tmp_path):
    base = BUNDLES / "scenario"
    assert rtqual_cmd("check", base, "--store", engine.url).returncode == 1  # no baseline yet: bad input
    out = rtqual_cmd("baseline", "set", base, "--store", engine.url)
    assert out.returncode == 0, out.stderr
    listed = json.loads(rtqual_cmd("baseline", "list", "--json", "--store", engine.url).stdout)
    assert [b["name"] for b in listed] == ["default"] and listed[0]["bundle"] == str(base.resolve())
    same = rtqual_cmd("check", base, "--store", engine.url)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no statistic regressed" in same.stdout
    worse = _regressed_copy(base, tmp_path / "worse", 1.5)
    bad = rtqual_cmd("check", worse, "--store", engine.url, "--tolerance", "10%")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    regressed = [line for line in bad.stdout.splitlines() if line.startswith("regressed:")]
    assert len(regressed) == 1 and "timer idle: max" in regressed[0]
    assert rtqual_cmd("check", worse, "--store", engine.url, "--tolerance", "60%").returncode == 0
    js = json.loads(rtqual_cmd("check", worse, "--store", engine.url, "--json").stdout)
    assert js["regressed"] == ["timer idle: max"]
    assert rtqual_cmd("check", worse, "--store", engine.url, "--baseline", "nope").returncode == 1
    assert rtqual_cmd("check", worse, "--store", engine.url, "--tolerance", "lots").returncode == 1
    damaged = _regressed_copy(base, tmp_path / "damaged", 1.0)
    (damaged / "cases" / "001-timer-idle" / "result.json").write_text("{}")
    out = rtqual_cmd("check", damaged, "--store", engine.url)
    assert out.returncode == 1 and "Traceback" not in out.stderr


def test_check_imported_bundle(engine, rtqual_cmd, tmp_path):
    """An imported cyclictest bundle is stored on import and checks against itself as a baseline."""
    src = sorted((DATA / "imports" / "cyclictest").glob("*.json"))[0]
    out = rtqual_cmd("import", "cyclictest", src, "-o", tmp_path / "imp", "--store", engine.url)
    assert out.returncode == 0, out.stderr
    with open_store(engine.url) as s:
        assert s.count("runs") == 1 and s.history()[0]["source"] == "cyclictest"
    assert rtqual_cmd("baseline", "set", tmp_path / "imp", "--name", "ct", "--store", engine.url).returncode == 0
    ok = rtqual_cmd("check", tmp_path / "imp", "--baseline", "ct", "--store", engine.url)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_windows_and_hourly_summary(engine, rtqual_cmd):
    t0 = 3600.0 * int(time.time() // 3600) - 3600
    with open_store(engine.url) as s:
        s.add_windows([window(cpu=c, start=t0 + 60 * i, max_ns=1000 + i) for c in (0, 1) for i in range(90)])
        assert s.count("windows") == 180 and len(s.windows(host="h1")) == 180
    js = json.loads(rtqual_cmd("history", "--json", "--store", engine.url).stdout)
    summary = js["windows"]
    assert [(x["cpu"], x["windows"]) for x in summary] == [(0, 60), (1, 60), (0, 30), (1, 30)]
    assert summary[2]["max_ns"] == 1089 and summary[0]["samples"] == 60 * 60000


def _sink_writer(url: str, host: str, n: int) -> None:
    sink = WindowSink(url)
    for i in range(n):
        sink.put(window(host=host, start=float(i)))
    assert sink.close(60) == 0 and sink.dropped == 0


@needs_probe
def test_two_sinks_and_a_run_at_once(engine, rtqual_cmd, tmp_path):
    """Two monitors (WindowSink in two processes) and an `rtqual run` write at once: nothing is lost."""
    n = 2000
    code = "import sys; sys.path.insert(0, sys.argv[1]); from test_store import _sink_writer as w; " + (
        "w(sys.argv[2], sys.argv[3], int(sys.argv[4]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(Path(__file__).parent), engine.url, f"m{i}", str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        )  # fmt: skip
        for i in range(2)
    ]
    out, _ = fake_run(rtqual_cmd, tmp_path, "during", "--store", engine.url)
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr
    with open_store(engine.url) as s:
        assert len(s.windows(host="m0")) == n and len(s.windows(host="m1")) == n
        assert s.count("runs") == 1


def test_sinks_in_threads(engine):
    threads = [threading.Thread(target=_sink_writer, args=(engine.url, f"t{i}", 700)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    with open_store(engine.url) as s:
        assert s.count("windows") == 1400


@needs_probe
def test_store_down_run_completes_with_one_warning(engine, rtqual_cmd, tmp_path):
    with engine.made_then_down():
        out, bundle = fake_run(rtqual_cmd, tmp_path, "down", "--store", engine.url)
        env_out, env_bundle = fake_run(rtqual_cmd, tmp_path, "down-env", env={**os.environ, "RTQUAL_STORE": engine.url})
    for o, b in ((out, bundle), (env_out, env_bundle)):
        assert o.returncode == 0 and o.stdout.strip().splitlines()[-1] == str(b)
        assert o.stderr.count("warning") == 1 and "not stored in the history" in o.stderr, o.stderr
        assert (b / "manifest.json").is_file() and (b / "report.html").is_file()
    add = subprocess.run([sys.executable, "-m", "rtqual", "history", "add", bundle, "--store", engine.url],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert add.returncode == 0, add.stderr
    with open_store(engine.url) as s:
        assert s.count("runs") == 1


def test_sink_buffers_and_writes_when_back(engine):
    with engine.made_then_down():
        sink = WindowSink(engine.url, limit_windows=100)
        for i in range(30):
            sink.put(window(start=float(i)))
        deadline = time.monotonic() + 30
        while sink.warning is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sink.warning and "\n" not in sink.warning and sink.sent == 0
    assert sink.flush(60) == 0
    assert sink.sent == 30 and sink.dropped == 0 and sink.warning is None
    sink.put(window(start=30.0))
    assert sink.close(30) == 0
    with open_store(engine.url) as s:
        assert [w["start_unix_s"] for w in s.windows()] == [float(i) for i in range(31)]


def test_sink_bound_drops_oldest_and_counts(engine):
    with engine.made_then_down():
        sink = WindowSink(engine.url, limit_windows=10)
        for i in range(25):
            sink.put(window(start=float(i)))
        assert sink.dropped == 15 and sink.unsent() == 10
    assert sink.close(60) == 0
    with open_store(engine.url) as s:
        assert [w["start_unix_s"] for w in s.windows()] == [float(i) for i in range(15, 25)]


def test_unreachable_store_is_one_line(tmp_path, rtqual_cmd):
    (tmp_path / "file").write_text("x")
    with pytest.raises(store_mod.StoreError) as e:
        open_store(str(tmp_path / "file" / "h.sqlite"))
    assert "\n" not in str(e.value)
    out = rtqual_cmd("history", "--store", f"postgresql://rtqual@127.0.0.1:{free_port()}/none")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "cannot connect" in out.stderr


def test_default_store_is_not_the_developers(tmp_path):
    """The autouse fixture points every test at a temp store."""
    assert store_mod.resolve_url(None) == os.environ["RTQUAL_STORE"]
    assert str(tmp_path.parent.parent) in os.environ["RTQUAL_STORE"] or "store" in os.environ["RTQUAL_STORE"]


@needs_probe
def test_interrupted_run_is_stored(engine, tmp_path):
    """A run cut by SIGINT is stored too, as interrupted and inconclusive."""
    script = tmp_path / "s.txt"
    script.write_text("sample 0 5000 0\nsample 1 7000 0\nprogress\nsleep 20000\nsample 0 1 0\n")
    cmd = [sys.executable, "-m", "rtqual", "run", "fake", "--script", script, "-o", tmp_path / "b", "-q"]
    proc = subprocess.Popen([*map(str, cmd), "--store", engine.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stream = tmp_path / "b" / "cases" / "001-fake" / "stream.jsonl"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and b'"progress"' not in (stream.read_bytes() if stream.exists() else b""):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 4 and b"warning" not in err, err
    with open_store(engine.url) as s:
        (row,) = s.history()
        assert row["state"] == "interrupted" and row["verdict"] == "inconclusive" and row["count"] == 2


@needs_probe
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the timer probe at SCHED_FIFO)")
def test_scenario_run_is_stored_in_the_default_store(tmp_path, rtqual_cmd):
    """`rtqual run SCENARIO.toml` stores itself in $RTQUAL_STORE (the autouse fixture's temp store)."""
    sc = tmp_path / "sc.toml"
    sc.write_text('[run]\nname = "store-study"\n[defaults.timer]\nduration = "300ms"\ncpus = "0"\n'
                  '[[case]]\nlabel = "quick"\nprobe = "timer"\n')  # fmt: skip
    out = rtqual_cmd("run", sc, "-o", tmp_path / "b", "-q")
    assert out.returncode in (0, 2), out.stderr
    js = json.loads(rtqual_cmd("history", "--json", "--case", "quick").stdout)
    assert [(r["scenario"], r["label"]) for r in js["runs"]] == [("store-study", "quick")]


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["history", "--since", "yesterday"], "--since"),
        (["history", "add", "/nonexistent/bundle"], "no such file"),
        (["history", "add", str(DATA / "imports")], "not an rtqual bundle"),
        (["history", "--store", "postgresql://rtqual@127.0.0.1:1/x"], "cannot connect"),
        (["baseline", "set", "/nonexistent/bundle"], "no such file"),
        (["baseline", "frob"], "frob"),
        (["check", "/nonexistent/bundle"], "no such file"),
        (["check", str(BUNDLES / "ioc"), "--tolerance", "-5%"], "--tolerance"),
        (["check", str(BUNDLES / "ioc"), "--baseline", "nope"], "no baseline named 'nope'"),
    ],
)
def test_store_commands_bad_input_one_line(rtqual_cmd, args, fragment):
    out = rtqual_cmd(*args)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtqual: error:") and fragment in lines[0], out.stderr


def test_a_newer_migration_is_applied_once(engine, monkeypatch):
    """Migrations are applied in order from the store's version: a store at N gets migration N + 1, once."""
    from rtqual.publish.store import schema

    with open_store(engine.url) as s:
        assert s.version() == len(MIGRATIONS)
        s.add_window(window())
    monkeypatch.setattr(schema, "MIGRATIONS", [*MIGRATIONS, "CREATE TABLE notes (id {id}, text TEXT NOT NULL)"])
    monkeypatch.setattr(store_mod, "MIGRATIONS", schema.MIGRATIONS)
    for _ in range(2):
        with open_store(engine.url) as s:
            assert s.version() == len(MIGRATIONS) + 1 and s.count("windows") == 1
            assert s._rows("SELECT COUNT(*) AS n FROM notes")[0]["n"] == 0


def test_sink_refuses_a_window_without_its_keys(tmp_path):
    """A malformed window is the caller's mistake, said at once, and never blocks the buffer behind it."""
    sink = WindowSink(str(tmp_path / "h.sqlite"))
    with pytest.raises(ValueError, match="host"):
        sink.put({k: v for k, v in window().items() if k != "host"})
    sink.put(window())
    assert sink.close(30) == 0 and sink.sent == 1


def test_store_off_stores_nothing(tmp_path, rtqual_cmd, monkeypatch):
    monkeypatch.setenv("RTQUAL_STORE", "off")
    sink = WindowSink(None)
    sink.put(window())
    assert sink.close(5) == 0 and sink.sent == 0 and sink.dropped == 0 and sink.warning is None
    out = rtqual_cmd("history")
    assert out.returncode == 1 and "switched off" in out.stderr


def test_the_same_bundle_stored_at_once_by_four_writers_is_one_run(engine):
    open_store(engine.url).close()
    errors = []

    def add():
        try:
            with open_store(engine.url) as s:
                s.add_run(BUNDLES / "scenario")
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with open_store(engine.url) as s:
        assert s.count("runs") == 1 and len(s.history()) == 2


def spike_row(host="h1", t=0.0, comm="rtqual-stall", **kw) -> dict:
    row = {
        "host": host, "probe": "timer", "cpu": 1, "time_unix_s": t, "latency_ns": 9_000_000, "kind": "task",
        "comm": comm, "pid": 4242, "policy": "fifo", "priority": 90, "cause_cpu": 1,
        "evidence": json.dumps({"culprits": [{"kind": "task", "name": comm, "duration_ns": 8_900_000}]}),
    }  # fmt: skip
    return {**row, **kw}


def test_captured_spikes_are_stored_listed_and_filtered(engine, rtqual_cmd):
    now = time.time()
    sink = WindowSink(engine.url)
    sink.put_spike(spike_row(t=now - 10 * 86400, comm="old"))
    sink.put_spike(spike_row(t=now - 60))
    sink.put_spike(spike_row(host="h2", t=now - 30, comm="irq/36-virtio", kind="task", policy="fifo", priority=50))
    assert sink.close(30) == 0 and sink.spikes_dropped == 0
    with open_store(engine.url) as s:
        assert s.count("spikes") == 3 and [r["comm"] for r in s.spikes(host="h1")] == ["old", "rtqual-stall"]
    js = json.loads(rtqual_cmd("history", "--spikes", "--json", "--since", "1d", "--store", engine.url).stdout)
    assert [(x["host"], x["cause"]["comm"], x["cause"]["priority"]) for x in js["spikes"]] == [
        ("h1", "rtqual-stall", 90),
        ("h2", "irq/36-virtio", 50),
    ]
    assert js["spikes"][0]["evidence"]["culprits"][0]["name"] == "rtqual-stall"
    text = rtqual_cmd("history", "--spikes", "--host", "h2", "--store", engine.url).stdout
    assert "irq/36-virtio pid 4242 fifo 50 cpu 1" in text and "rtqual-stall" not in text


def test_a_schema_2_store_gets_the_spikes_table(engine, monkeypatch):
    """A store written before captures (schema 2) is migrated: its windows kept, the spikes table added."""
    from rtqual.publish.store import schema

    monkeypatch.setattr(store_mod, "MIGRATIONS", schema.MIGRATIONS[:2])
    with open_store(engine.url) as s:
        assert s.version() == 2
    with open_store(engine.url) as s, s.tx() as cur:
        s._exec(cur, "INSERT INTO hosts (name) VALUES ('h1')")
        s._exec(cur, "INSERT INTO windows (host_id, probe, cpu, start_unix_s, duration_s, samples, over_threshold, "
                "overruns) VALUES (1, 'timer', 0, 86400.25, 60, 1000, 0, 0)")  # fmt: skip
    monkeypatch.setattr(store_mod, "MIGRATIONS", schema.MIGRATIONS)
    with open_store(engine.url) as s:
        assert s.version() == len(MIGRATIONS) and s.count("windows") == 1
        s.add_spikes([spike_row()])
        assert s.spikes()[0]["comm"] == "rtqual-stall"


def test_window_histograms_summed_per_day_and_the_long_view(engine):
    """Windows keep their histogram (coarse bins); window_days sums them per host, probe, CPU and UTC day over
    separate transactions; the long view's queries bucket in both engines alike and read the captured spikes."""
    from rtqual.publish.store.longview import gather

    day = 86400.0 * (time.time() // 86400 - 3)
    with open_store(engine.url) as s:
        s.add_windows([window(start=day + 60 * i, hist="30:5 40:2", max_ns=9000 + i) for i in range(3)])
        s.add_windows([window(start=day + 600, hist="40:1 52:1", max_ns=200_000)])  # the same day, later
        s.add_windows([window(start=day + 86400 + 30, hist="31:7", kernel="6.12.0")])  # the next day, new kernel
        days = s.window_days()
        assert [(d["day_unix_s"], d["windows"], d["hist"]) for d in days] == [
            (day, 4, {30: 15, 40: 7, 52: 1}),
            (day + 86400, 1, {31: 7}),
        ]
        assert days[0]["max_ns"] == 200_000 and days[0]["samples"] == 4 * 60000
        series = s.window_series(step_s=3600)
        assert [(r["start_unix_s"], r["windows"], r["max_ns"]) for r in series] == [
            (day, 4, 200_000),
            (day + 86400, 1, 5000),
        ]
        assert [k["kernel"] for k in s.window_kernels()] == ["6.1.0", "6.12.0"]
        assert s.spikes() == [] and s.has_table("spikes")
        s.add_spikes([spike_row(t=day + 600, comm="inject")])  # a captured spike: the long view reads it
        data = gather(s, "h1", None, [])
    assert [(x["comm"], x["host"]) for x in data["spikes"]] == [("inject", "h1")]
    assert [(c["what"], c["to"]) for c in data["changes"]] == [("kernel", "6.12.0 PREEMPT_DYNAMIC (full)")]


def test_migration_4_counts_older_windows_in_their_days(tmp_path):
    """Windows stored before migration 4 are counted in their day, without a histogram."""
    import sqlite3

    from rtqual.publish.store.schema import SCHEMA_VERSION_TABLE, statements

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(SCHEMA_VERSION_TABLE)
    for n, m in enumerate(MIGRATIONS[:2], 1):
        for st in statements(m, "sqlite"):
            conn.execute(st)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (n,))
    conn.execute("INSERT INTO hosts (name) VALUES ('old')")
    conn.execute(
        "INSERT INTO windows (host_id, probe, cpu, start_unix_s, duration_s, samples, max_ns, over_threshold, "
        "overruns) VALUES (1, 'timer', 0, 86400.25, 60, 1000, 7000, 0, 0)"
    )
    conn.commit()
    conn.close()
    with open_store(str(path)) as s:
        assert [(d["day_unix_s"], d["windows"], d["max_ns"], d["hist"]) for d in s.window_days()] == [
            (86400, 1, 7000, {})
        ]

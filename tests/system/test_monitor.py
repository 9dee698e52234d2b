"""rtqual monitor with real parts: the timer probe, a real Prometheus scraping it every second (its HTTP API
agrees with rtqual's own windows), node_exporter serving the textfile, the systemd unit's own command line."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitoring import (
    DEPLOY,
    NODE_EXPORTER,
    PROMETHEUS,
    MonitorProc,
    Prometheus,
    Server,
    dashboard_queries,
    free_port,
    http_get,
    unit_exec_start,
    wait_http,
)
from rtqual.publish.metrics import BUCKET_ERROR

pytestmark = pytest.mark.slow
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason="Debian prometheus not installed (scripts/setup --test)"
)
UNIT = DEPLOY / "systemd" / "rtqual-monitor.service"
RTQUAL = str(Path(sys.executable).parent / "rtqual")


@pytest.fixture
def prometheus_for(tmp_path):
    """A function starting a real Prometheus that scrapes the given targets; every one is stopped."""
    started = []

    def start(*targets):
        started.append(Prometheus(tmp_path, list(targets)))
        return started[-1]

    yield start
    for p in started:
        p.stop()


@needs_prometheus
def test_prometheus_agrees_with_rtqual_windows(prometheus_for):
    port = free_port()
    prom = prometheus_for(f"127.0.0.1:{port}")
    mon = MonitorProc(["monitor", "--cpus", "0", "--window", "3s", "--json", "--listen", f"127.0.0.1:{port}"])
    try:
        wins = mon.wait_windows(4)
        time.sleep(1.5)  # the last window scraped
        # every query of the Grafana dashboard answers with data from this Prometheus (while the monitor runs;
        # a scrape that misses its 1 s timeout on a busy machine marks the series stale for a second: retried)
        subs = {"$__rate_interval": "10s", "$__interval": "10s", "$instance": ".*", "$probe": ".*"}
        for expr in dashboard_queries(subs):
            deadline = time.monotonic() + 10
            while not prom.query(expr):
                assert time.monotonic() < deadline, f"no data for the dashboard's {expr}"
                time.sleep(0.5)
    finally:
        code, err = mon.stop()
    assert code == 0, err
    # Prometheus's cumulative counts step once per window: the first scrape after window k was published (and
    # before window k+1 was) holds windows 1..k exactly, so the periods compared are the same
    series = [(float(t), float(v)) for t, v in prom.query('rtqual_latency_seconds_count{cpu="0"}[5m]')[0]["values"]]
    first = wins[0]
    at, count = next((t, v) for t, v in series if v > 0)
    assert count == first["samples"]
    q = prom.query('histogram_quantile(0.99, rtqual_latency_seconds_bucket{cpu="0"})', at)
    p99_prom = float(q[0]["value"][1])
    assert abs(p99_prom - first["p99_ns"] / 1e9) <= (BUCKET_ERROR + 0.002) * first["p99_ns"] / 1e9
    at4 = next(t for t, v in series if v == sum(w["samples"] for w in wins[:4]))
    top = prom.query(f'max_over_time(rtqual_latency_window_max_seconds{{cpu="0"}}[{int(at4 - at) + 2}s])', at4)
    assert float(top[0]["value"][1]) == pytest.approx(max(w["max_ns"] for w in wins[:4]) / 1e9, rel=1e-12)


@needs_prometheus
def test_the_systemd_units_command_line_is_scraped(prometheus_for, tmp_path):
    argv = unit_exec_start(UNIT)
    assert argv[:2] == ["/opt/rtqual/.venv/bin/rtqual", "monitor"] and "--listen" in argv
    port = free_port()
    argv[argv.index("--listen") + 1] = f"127.0.0.1:{port}"  # the only change: a free port (and the install path)
    prom = prometheus_for(f"127.0.0.1:{port}")
    env = {**os.environ, "RTQUAL_STORE": str(tmp_path / "history.sqlite")}
    mon = MonitorProc(argv[1:], env=env)
    try:
        deadline = time.monotonic() + 30
        while not prom.query('up{job="rtqual"} == 1') or not prom.query("rtqual_host_info"):
            assert mon.proc.poll() is None, "".join(mon.err_lines)
            assert time.monotonic() < deadline, "Prometheus never scraped the unit's monitor"
            time.sleep(0.5)
        info = prom.query("rtqual_host_info")[0]["metric"]
        assert info["kernel"] == os.uname().release and info["preempt"]
    finally:
        code, err = mon.stop(subprocess.signal.SIGINT)  # the unit's KillSignal
    assert code == 0, err


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    text = UNIT.read_text()
    assert "AmbientCapabilities=CAP_SYS_NICE CAP_IPC_LOCK" in text and "Restart=on-failure" in text
    unit = tmp_path / UNIT.name  # the installed rtqual in place of /opt/rtqual (verify checks the path exists)
    unit.write_text(text.replace("/opt/rtqual/.venv/bin/rtqual", RTQUAL))
    out = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.mark.skipif(
    NODE_EXPORTER is None, reason="Debian prometheus-node-exporter not installed (scripts/setup --test)"
)
def test_node_exporter_serves_the_textfile(tmp_path):
    folder = tmp_path / "textfile"
    folder.mkdir()
    mon = MonitorProc(["monitor", "--cpus", "0", "--window", "1s", "--listen", "off", "--textfile", str(folder)])
    port = free_port()
    node = Server(
        [
            NODE_EXPORTER or "",
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={folder}",
        ],
        tmp_path / "node.log",
    )
    try:
        mon.wait_windows(0)
        deadline = time.monotonic() + 30
        while not (folder / "rtqual.prom").exists():
            assert time.monotonic() < deadline, "no textfile written"
            time.sleep(0.2)
        wait_http(f"http://127.0.0.1:{port}/metrics")
        text = http_get(f"http://127.0.0.1:{port}/metrics")
    finally:
        node.stop()
        code, err = mon.stop(subprocess.signal.SIGTERM)
    assert code == 0, err
    assert 'rtqual_latency_seconds_bucket{cpu="0"' in text and "rtqual_samples_total" in text
    assert "node_textfile_scrape_error 0" in text
    assert [p.name for p in folder.iterdir()] == ["rtqual.prom"]  # no temp file left behind

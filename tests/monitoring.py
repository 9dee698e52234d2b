"""Helpers of the monitor tests: a real Prometheus and node_exporter on loopback (free ports, own temp
folders, always stopped), a monitor process with its window lines read in the background."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_http(url: str, timeout: float = 30) -> None:
    """Poll url until it answers 200 (a server starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            http_get(url, timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Server:
    """A server process, stopped (SIGTERM, then SIGKILL) by stop()."""

    def __init__(self, argv: list[str], log: Path):
        self.log = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Prometheus(Server):
    """A real Prometheus scraping `targets` every second, its data in `folder`; query() through its HTTP API."""

    def __init__(self, folder: Path, targets: list[str]):
        self.port = free_port()
        config = folder / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
            f"  - job_name: rtqual\n    static_configs:\n      - targets: {json.dumps(targets)}\n"
        )
        super().__init__(
            [
                PROMETHEUS or "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
            ],
            folder / "prometheus.log",
        )
        wait_http(f"http://127.0.0.1:{self.port}/-/ready")

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """An instant query's result vector (at a unix time, default now)."""
        params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(params)
        answer = json.loads(http_get(url))
        assert answer["status"] == "success", answer
        return answer["data"]["result"]


class MonitorProc:
    """`rtqual monitor ...` (argv after the program) with its stdout lines collected in a thread."""

    def __init__(self, argv: list[str], env: dict | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rtqual", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self.err_lines: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines), daemon=True),
        ]
        for r in self.readers:
            r.start()

    @staticmethod
    def _read(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def wait_started(self, timeout: float = 60) -> None:
        """Wait until the monitor said its start line (its signal handlers are in place then)."""
        deadline = time.monotonic() + timeout
        while not any(x.startswith("rtqual monitor:") for x in list(self.err_lines)):
            assert self.proc.poll() is None, f"monitor ended: {''.join(self.err_lines)}"
            assert time.monotonic() < deadline, "the monitor did not start"
            time.sleep(0.1)

    def windows(self) -> list[dict]:
        return [json.loads(x) for x in list(self.lines) if x.startswith("{")]

    def wait_windows(self, n: int, timeout: float = 60) -> list[dict]:
        """Wait until n window lines (all CPUs) were printed."""
        deadline = time.monotonic() + timeout
        while len(self.windows()) < n:
            assert self.proc.poll() is None, f"monitor ended: {''.join(self.err_lines)}"
            assert time.monotonic() < deadline, "no windows from the monitor"
            time.sleep(0.1)
        return self.windows()

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        """Signal it and wait; (exit code, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for r in self.readers:
            r.join(timeout=5)
        return code, "".join(self.err_lines)


def unit_exec_start(unit: Path) -> list[str]:
    """The ExecStart command line of a systemd unit file, split as systemd does for plain words."""
    import shlex

    for line in unit.read_text().splitlines():
        if line.startswith("ExecStart="):
            return shlex.split(line.removeprefix("ExecStart="))
    raise AssertionError(f"{unit}: no ExecStart")


def dashboard_queries(substitutions: dict[str, str]) -> list[str]:
    """Every PromQL expression of deploy/grafana/rtqual.json, Grafana's variables replaced."""
    board = json.loads((DEPLOY / "grafana" / "rtqual.json").read_text())
    out = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for var, value in substitutions.items():
                expr = expr.replace(var, value)
            out.append(expr)
    return out

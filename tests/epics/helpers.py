"""Helpers of the EPICS tests: an independent CA client (pyepics in its own process, with the
env it is given: loopback and the IOC's ports, from Ioc.env or rtqual.measure.epics.env.epics_env), and
process checks."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import rtqual_argv

needs_pyepics = pytest.mark.skipif(
    importlib.util.find_spec("epics") is None, reason="pyepics not installed (pip install .[test])"
)


def rtqual(*args, timeout=180, env=None) -> subprocess.CompletedProcess:
    """The installed rtqual CLI, as a user runs it (in ENV when given, else ours)."""
    return subprocess.run(rtqual_argv(*args), capture_output=True, text=True, timeout=timeout, env=env)


def run_args(probe: str, out, *options, baseline="0", degraded=True) -> list:
    """`run PROBE OPTIONS --baseline 0 --allow-degraded -o OUT -q`: the tail of every EPICS run test
    (no timer baseline unless asked; a VM may not give everything asked for)."""
    tail = ["--allow-degraded"] if degraded else []
    return ["run", probe, *options, "--baseline", baseline, *tail, "-o", out, "-q"]


def results(out: Path) -> list[dict]:
    """Every case's result.json of bundle OUT, in case order."""
    return [json.loads(p.read_text()) for p in sorted(out.glob("cases/*/result.json"))]


def case_result(out: Path, case: str = "001-ioc") -> dict:
    """The result.json of one case of bundle OUT."""
    return json.loads((out / "cases" / case / "result.json").read_text())


def run_unknown_pv(probe: str, out: Path) -> subprocess.CompletedProcess:
    """`rtqual run PROBE --put nosuch:pv` where no IOC listens (loopback env, a port nobody serves)."""
    from rtqual.measure.epics import env as epics_env

    args = run_args(probe, out, "--put", "nosuch:pv", "--loops", "5", "--timeout", "1s")
    return rtqual(*args, timeout=60, env=epics_env.epics_env())


def gone(pid: int) -> bool:
    """The process no longer exists (ours are reaped by their stop(), so no zombie answers)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def processes_naming(text: str) -> list[int]:
    """Pids whose command line contains `text` (an IOC prefix: the IOC's db path, the CA clients)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                if text.encode() in open(f"/proc/{d}/cmdline", "rb").read():
                    out.append(int(d))
            except OSError:
                pass
    return out


# A CA client in its own process (loopback env and the IOC's ports from ioc.env): one JSON
# request per line on stdin, one JSON answer per line on stdout.
_CA_CLIENT = """
import json, sys
import epicscorelibs.path.pyepics
import epics
for line in sys.stdin:
    req = json.loads(line)
    try:
        if req["op"] == "get":
            v = epics.caget(req["pv"], timeout=5)
            ans = v.tolist() if hasattr(v, "tolist") else v
        elif req["op"] == "get_many":  # sent together, answered within microseconds of each other
            ans = [v.tolist() if hasattr(v, "tolist") else v for v in epics.caget_many(req["pvs"], timeout=5)]
        else:
            ans = epics.caput(req["pv"], req["value"], wait=True, timeout=5)
    except Exception as e:
        ans = {"error": str(e)}
    print(json.dumps(ans), flush=True)
"""


class CaClient:
    def __init__(self, env):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CA_CLIENT],
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def _ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "CA client died"
        return json.loads(line)

    def get(self, pv):
        return self._ask(op="get", pv=pv)

    def get_many(self, pvs):
        return self._ask(op="get_many", pvs=pvs)

    def put(self, pv, value):
        assert self._ask(op="put", pv=pv, value=value) == 1, f"caput {pv} failed"

    def close(self):
        self.proc.kill()
        self.proc.wait()

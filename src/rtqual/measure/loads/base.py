"""The load lifecycle shared by every driver: prepare, start, poll, stop, collect.

A load is one or more instances of a program that keeps the host busy while a probe
measures. Each instance runs in its own session (so its own process group), pinned and
scheduled as the spec says, with stdout+stderr in a log file. Stopping signals the whole
session, so helpers and grandchildren die with it. Only the runner decides when to call
what; drivers only say which program to run and how.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtqual import loadspec
from rtqual.errors import EXIT_SKIP, RtqError
from rtqual.fields import Field
from rtqual.loadspec import POLICIES, RT_POLICIES
from rtqual.procs import die_with_parent, stat_fields
from rtqual.units import format_cpulist, online_cpus
from rtqual.util import CAP_SYS_NICE, has_capability

_POLL_S = 0.02


@dataclass
class _Instance:
    """One running copy of a load and what happened to it."""

    index: int
    argv: list[str]
    cpus: list[int] | None
    log: str
    proc: subprocess.Popen
    start_ns: int
    end_ns: int | None = None
    stopped_by: str | None = None


class Load:
    """Base of every load driver. Subclasses set type/tool/package/OPTIONS and write argv()."""

    type = ""  # the load type: its key in rtqual.loadspec.TYPES and rtqual.measure.loads.LOADS
    tool: str | None = None  # executable looked up on PATH by prepare()
    package: str | None = None  # Debian package that provides the tool
    OPTIONS: dict[str, Field] = {}  # the type's own options, beside COMMON_OPTIONS: loadspec.TYPES[type].options
    rt_inherent = False  # the tool makes its own SCHED_FIFO threads, whatever our policy
    runs_until_stopped = True  # exiting on its own means the load is dead
    journal: Any = None  # the run's Conditions: a load that changes the host records it there

    def __init__(self, **spec: Any):
        values = loadspec.check({**spec, "type": self.type})  # every check that needs no host
        self.name: str = values["name"] or self.type
        self.cpus: list[int] | None = values["cpus"]
        self.policy: str = values["policy"]
        self.force: bool = values["force"]
        self.priority: int = values["priority"]
        self.instances: int = values["instances"] or self.default_instances()
        self.options = {name: values[name] for name in self.OPTIONS}
        self.exe = ""  # the program's path, set by prepare()
        self._running: list[_Instance] = []
        self._start_ns: int | None = None
        self._stop_ns: int | None = None
        self._dead: str | None = None
        self._stopped = False
        self._leftover: list[int] = []

    @classmethod
    def option_fields(cls) -> dict[str, Field]:
        """Every option of this load, common ones first: {name: Field} (help, validation, docs)."""
        return loadspec.option_fields(cls.type)

    # -- what drivers override -------------------------------------------------------------

    def default_instances(self) -> int:
        return 1

    def instance_cpus(self, index: int) -> list[int] | None:
        """Affinity of one instance (None: leave it as inherited)."""
        return self.cpus

    def find_tool(self) -> str:
        """Absolute path of the program, or RtqError saying which package provides it."""
        path = shutil.which(self.tool) if self.tool else None
        if path is None:
            raise RtqError(f"{self.tool} not found: apt-get install {self.package}")
        return path

    def check(self) -> None:
        """Driver-specific checks against the installed tool (after find_tool)."""

    def argv(self, index: int) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict | None:
        """Environment of the instances (None: ours)."""
        return None

    # -- lifecycle ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Check this host can run the load: tool present, CPUs online, permission, RT safety."""
        online = online_cpus()
        missing = sorted(set(self.cpus or ()) - set(online))
        if missing:
            raise RtqError(f"load '{self.name}': CPU {missing[0]} is not online (online: {format_cpulist(online)})")
        rt = self.policy in RT_POLICIES or self.rt_inherent
        if rt and not _may_use_rt(self.priority or 99):  # an rt_inherent tool picks its own priorities
            what = f"policy {self.policy}" if self.policy in RT_POLICIES else self.tool
            raise RtqError(
                f"load '{self.name}': {what} needs root or CAP_SYS_NICE (or RLIMIT_RTPRIO >= {self.priority or 99})",
                EXIT_SKIP,
            )
        if rt and not self.force:
            covered: set[int] = set()
            for i in range(self.instances):
                covered.update(self.instance_cpus(i) or online)
            if covered >= set(online):
                if self.rt_inherent:
                    raise RtqError(
                        f"load '{self.name}': {self.tool} runs SCHED_FIFO threads on every CPU, "
                        "which can freeze the machine; set force = true"
                    )
                raise RtqError(
                    f"load '{self.name}': RT load on every CPU can freeze the machine; "
                    "leave one CPU free or set force = true"
                )
        self.exe = self.find_tool()
        self.check()

    def start(self, log_dir: Path) -> None:
        """Spawn every instance in its own session, pinned and scheduled; output to log_dir."""
        if not self.exe:
            raise RtqError(f"load '{self.name}': start() before prepare()")
        if self._start_ns is not None:
            raise RtqError(f"load '{self.name}': already started")
        log_dir = Path(log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        self._start_ns = time.time_ns()
        for i in range(self.instances):
            self._spawn(i, log_dir)

    def _spawn(self, i: int, log_dir: Path) -> _Instance:
        """Start instance i (its argv, CPUs, policy) in its own session, dying with rtqual."""
        argv, cpus, log = self.argv(i), self.instance_cpus(i), f"load-{self.name}-{i}.log"
        with open(log_dir / log, "wb") as out:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=self.env(),
                    preexec_fn=_child_setup(cpus, POLICIES[self.policy], self.priority),
                )
            except (OSError, subprocess.SubprocessError) as e:
                raise RtqError(
                    f"load '{self.name}': cannot start {argv[0]} on CPUs "
                    f"{format_cpulist(cpus) if cpus else 'all'} with policy {self.policy} "
                    f"priority {self.priority}: {e}"
                ) from None
        inst = _Instance(i, argv, cpus, log, proc, time.time_ns())
        self._running.append(inst)
        return inst

    def poll(self) -> str | None:
        """None while every instance runs; otherwise why the load stopped doing its job.

        The first reason sticks. "after N s" is measured when poll() notices the exit.
        """
        if self._dead or self._stopped:
            return self._dead
        for inst in self._running:
            rc = inst.proc.poll()
            if rc is None:
                continue
            if inst.end_ns is None:
                inst.end_ns = time.time_ns()
                inst.stopped_by = "exited"
            if rc == 0 and not self.runs_until_stopped:
                continue
            label = self.name if self.instances == 1 else f"{self.name}[{inst.index}]"
            how = f"exited with code {rc}" if rc >= 0 else f"was killed by {_signame(-rc)}"
            self._dead = f"{label} {how} after {(inst.end_ns - inst.start_ns) / 1e9:.1f} s (log: {inst.log})"
            return self._dead
        return None

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGINT each instance's session, wait, then SIGTERM, then SIGKILL. Idempotent.

        Returns once no process of any session is left; raises RtqError if some survived SIGKILL.
        """
        if self._stopped:
            return
        self.poll()
        for sig, wait_s in ((signal.SIGINT, timeout_s), (signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            members = _sessions()
            alive = [inst for inst in self._running if inst.proc.poll() is None or members.get(inst.proc.pid)]
            if not alive:
                break
            for inst in alive:
                _signal_session(inst.proc.pid, sig, members.get(inst.proc.pid, []))
                inst.stopped_by = sig.name
            _wait_gone(alive, wait_s)
        now = time.time_ns()
        for inst in self._running:
            if inst.end_ns is None and inst.proc.poll() is not None:
                inst.end_ns = now
            if inst.stopped_by is None:
                inst.stopped_by = "exited"
        members = _sessions()
        self._leftover = [pid for inst in self._running for pid in members.get(inst.proc.pid, [])]
        self._stop_ns = now
        self._stopped = True
        if self._leftover:
            raise RtqError(f"load '{self.name}': processes {self._leftover} survived SIGKILL")

    def collect(self) -> dict:
        """What ran, where, how it ended: for the case's result."""
        return {
            "name": self.name,
            "type": self.type,
            "options": self.options,
            "policy": self.policy,
            "priority": self.priority,
            "cpus": self.cpus,
            "force": self.force,
            "start_ns": self._start_ns,
            "stop_ns": self._stop_ns,
            "alive_until_stop": self._start_ns is not None and self._dead is None,
            "dead_reason": self._dead,
            "leftover_pids": self._leftover,
            "instances": [
                {
                    "index": inst.index,
                    "argv": inst.argv,
                    "pid": inst.proc.pid,
                    "cpus": inst.cpus,
                    "log": inst.log,
                    "start_ns": inst.start_ns,
                    "end_ns": inst.end_ns,
                    "exit_code": inst.proc.returncode,
                    "stopped_by": inst.stopped_by,
                }
                for inst in self._running
            ],
        }


class LoadSet:
    """The loads of one case: started in order, stopped together, even after a failed start."""

    def __init__(self, loads: list[Load]):
        self.loads = list(loads)
        seen: dict[str, int] = {}
        for load in self.loads:  # log files are named after the load: make names unique
            seen[load.name] = seen.get(load.name, 0) + 1
            if seen[load.name] > 1:
                load.name = f"{load.name}-{seen[load.name]}"
        self._started: list[Load] = []

    def prepare_all(self) -> None:
        for load in self.loads:
            load.prepare()

    def start_all(self, log_dir: Path, journal: Any = None) -> None:
        """Start every load; if one fails, stop those already started and re-raise. journal: the
        run's Conditions, where a load records what it changes on the host before changing it."""
        try:
            for load in self.loads:
                load.journal = journal
                self._started.append(load)  # before start(): a half-started load is stopped too
                load.start(log_dir)
        except BaseException:
            self.stop_all()
            raise

    def poll_all(self) -> str | None:
        """The first reason a started load is dead, or None."""
        for load in self._started:
            reason = load.poll()
            if reason:
                return reason
        return None

    def stop_all(self, timeout_s: float = 5.0) -> None:
        """Stop every started load (last first); idempotent; raises the first failure at the end."""
        errors = []
        for load in reversed(self._started):
            try:
                load.stop(timeout_s)
            except Exception as e:  # keep stopping the others
                errors.append(e)
        if errors:
            raise errors[0]

    def collect_all(self) -> list[dict]:
        return [load.collect() for load in self.loads]


def python_env() -> dict:
    """Our environment with rtqual importable, for loads that run `python -m rtqual.measure.loads...`."""
    root = str(Path(__file__).resolve().parents[3])  # the directory that holds the rtqual package
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _child_setup(cpus: list[int] | None, policy: int, priority: int) -> Callable[[], None]:
    """preexec_fn: runs in the child between fork and exec."""

    def setup() -> None:
        # Signals the runner may block or ignore must reach the load again (ignoring survives exec).
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        die_with_parent(signal.SIGKILL)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        os.sched_setscheduler(0, policy, os.sched_param(priority))

    return setup


def _may_use_rt(priority: int) -> bool:
    """CAP_SYS_NICE (root normally has it) or an RLIMIT_RTPRIO high enough."""
    if has_capability(CAP_SYS_NICE):
        return True
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    return soft == resource.RLIM_INFINITY or soft >= priority


def _sessions() -> dict[int, list[int]]:
    """Live (not zombie) processes by session id, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(entry.name)
        if fields is not None and fields[0] not in (b"Z", b"X"):  # None: gone meanwhile
            out.setdefault(int(fields[3]), []).append(int(entry.name))
    return out


def _signal_session(sid: int, sig: signal.Signals, members: list[int]) -> None:
    """Signal the session's process group and any member that moved to another group."""
    for target, send in [(sid, os.killpg)] + [(pid, os.kill) for pid in members]:
        try:
            send(target, sig)
        except ProcessLookupError:
            pass


def _wait_gone(insts: list[_Instance], wait_s: float) -> None:
    """Reap the leaders and wait until their sessions are empty, at most wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        leaders_done = all(inst.proc.poll() is not None for inst in insts)
        if leaders_done:
            members = _sessions()
            if not any(members.get(inst.proc.pid) for inst in insts):
                return
        if time.monotonic() >= deadline:
            return
        time.sleep(_POLL_S)


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"

"""`rtqual monitor --capture OVER --on-spike ACTION`: what the user asked to happen at each captured spike, as rtla's
threshold actions do. Two kinds, both checked at the door (one line, exit 1, before anything runs):

- `CMD ARGS`: the user's own command line, split as a shell would split words (shlex) but never run through a
  shell, so nothing of a spike (a task's name) can become a command; the spike's JSON on its stdin, its stdout and
  stderr the monitor's stderr; killed with its process group after the bound and counted.
- `signal:PID[:SIG]`: SIG (a name such as USR1 or SIGUSR2, or a number; default SIGUSR1) sent to PID.

Actions run one at a time in a thread of their own, so a slow command never holds the monitor; spikes that come
while QUEUE_MAX wait are counted as skipped.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from rtqual.errors import RtqError
from rtqual.procs import die_with_parent

QUEUE_MAX = 16  # spikes waiting for their action; more are counted as skipped
OUTCOMES = ("ran", "failed", "killed", "skipped")  # exit 0; exit != 0 or not started; past the bound; queue full


@dataclass
class Action:
    """One --on-spike action: a command (argv, timeout_s) or a signal (pid, signum)."""

    text: str
    argv: list[str] = field(default_factory=list)
    timeout_s: float = 10.0
    pid: int = 0
    signum: int = 0


def _signal(text: str) -> int:
    """A signal by name (USR1, SIGUSR1) or number."""
    name = text.upper()
    if name.isdigit() and 0 < int(name) < signal.NSIG:
        return int(name)
    try:
        return int(signal.Signals[name if name.startswith("SIG") else "SIG" + name])
    except KeyError:
        raise RtqError(f"--on-spike signal: {text!r} is not a signal (USR1, SIGUSR2, 10, ...)") from None


def parse_action(text: str, timeout_s: float) -> Action:
    """--on-spike's ACTION checked: signal:PID[:SIG] naming a running process we may signal, or a command line
    whose program is found; anything else one RtqError line."""
    shown = text.encode("unicode_escape").decode("ascii")
    if text.startswith("signal:"):
        pid_text, _, sig_text = text[len("signal:") :].partition(":")
        if not pid_text.isdigit() or int(pid_text) < 1:
            raise RtqError(f"--on-spike {shown}: give signal:PID[:SIG] with PID a process id")
        pid, signum = int(pid_text), _signal(sig_text) if sig_text else int(signal.SIGUSR1)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise RtqError(f"--on-spike {shown}: no process {pid}") from None
        except PermissionError:
            raise RtqError(f"--on-spike {shown}: not permitted to signal process {pid}") from None
        return Action(text, pid=pid, signum=signum)
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise RtqError(f"--on-spike {shown}: {e}") from None
    if not argv:
        raise RtqError("--on-spike: empty command")
    if shutil.which(argv[0]) is None:
        raise RtqError(f"--on-spike {shown}: {argv[0]!r} not found or not executable")
    return Action(text, argv=argv, timeout_s=timeout_s)


class Actions:
    """The action's thread and its counts (OUTCOMES): fire() hands it a spike, never waits; close() ends it."""

    def __init__(self, action: Action):
        self.action = action
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.lock = threading.Lock()
        self.queue: queue.Queue[dict | None] = queue.Queue(QUEUE_MAX)
        self.thread = threading.Thread(target=self._run, name="rtqual-on-spike", daemon=True)
        self.thread.start()

    def fire(self, spike: dict) -> None:
        """Queue the action for one spike (counted as skipped when QUEUE_MAX already wait)."""
        try:
            self.queue.put_nowait(spike)
        except queue.Full:
            self._count("skipped")

    def _count(self, outcome: str) -> None:
        with self.lock:
            self.counts[outcome] += 1

    def _run(self) -> None:
        while (spike := self.queue.get()) is not None:
            self._count(self._act(spike))

    def _act(self, spike: dict) -> str:
        """Run the action once; its outcome."""
        a = self.action
        if a.signum:
            try:
                os.kill(a.pid, a.signum)
            except OSError:
                return "failed"
            return "ran"
        try:
            proc = subprocess.Popen(
                a.argv,
                stdin=subprocess.PIPE,
                stdout=sys.stderr,
                stderr=sys.stderr,
                start_new_session=True,
                preexec_fn=lambda: die_with_parent(signal.SIGKILL),
            )
        except OSError:
            return "failed"
        try:
            proc.communicate(json.dumps(spike).encode() + b"\n", timeout=a.timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            return "killed"
        except OSError:  # it closed its stdin early: it still ran
            proc.wait()
        return "ran" if proc.returncode == 0 else "failed"

    def close(self, timeout_s: float = 0.0) -> dict[str, int]:
        """Let the queued actions run for at most timeout_s more (those left are skipped), end the thread; counts."""
        try:
            self.queue.put(None, timeout=max(timeout_s, 0.01))
        except queue.Full:
            pass
        self.thread.join(timeout=timeout_s + self.action.timeout_s + 1)
        with self.lock:
            return dict(self.counts)

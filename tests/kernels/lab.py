"""The kernel tier's helpers. The tier is collected only inside a scripts/kernel-lab guest ($RTQUAL_LAB_KERNEL
set; tests/conftest.py leaves tests/kernels alone elsewhere), where tests/kernels/run starts it under Debian's
PREEMPT_RT kernel and its standard one: it needs the guest's kernel, root and its writable $RTQUAL_LAB_OUT.
Under TCG every rtqual command costs seconds of Python start-up, so each guest runs few commands: one scenario
holds the timer, --trace, load, noise and timerlat cases, and the tests read its bundle's files."""

import json
import os
import signal
import subprocess
import threading
from functools import cache
from pathlib import Path

from conftest import rtqual_argv
from rtqual.measure.host import trace

KERNEL = os.environ.get("RTQUAL_LAB_KERNEL", "")
RT = KERNEL == "rt"
# Every guest: the timer traced and the noise probe (beside the kernel's osnoise tracer where it has one). The
# standard kernel also runs a load and SCHED_DEADLINE; the RT kernel spends its time on timerlat instead (under
# TCG it is the slower guest: the tier's time budget, docs/kernel-lab.md).
COMMON_CASES = """
[[case]]
label = "timer traced"
probe = "timer"
params = { duration = "2s", threshold = "1ms", cpus = "1", trace = true }

[[case]]
label = "noise"
probe = "noise"
params = { duration = "1s", cpus = "1" }
"""
STD_CASES = """
[[case]]
label = "timer cpu-hog"
probe = "timer"
params = { duration = "1s" }
loads = ["cpu-hog"]

[[case]]
label = "timer deadline"
probe = "timer"
params = { duration = "1s", cpus = "1", policy = "deadline", runtime = "200us", period = "1ms" }
"""
RT_CASES = """
[[case]]
label = "timerlat"
probe = "timerlat"
params = { duration = "3s", threshold = "500us", trace = true }

[[case]]
label = "timer after timerlat"
probe = "timer"
params = { duration = "3s" }
"""


# Past this many seconds (before tests/kernels/run's 20-minute bound kills the guest) the watchdog writes what every
# process of the guest waits on to watchdog.txt beside the bundles, which tests/kernels/run prints on a failure.
WATCHDOG_S = float(os.environ.get("RTQUAL_LAB_WATCHDOG_S", "1080"))


def lab_out() -> Path:
    """This kernel's folder of bundles under the lab's writable folder (the other guest's is beside it)."""
    folder = Path(os.environ["RTQUAL_LAB_OUT"]) / KERNEL.replace(":", "-")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def mount_debugfs() -> None:
    """debugfs mounted (the guest's own: /sys/kernel/debug/sched/preempt says the dynamic preemption mode)."""
    if not Path("/sys/kernel/debug/sched").exists():
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], check=False)


@cache
def scenario() -> tuple[int, str, dict[str, dict]]:
    """The guest's one scenario run (timer cases; on the RT kernel timerlat and the timer right after it): its
    exit code, stderr, and each case's result.json by label."""
    toml = lab_out() / "lab.toml"
    toml.write_text('[run]\nname = "lab"\n' + COMMON_CASES + (RT_CASES if RT else STD_CASES))
    bundle = lab_out() / "timer"
    code, err = run_or_dump(rtqual_argv("run", toml, "-q", "-o", bundle), timeout_s=420)
    results = [json.loads(f.read_text()) for f in sorted(bundle.glob("cases/*/result.json"))]
    return code, err, {r["label"]: r for r in results}


def run_or_dump(argv: list[str], timeout_s: float) -> tuple[int, str]:
    """(exit code, stderr) of a command; past timeout_s, where each of its threads is in the kernel (a thread
    stuck in an uninterruptible call takes no signal), then SIGABRT with Python's faulthandler on (every
    thread's Python stack), then SIGKILL; never waits for a process that cannot die. The result is returned
    (and cached), never raised, so each of the guest's tests fails at once with it."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _, err = p.communicate(timeout=timeout_s)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        pass
    where = _kernel_stacks(p.pid)
    err = ""
    for sig in (signal.SIGABRT, signal.SIGKILL):
        p.send_signal(sig)
        try:
            err = p.communicate(timeout=30)[1] or err
            break
        except subprocess.TimeoutExpired:
            continue
    code = p.poll()
    said = (
        f"{' '.join(map(str, argv))} still running after {timeout_s:g} s"
        + ("" if code is not None else " and not ended by SIGKILL (stuck in the kernel)")
        + f"; its threads in the kernel:\n{where}\nits Python stacks:\n{err}"
    )
    with open(lab_out() / "stuck.txt", "a") as f:  # printed by tests/kernels/run if the guest fails
        f.write(said + "\n\n")
    return -1 if code is None else code, said


def _watchdog() -> None:
    """What every user process of the guest is doing: its threads' states, wait channels and kernel stacks, and the
    kernel's blocked tasks."""
    pids = sorted(int(p.name) for p in Path("/proc").glob("[0-9]*") if (p / "cmdline").exists())
    user = [pid for pid in pids if _cmdline(pid)]  # kernel threads have an empty command line
    text = "\n\n".join(f"pid {pid}: {_cmdline(pid)}\n{_kernel_stacks(pid, sysrq=False)}" for pid in user)
    text += "\n\n" + _kernel_stacks(os.getpid(), sysrq=True)
    (lab_out() / "watchdog.txt").write_text(f"the guest still running after {WATCHDOG_S:g} s\n{text}\n")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


# The tracepoints every traced case, tracer and UIO stage run switches on (rtqual's EVENTS, the UIO stages'
# sched_wakeup; the osnoise and timerlat tracers hook the same ones), held on for the guest's whole life by two
# instances of their own, switched off (tracing_on 0, one page per CPU): with two probes already on a tracepoint,
# one more or one fewer changes neither its static key nor its static call, so the kernel patches no code of
# its own when rtqual starts or stops tracing. That patching (int3 breakpoints, then an IPI to every CPU) is where
# the guest froze under qemu's multi-threaded TCG (docs/kernel-lab.md, "A frozen guest"): the emulator's, not
# rtqual's; a board patches the same way at every trace start.
KEEP_EVENTS = (*trace.EVENTS, "sched/sched_wakeup")


def _keep_tracepoints(tracefs: Path = Path("/sys/kernel/tracing")) -> None:
    if not (tracefs / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(tracefs)], check=False)
    for n in (1, 2):
        inst = tracefs / "instances" / f"lab-keep-tracepoints-{n}"
        inst.mkdir(exist_ok=True)
        (inst / "tracing_on").write_text("0")
        (inst / "buffer_size_kb").write_text("4")
        for event in KEEP_EVENTS:
            for enable in trace._enables(inst / "events", event):
                enable.write_text("1")


if KERNEL:  # only inside a guest; a daemon thread: pytest's exit does not wait for it
    _keep_tracepoints()
    _timer = threading.Timer(WATCHDOG_S, _watchdog)
    _timer.daemon = True
    _timer.start()


def _kernel_stacks(pid: int, sysrq: bool = True) -> str:
    """Each thread of pid: its name, state, wait channel and kernel stack (root reads /proc/PID/task/*/stack)."""
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        fields = {}
        for name in ("comm", "wchan", "stat", "stack"):
            try:
                fields[name] = (task / name).read_text().strip()
            except OSError as e:
                fields[name] = f"({e.strerror})"
        state = fields["stat"].rsplit(")", 1)[-1].split()[:1]
        out.append(f"{task.name} {fields['comm']} state {state} wchan {fields['wchan']}\n{fields['stack']}")
    if not sysrq:
        return "\n".join(out)
    try:  # and every blocked task of the guest (a kernel thread may hold what it waits for), from the kernel log
        Path("/proc/sysrq-trigger").write_text("w")
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout.splitlines()[-120:]
        out.append("the kernel's blocked tasks (sysrq w):\n" + "\n".join(log))
    except (OSError, subprocess.SubprocessError) as e:
        out.append(f"(no sysrq w: {e})")
    return "\n".join(out)

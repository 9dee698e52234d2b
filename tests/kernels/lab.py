"""The kernel tier's helpers. The tier is collected only inside a scripts/kernel-lab guest ($RTQUAL_LAB_KERNEL
set; tests/conftest.py leaves tests/kernels alone elsewhere), where tests/kernels/run starts it under Debian's
PREEMPT_RT kernel and its standard one: it needs the guest's kernel, root and its writable $RTQUAL_LAB_OUT.
Under TCG every rtqual command costs seconds of Python start-up, so each guest runs few commands: one scenario
holds the timer, --trace, load, noise and timerlat cases, and the tests read its bundle's files."""

import json
import os
import signal
import subprocess
from functools import cache
from pathlib import Path

from conftest import rtqual_argv

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
    code, err = _run_or_dump(rtqual_argv("run", toml, "-q", "-o", bundle), timeout_s=300)
    results = [json.loads(f.read_text()) for f in sorted(bundle.glob("cases/*/result.json"))]
    return code, err, {r["label"]: r for r in results}


def _run_or_dump(argv: list[str], timeout_s: float) -> tuple[int, str]:
    """(exit code, stderr) of a command; past timeout_s, SIGABRT with Python's faulthandler on, so the stderr
    ends with every thread's stack: where it hung. The result is returned (and cached), never raised, so each
    of the guest's tests fails at once with it instead of running the scenario again."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) as p:
        try:
            _, err = p.communicate(timeout=timeout_s)
            return p.returncode, err
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGABRT)
            try:
                _, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            return p.returncode, f"rtqual run still running after {timeout_s:g} s; its stacks:\n{err}"

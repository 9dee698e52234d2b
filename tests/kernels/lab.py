"""The kernel tier's helpers. The tier is collected only inside a scripts/kernel-lab guest ($RTQUAL_LAB_KERNEL
set; tests/conftest.py leaves tests/kernels alone elsewhere), where tests/kernels/run starts it under Debian's
PREEMPT_RT kernel and its standard one: it needs the guest's kernel, root and its writable $RTQUAL_LAB_OUT."""

import json
import os
import subprocess
from pathlib import Path

from conftest import rtqual_run

KERNEL = os.environ.get("RTQUAL_LAB_KERNEL", "")
RT = KERNEL == "rt"


def lab_out() -> Path:
    """This kernel's folder of bundles under the lab's writable folder (the other guest's is beside it)."""
    folder = Path(os.environ["RTQUAL_LAB_OUT"]) / KERNEL.replace(":", "-")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def mount_debugfs() -> None:
    """debugfs mounted (the guest's own: /sys/kernel/debug/sched/preempt says the dynamic preemption mode)."""
    if not Path("/sys/kernel/debug/sched").exists():
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], check=False)


def case_results(bundle: Path) -> list[dict]:
    """The cases of a bundle as `rtqual show --json` gives them."""
    p = rtqual_run("show", bundle, "--json", timeout=120)
    assert p.returncode in (0, 2, 4), p.stderr
    return json.loads(p.stdout)["cases"]

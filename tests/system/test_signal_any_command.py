"""Every long-running rtqual command ends within seconds of SIGTERM or SIGINT, whatever it is doing: each is
started, signalled at a random moment of its first seconds (seeded, printed on failure) and must exit (code 4,
interrupted, or 0 for a monitor, which ends at a signal by design) well before its own end, leaving no process
of its group behind."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_probe

pytestmark = needs_probe

ENDS_WITHIN_S = 5.0  # from the signal to the exit; every command's own end lies far beyond


def commands(tmp_path):
    """name -> argv of each long-running command, each set to run for far longer than the test waits."""
    fake = tmp_path / "fake.txt"
    fake.write_text("repeat 1000000\nsample 0 20000\nsleep 5\nprogress\nend\n")
    rt = [sys.executable, "-m", "rtqual"]
    return {
        "run": [*rt, "run", "timer", "--cpus", "1", "--duration", "60s", "-q", "-o", str(tmp_path / "run")],
        "monitor": [*rt, "monitor", "--probe", "fake", "--script", str(fake), "--listen", "off", "--store", "off"],
        "selftest": [*rt, "selftest", "--quick"],
        "advise": [*rt, "advise", "--measure", "--cpus", "1", "--duration", "20s", "-q", "-o", str(tmp_path / "adv")],
    }


@pytest.mark.parametrize("name", ["run", "monitor", "selftest", "advise"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_at_a_random_moment_ends_the_command(tmp_path, name, sig):
    seed = random.randrange(1 << 30)
    at_s = random.Random(seed).uniform(1.0, 4.0)  # past the interpreter's start, into its work
    argv = commands(tmp_path)[name]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(at_s)
        assert p.poll() is None, f"{name} ended by itself before the signal: {p.stderr.read() if p.stderr else ''}"
        sent = time.monotonic()
        p.send_signal(sig)
        code = p.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    why = f"{name} {sig.name} at {at_s:.2f} s (seed {seed}): exit {code} after {took:.2f} s"
    assert took < ENDS_WITHIN_S, why
    err = p.stderr.read() if p.stderr else ""
    assert code in ((0, 4) if name == "monitor" else (4,)) and "Traceback" not in err, why + err
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert left == [], f"{why}: processes of its group left: {left}"

"""scripts/kernel-lab's (and kernel-lab-arm64's) watch over its guest: the guest touches a heartbeat file in the
shared folder every 5 s; when the file is older than FREEZE_S while qemu runs, the guest has frozen. Then where
each vCPU is (its instruction pointer: RIP on x86, PC on aarch64; sampled through qemu's QMP socket and named from
the guest's own kallsyms) is written as one line to the frozen file and the guest's process group is ended, so
kernel-lab says so at once instead of waiting for --timeout. Seen here: both vCPUs looping in the int3 handler at
a tracepoint's site while the kernel patches its code (static keys flipped by enabling trace events) under qemu's
multi-threaded TCG (docs/kernel-lab.md).

    python3 lab-freeze-watch.py QMP_SOCKET HEARTBEAT SYMBOLS FROZEN PGID
"""

import bisect
import json
import os
import signal
import socket
import sys
import time
from collections import Counter

FREEZE_S = float(os.environ.get("RTQUAL_LAB_FREEZE_S", "90"))
SAMPLES = 20


def registers(path: str) -> str:
    """`info registers -a` through QMP's human monitor command."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(path)
        f = s.makefile("rw")
        f.readline()  # the greeting
        for cmd in (
            {"execute": "qmp_capabilities"},
            {"execute": "human-monitor-command", "arguments": {"command-line": "info registers -a"}},
        ):
            f.write(json.dumps(cmd) + "\n")
            f.flush()
            while "return" not in (reply := json.loads(f.readline())) and "error" not in reply:
                pass
        return str(reply.get("return", ""))


def symbols(path: str) -> tuple[list[int], list[str]]:
    pairs = []
    try:
        for line in open(path, encoding="ascii", errors="replace"):
            addr, _, name = line.partition(" ")
            pairs.append((int(addr, 16), name.strip()))
    except (OSError, ValueError):
        return [], []
    pairs.sort()
    return [a for a, _ in pairs], [n for _, n in pairs]


def where(rips: list[int], addrs: list[int], names: list[str]) -> list[str]:
    out = []
    for rip in rips:
        i = bisect.bisect_right(addrs, rip) - 1
        out.append(f"{names[i]}+{rip - addrs[i]:#x}" if i >= 0 and rip - addrs[i] < 1 << 16 else f"{rip:#x}")
    return out


def main() -> None:
    qmp, beat, syms, frozen, pgid = sys.argv[1:6]
    while True:
        time.sleep(5)
        try:
            age = time.time() - os.stat(beat).st_mtime
        except OSError:
            continue  # not booted yet
        if age < FREEZE_S:
            continue
        addrs, names = symbols(syms)
        seen: Counter[str] = Counter()
        try:
            for _ in range(SAMPLES):
                text = registers(qmp)
                rips = [int(w.split("=")[1], 16) for w in text.split() if w.startswith(("RIP=", "PC="))]
                for cpu, name in enumerate(where(rips, addrs, names)):
                    seen[f"cpu{cpu} {name.split('+')[0]}"] += 1
                time.sleep(0.2)
        except (OSError, ValueError) as e:
            seen[f"(qmp: {e})"] += 1
        most = ", ".join(f"{k} {v}/{SAMPLES}" for k, v in seen.most_common(6))
        with open(frozen, "w") as f:
            f.write(f"no heartbeat for {age:.0f} s; the vCPUs were at: {most}\n")
        os.killpg(int(pgid), signal.SIGTERM)
        return


if __name__ == "__main__":
    main()

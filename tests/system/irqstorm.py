"""An IRQ-heavy load for the --trace tests: N timerfds on one CPU armed to expire at the same instant,
every GAP, so that CPU's timer interrupt runs N expiry callbacks in one go (milliseconds in hard-IRQ
context). Bounded: ROUNDS bursts, then exit. Usage: python irqstorm.py CPU N ROUNDS GAP_MS"""

import ctypes
import json
import os
import resource
import sys
import time

CLOCK_MONOTONIC, TFD_TIMER_ABSTIME = 1, 1


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", Timespec), ("it_value", Timespec)]


def main() -> None:
    cpu, n, rounds, gap_ms = (int(x) for x in sys.argv[1:5])
    os.sched_setaffinity(0, {cpu})  # the timers live on the CPU that arms them
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    n = min(n, hard - 100) if hard != resource.RLIM_INFINITY else n
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, hard))
    libc = ctypes.CDLL(None, use_errno=True)
    fds = [libc.timerfd_create(CLOCK_MONOTONIC, 0) for _ in range(n)]
    if min(fds) < 0:
        sys.exit(f"timerfd_create: {os.strerror(ctypes.get_errno())}")
    for _ in range(rounds):
        at = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 100_000_000  # all of them 100 ms from now
        spec = Itimerspec(Timespec(0, 0), Timespec(at // 1_000_000_000, at % 1_000_000_000))
        for fd in fds:
            libc.timerfd_settime(fd, TFD_TIMER_ABSTIME, ctypes.byref(spec), None)
        print(json.dumps({"at_ns": at, "timers": n}), flush=True)
        time.sleep(max(0.0, (at - time.clock_gettime_ns(time.CLOCK_MONOTONIC)) / 1e9) + gap_ms / 1000)


if __name__ == "__main__":
    main()

"""`cat /dev/zero > /dev/null` in Python: the process behind the cpu-hog load.

Usage: python -m rtqual.measure.loads.zero_to_null [BLOCK_SIZE]
"""

import os
import signal
import sys


def copy_zero_to_null(block_size: int) -> None:
    """Copy /dev/zero to /dev/null forever with one read and one write syscall per block."""
    buf = bytearray(block_size)
    view = memoryview(buf)
    null = os.open("/dev/null", os.O_WRONLY)
    with open("/dev/zero", "rb", buffering=0) as zero:
        while True:
            os.write(null, view[: zero.readinto(buf)])


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # die at once, no traceback in the log
    copy_zero_to_null(int(sys.argv[1]) if len(sys.argv) > 1 else 128 * 1024)

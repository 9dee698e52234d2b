"""cpu-hog: the seed paper's `cat /dev/zero > /dev/null`, built in, one process pinned per CPU.

Each instance is `python .../rtqual/measure/loads/zero_to_null.py`: read/write syscalls in a loop like cat
(mostly kernel time), so it needs nothing installed.
"""

import sys
from pathlib import Path

from rtqual.loadspec import TYPES
from rtqual.measure.loads.base import Load, python_env
from rtqual.units import online_cpus


class CpuHog(Load):
    """zero_to_null.py once per CPU, pinned there."""

    type = "cpu-hog"
    OPTIONS = TYPES[type].options

    def default_instances(self) -> int:
        return len(self.cpus or online_cpus())

    def instance_cpus(self, index: int) -> list[int]:
        cpus = self.cpus or online_cpus()
        return [cpus[index % len(cpus)]]

    def find_tool(self) -> str:
        return sys.executable

    def argv(self, index: int) -> list[str]:
        # the file itself, not `-m` (which imports the rtqual package first): it starts in milliseconds, so a
        # stop that comes at once finds it copying, not importing (a SIGINT there wrote a traceback to its log)
        return [self.exe, str(Path(__file__).with_name("zero_to_null.py")), str(self.options["block_size"])]

    def env(self) -> dict:
        return python_env()

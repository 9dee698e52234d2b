"""stress-ng: any stressor with its options, run without timeout until stopped."""

import subprocess

from rtqual.errors import RtqError
from rtqual.loadspec import TYPES
from rtqual.measure.loads.base import Load


class StressNg(Load):
    """stress-ng, its stressor checked against the installed stress-ng's list."""

    type = "stress-ng"
    tool = "stress-ng"
    package = "stress-ng"
    OPTIONS = TYPES[type].options

    def check(self) -> None:
        out = subprocess.run([self.exe, "--stressors"], capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and self.options["stressor"] not in out.stdout.split():
            raise RtqError(
                f"load '{self.name}': stress-ng has no stressor '{self.options['stressor']}' "
                "(see stress-ng --stressors)"
            )

    def argv(self, index: int) -> list[str]:
        o = self.options
        return [self.exe, f"--{o['stressor']}", str(o["workers"]), "--timeout", "0", *o["args"]]

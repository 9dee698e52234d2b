"""stress-ng: any stressor with its options, run without timeout until stopped."""

import re
import subprocess
from typing import Any

from rtqual.errors import RtqError
from rtqual.fields import Field
from rtqual.measure.loads.base import Load


class StressNg(Load):
    """stress-ng --<stressor> <workers> --timeout 0 [args...] (timeout 0 = run until signalled)."""

    type = "stress-ng"
    tool = "stress-ng"
    package = "stress-ng"
    OPTIONS = {
        "stressor": Field("str", "stressor name, as listed by `stress-ng --stressors`", default="cpu"),
        "workers": Field("int", "workers per instance (0: one per online CPU)", lo=0, hi=4096, default=1),
        "args": Field("strlist", "more stress-ng options, e.g. ['--cpu-method', 'matrixprod']", default=[]),
    }

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.options["stressor"]):
            raise RtqError(f"load '{self.name}': '{self.options['stressor']}' is not a stressor name")

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

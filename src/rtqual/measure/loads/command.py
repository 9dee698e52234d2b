"""Any command line as a load, e.g. a site's own load generator."""

import os
import shutil
from typing import Any

from rtqual.errors import RtqError
from rtqual.loadspec import TYPES
from rtqual.measure.loads.base import Load


class Command(Load):
    """The user's program found on PATH; `finite`: a clean exit is not a dead load."""

    type = "command"
    OPTIONS = TYPES[type].options

    def __init__(self, **spec: Any):
        super().__init__(**spec)
        self.runs_until_stopped = not self.options["finite"]

    def find_tool(self) -> str:
        prog = self.options["argv"][0]
        path = shutil.which(prog)
        if path is None:
            where = "is not an executable file" if os.sep in prog else "not found on PATH"
            raise RtqError(f"load '{self.name}': program '{prog}' {where}")
        return path

    def argv(self, index: int) -> list[str]:
        return [self.exe, *self.options["argv"][1:]]

"""Small helpers the importers share: reading an input file and checking values, with one-line errors."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from rtqual.errors import RtqError

MAX_COUNT = 1 << 62  # counts and values beyond this come from no real run (and overflow HdrHistogram's 64 bits)


def read_text(path: Path) -> str:
    """A regular file's text; one line naming the file for anything else (missing, a directory, binary)."""
    if not path.exists():
        raise RtqError(f"{path}: no such file")
    if not path.is_file():
        raise RtqError(f"{path}: not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RtqError(f"{path}: not text (invalid UTF-8 at byte {e.start})") from None
    except OSError as e:
        raise RtqError(f"{path}: unreadable ({e.strerror})") from None


def read_json(path: Path) -> dict:
    """A JSON object from a file; one line naming the file and the position of the first error."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RtqError(f"{path}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise RtqError(f"{path}: not JSON ({str(e).splitlines()[0][:60]})") from None
    except RecursionError:
        raise RtqError(f"{path}: not JSON (nested too deep)") from None
    if not isinstance(data, dict):
        raise RtqError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def uint(text) -> int | None:
    """A plain decimal count of at most 18 ASCII digits, else None (no '²', no 5000-digit numbers)."""
    return int(text) if isinstance(text, str) and re.fullmatch(r"[0-9]{1,18}", text) else None


def count(where: str, value) -> int:
    """A non-negative integer count (JSON numbers only; bools and floats with fractions refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise RtqError(f"{where}: expected a non-negative integer, found {json.dumps(value)[:40]}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise RtqError(f"{where}: expected an integer, found {value}")
    if value >= MAX_COUNT:
        raise RtqError(f"{where}: {json.dumps(value)[:24]} is too large to be a count")
    return int(value)


def number(where: str, value) -> float:
    """A finite, non-negative number (averages)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RtqError(f"{where}: expected a non-negative number, found {json.dumps(value)[:40]}")
    return float(value)


def obj(where: str, value) -> dict:
    """A JSON object, or a one-line error naming where it was expected."""
    if not isinstance(value, dict):
        raise RtqError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def threads(where: str, data: dict, key: str, tool: str) -> dict:
    """The per-thread object under `key` of a tool's JSON, not empty; a one-line error otherwise."""
    if key not in data:
        raise RtqError(f"{where}: not {tool} (no '{key}' key)")
    found = obj(f"{where}: {key}", data[key])
    if not found:
        raise RtqError(f"{where}: no threads")
    return found


def histogram(where: str, value) -> dict[int, int]:
    """{"12": 5, ...} (value in units -> count) as ints."""
    out: dict[int, int] = {}
    for k, v in obj(where, value).items():
        key = uint(k)
        if key is None:
            raise RtqError(f"{where}: bucket '{str(k)[:20]}' is not a non-negative integer")
        out[key] = out.get(key, 0) + count(f"{where}[{k}]", v)
    return out

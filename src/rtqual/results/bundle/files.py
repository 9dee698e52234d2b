"""A bundle is a confined tree: the one place that opens, reads and hashes a bundle's files.

Bundles travel (a site's qualification sent to a review, a colleague's run compared with one's own), so
whatever a bundle names is input from someone else. Every path it names (checksum keys, case ids, file names)
must resolve inside the bundle: no `..`, no absolute path, no symlink leading out. A file is opened only if it
is a regular file (opened non-blocking and without following a last symlink, then checked with fstat), so a
FIFO never blocks and /dev/zero never fills memory. Every JSON read is capped in size (MAX_JSON_BYTES) and in
nesting (MAX_JSON_DEPTH); a line of a JSON Lines file in length (MAX_LINE_BYTES). Anything refused raises
Refused (a ValueError), whose text names why and never the content of what lies outside.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_JSON_BYTES = 64 << 20  # a manifest, plan, result, histogram or host facts file: at most 64 MiB
MAX_JSON_DEPTH = 64  # nesting levels of a JSON document (rtqual writes fewer than 10)
MAX_LINE_BYTES = 1 << 20  # one record of stream.jsonl: longer lines are skipped, never held whole
BLOCK_BYTES = 1 << 20  # hashing and copying read this much at a time (raw.bin may be hundreds of MB)


class Refused(ValueError):
    """A bundle entry that is not read: outside the bundle, not a regular file, too large or too deep.
    `where`: the entry to name (the folder on the path that is a symlink leading out), None for itself."""

    def __init__(self, why: str, where: str | None = None):
        super().__init__(why)
        self.where = where


def shown(rel: Any) -> str:
    """A name from a bundle as one printable line (a name may hold newlines or control characters)."""
    text = rel if isinstance(rel, str) else repr(rel)
    return text if text.isprintable() else json.dumps(text)[1:-1]


def entry(root: Path, rel: Any) -> Path:
    """The real path of the bundle entry `rel` (relative to root), checked to stay inside the bundle."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise Refused("not a file name")
    if rel.startswith("/"):
        raise Refused("an absolute path (not read)")
    if ".." in rel.split("/"):
        raise Refused("climbs out of the bundle (not read)")
    top = Path(root).resolve()
    real = (top / rel).resolve()
    if not real.is_relative_to(top):
        parts = rel.split("/")
        where = next(
            ("/".join(parts[: i + 1]) for i in range(len(parts) - 1) if _leads_out(top, "/".join(parts[: i + 1]))),
            None,
        )
        raise Refused("a symlink leading out of the bundle (not read)", where)
    return real


def _leads_out(top: Path, rel: str) -> bool:
    """True when the bundle folder rel is a symlink whose target lies outside the bundle."""
    p = top / rel
    return p.is_symlink() and not p.resolve().is_relative_to(top)


def open_regular(root: Path, rel: str) -> int:
    """A read-only descriptor of a regular file inside the bundle; Refused for anything else, OSError
    (FileNotFoundError) when it is missing. Opened non-blocking, so a FIFO is refused, never waited on."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(entry(root, rel), flags)
    except OSError as e:
        if e.errno == errno.ELOOP:  # the last part became a symlink after the check
            raise Refused("a symlink (not followed)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused("not a regular file (not read)")
    return fd


def kind(root: Path, rel: str) -> str | None:
    """Why an existing entry is not a plain regular file inside the bundle (symlink, FIFO, device, outside),
    None when it is one; OSError when it does not exist."""
    try:
        real = entry(root, rel)
    except Refused as e:
        return str(e)
    st = os.lstat(Path(root) / rel)
    if stat.S_ISLNK(st.st_mode):
        return "a symlink (not followed)" if real.is_file() else "a symlink to no regular file (not read)"
    return None if stat.S_ISREG(st.st_mode) else "not a regular file (not read)"


def read_bytes(root: Path, rel: str, cap: int = MAX_JSON_BYTES) -> bytes:
    """A whole regular file of the bundle, refused when larger than cap bytes."""
    fd = open_regular(root, rel)
    with os.fdopen(fd, "rb") as f:
        if os.fstat(fd).st_size > cap:
            raise Refused(f"larger than {cap >> 20} MiB (not read)")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise Refused(f"larger than {cap >> 20} MiB (not read)")
    return data


def parse_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON text parsed with a depth limit: Refused (never RecursionError) for nesting deeper than
    max_depth, ValueError for invalid text."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise Refused(f"nested deeper than {max_depth} levels (not read)") from None
    brackets = _STRING.sub(b"", data.encode(errors="surrogatepass") if isinstance(data, str) else data).translate(
        None, _NOT_BRACKETS
    )
    for _ in range(max_depth):  # each pass takes away the innermost level ([] and {}), in C: no walk, no stack
        if not brackets:
            return value
        brackets = _PAIR.sub(b"", brackets)
    if brackets:
        raise Refused(f"nested deeper than {max_depth} levels (not read)")
    return value


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')  # a JSON string (the text parsed: every string is whole)
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def read_json(root: Path, rel: str) -> Any:
    """A JSON file of the bundle, capped in size and depth: Refused, OSError or ValueError otherwise."""
    return parse_json(read_bytes(root, rel))


def json_lines(root: Path, rel: str, marks: tuple[str, ...] = ()) -> Iterator[dict]:
    """The JSON objects of a JSON Lines file, one at a time (a day of records never sits in memory); lines that
    are too long, not JSON or not objects are skipped; with marks, only lines holding one of them are parsed."""
    with os.fdopen(open_regular(root, rel), "rb") as f:
        while line := f.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):  # skip the rest of an overlong line
                    line = f.readline(MAX_LINE_BYTES)
                continue
            text = line.decode(errors="replace")
            if marks and not any(m in text for m in marks):
                continue
            try:
                rec = parse_json(text)
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield rec


def digest(root: Path, rel: str) -> str:
    """The sha256 hex digest of a regular file of the bundle: the one hashing function (a test counts it)."""
    h = hashlib.sha256()
    with os.fdopen(open_regular(root, rel), "rb") as f:
        while block := f.read(BLOCK_BYTES):
            h.update(block)
    return h.hexdigest()


def signature(root: Path, rel: str) -> tuple[int, ...] | None:
    """What changes when a file is rewritten (inode, size, times), to reuse a digest this process made."""
    try:
        st = os.lstat(Path(root) / rel)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def walk(root: Path) -> Iterator[str]:
    """Every entry of the bundle that is not a folder, relative, sorted; symlinks are listed, never followed."""
    out = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder).relative_to(root)
        out += [(here / n).as_posix() for n in names]
        out += [(here / d).as_posix() for d in dirs if os.path.islink(os.path.join(folder, d))]
    yield from sorted(out)

"""The result bundle: one package owns it. names.py lists every file of a bundle, files.py is the only code
that opens, reads or hashes one (a confined tree: nothing outside it, nothing but regular files, capped JSON),
writer.py writes one (Bundle), model.py reads one lazily and verifies it once (Model, load), verify.py holds
the checks. `from rtqual.results import bundle` then bundle.load / bundle.verify / bundle.Bundle."""

from __future__ import annotations

from pathlib import Path

from rtqual.results.bundle import files, names
from rtqual.results.bundle.model import Model, Unreadable, load, verify
from rtqual.results.bundle.names import UNSEALED
from rtqual.results.bundle.verify import (
    CHECKSUMS,
    READABLE_SCHEMAS,
    RESULT_KEYS,
    VERDICTS,
    read_manifest,
    result_problem,
)
from rtqual.results.bundle.writer import Bundle, default_path, refuse_inputs, write_json, write_own, write_text


def sha256_file(path: str | Path) -> str:
    """The sha256 of one regular file (files.digest, the one hashing function), for tests that seal bundles."""
    p = Path(path)
    return files.digest(p.parent, p.name)


__all__ = [
    "CHECKSUMS",
    "READABLE_SCHEMAS",
    "RESULT_KEYS",
    "UNSEALED",
    "VERDICTS",
    "Bundle",
    "Model",
    "Unreadable",
    "default_path",
    "files",
    "load",
    "names",
    "read_manifest",
    "refuse_inputs",
    "result_problem",
    "sha256_file",
    "verify",
    "write_json",
    "write_own",
    "write_text",
]

"""One result model per command (issue 20 item 2): during `rtqual run` and during `rtqual show`, every file of the
bundle is hashed at most once (the writer hashes a file as it writes it; the model reuses that digest while the
file is unchanged and verifies everything else once)."""

import collections
import json
from pathlib import Path

import pytest

from conftest import needs_probe
from rtqual import cli
from rtqual.results.bundle import files


@pytest.fixture
def hashed(monkeypatch):
    """Counts of files.digest (the one hashing function) per file, by resolved path."""
    counts: collections.Counter = collections.Counter()
    digest = files.digest

    def counting(root, rel):
        counts[str((Path(root) / rel).resolve())] += 1
        return digest(root, rel)

    monkeypatch.setattr(files, "digest", counting)
    return counts


@needs_probe
def test_run_and_show_hash_each_file_at_most_once(tmp_path, capsys, hashed):
    script = tmp_path / "s.txt"
    script.write_text("sample 0 5000 0\nsample 1 7000 0\n")
    b = tmp_path / "b"
    assert cli.main(["run", "fake", "--script", str(script), "-o", str(b), "-q"]) == 0
    sealed = {str((b / rel).resolve()) for rel in json.loads((b / "manifest.json").read_text())["checksums"]}
    assert len(sealed) >= 10 and "report.html" in {Path(f).name for f in sealed}
    # each written file hashed once; a case's result.json twice: written as measured, then again judged (a failed
    # analysis never loses the measurement, docs/requirements.md)
    once = {f: n for f, n in hashed.items() if Path(f).name != "result.json"}
    assert set(hashed) == sealed and max(once.values()) == 1 and max(hashed.values()) <= 2, hashed
    hashed.clear()
    assert cli.main(["show", str(b)]) == 0
    assert set(hashed) == sealed and max(hashed.values()) == 1, hashed  # each verified once
    hashed.clear()
    assert cli.main(["report", str(b)]) == 0  # its own report.html: verified once, the new one hashed once
    assert max(hashed.values()) <= 2 and sum(hashed.values()) == len(sealed) + 1, hashed
    capsys.readouterr()

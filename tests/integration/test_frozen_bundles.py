"""Frozen bundles: written by rtqual 0.1.0 (tests/data/bundles: a timer run with --raw, an `ioc` run
with its timer baseline, a scenario with a load and conditions) and read by every later version.
`show`, `show --json`, `compare` and `export raw` must give what 0.1.0 gave (expected/): the text to
the letter; the JSON may gain keys, never lose or change one."""

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles"
EXPECTED = DATA / "expected"
BUNDLES = ("timer-raw", "ioc", "scenario")

TEXT = (
    [(f"{b}.show.txt", ("show", b)) for b in BUNDLES]
    + [(f"{b}.compare.txt", ("compare", b, b)) for b in BUNDLES]
    + [
        ("scenario.show-kek.txt", ("show", "scenario", "--table", "kek")),
        ("ioc.show-aps.txt", ("show", "ioc", "--table", "aps")),
        ("timer-raw.export.csv", ("export", "raw", "timer-raw")),
    ]
)
JSON = [(f"{b}.show.json", ("show", b, "--json")) for b in BUNDLES] + [
    (f"{b}.compare.json", ("compare", b, b, "--json")) for b in BUNDLES
]


def contains(new, old, where="$") -> list[str]:
    """Where `new` differs from `old`, ignoring keys that only `new` has."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where}: not an object"]
        return [
            d
            for k, v in old.items()
            for d in (contains(new[k], v, f"{where}.{k}") if k in new else [f"{where}.{k}: missing"])
        ]
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{where}: list differs in length"]
        return [d for i, (n, o) in enumerate(zip(new, old)) for d in contains(n, o, f"{where}[{i}]")]
    return [] if new == old else [f"{where}: {new!r} != {old!r}"]


@pytest.mark.parametrize("expected,args", TEXT, ids=[t[0] for t in TEXT])
def test_text_reads_back_the_same(rtqual_cmd, expected, args):
    out = rtqual_cmd(*args, cwd=DATA)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (EXPECTED / expected).read_text()


@pytest.mark.parametrize("expected,args", JSON, ids=[j[0] for j in JSON])
def test_json_reads_back_the_same(rtqual_cmd, expected, args):
    out = rtqual_cmd(*args, cwd=DATA)
    assert out.returncode == 0, out.stderr
    assert contains(json.loads(out.stdout), json.loads((EXPECTED / expected).read_text())) == []


def test_contains_sees_a_changed_or_missing_key():
    assert contains({"a": 1, "b": [1, 2], "new": 0}, {"a": 1, "b": [1, 2]}) == []
    assert contains({"a": 2, "b": [1]}, {"a": 1, "b": [1, 2], "c": 0}) == [
        "$.a: 2 != 1",
        "$.b: list differs in length",
        "$.c: missing",
    ]

"""Property-based fuzzing of bundle fields (issue 34 item 6): hypothesis sets a field every reader reads (host
facts, tuning, plan, an IOC case's result and ioc.json, hist.json, the stream's progress records) to a value of
the wrong type or size, re-seals the bundle, and runs readers in-process, each call bounded by an alarm: never a
traceback, never a hang, exit 0 or 1 with rtqual's own lines on stderr, a canary outside never printed. Bounded
(max_examples, a fixed seed: derandomize) to stay under a minute."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hostile_fields as hf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIELDS = sorted({(rel, dotted) for rows in hf.CLASSES.values() for rel, dotted, _ in rows})
READERS = ["show", "show-json", "report", "compare", "table", "fleet", "advise", "advise-emit", "tail", "verify"]
CANARY = "CANARY-34-fuzz"
SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["1-50000000", "0-99999999999", "0-1\n[script]", f"../../{CANARY}", "1; touch p", "\x1b[2J"])
)
VALUE = st.recursive(
    SCALAR,
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=10,
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(field=st.sampled_from(FIELDS), value=VALUE, readers=st.lists(st.sampled_from(READERS), min_size=2, max_size=3))
def test_any_field_of_any_type_is_read_soundly(field, value, readers):
    rel, dotted = field
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "canary.txt").write_text(CANARY)
        good = hf.good_copy("timer-raw", root / "good")
        b = hf.hostile_copy(rel, dotted, value, root / "b")
        (root / "out").mkdir()
        argvs = hf.commands(b, good, root / "out")
        for name in readers:
            code, out, err = hf.call(argvs[name])
            assert code != "hang" and hf.sound(code, err), (name, rel, dotted, value, code, err)
            assert CANARY not in out and CANARY not in err

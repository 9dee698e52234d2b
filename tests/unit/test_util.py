"""The shared helpers: kernel CPU lists, kernel files, atomic writes, CapEff."""

import os

import pytest

from rtqual.units import parse_kernel_cpulist
from rtqual.util import CAP_SYS_NICE, cap_eff_hex, has_capability, read_text, rss_kb, write_text_atomic


@pytest.mark.parametrize(
    "text,cpus",
    [("0-3,8", [0, 1, 2, 3, 8]), ("", []), ("\n", []), ("2\n0-1\n", [0, 1, 2]), (None, None), ("x", None)],
)
def test_kernel_cpulist(text, cpus):
    assert parse_kernel_cpulist(text) == cpus


def test_read_text_says_why(tmp_path):
    (tmp_path / "f").write_text(" 42\n\x00")
    assert read_text(tmp_path / "f") == ("42", "")
    text, reason = read_text(tmp_path / "missing")
    assert text is None and reason.endswith("missing: not found")


def test_write_text_atomic_leaves_no_temporary(tmp_path):
    path = tmp_path / "a.json"
    write_text_atomic(path, "old\n")
    write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_cap_eff(tmp_path):
    status = tmp_path / "status"
    status.write_text(f"Name:\tx\nCapEff:\t{1 << CAP_SYS_NICE:016x}\n")
    assert cap_eff_hex(status.read_text()) == f"{1 << CAP_SYS_NICE:016x}"
    assert cap_eff_hex("Name:\tx\n") is None
    assert has_capability(CAP_SYS_NICE, status)
    assert not has_capability(CAP_SYS_NICE - 1, status)
    assert not has_capability(CAP_SYS_NICE, tmp_path / "missing")


def test_progress_line_time_left_reads_like_the_plan():
    from rtqual.measure.run.terminal import case_line
    from rtqual.units import format_hms

    cases = [
        {"id": "001-a", "label": "a", "estimate_ns": 3905 * 10**9},
        {"id": "002-b", "label": "b", "estimate_ns": 0},
    ]
    assert case_line(cases[0], cases) == "[1/2] running 001-a: a (about 1h05m05s left in the run)"
    assert format_hms(180000 * 10**9) == "2d02h"


def test_field_kinds_of_loads():
    from rtqual.errors import RtqError
    from rtqual.fields import Field, check

    assert check(Field("strlist", ""), ["a", "b"], "x") == ["a", "b"]
    assert check(Field("argv", ""), "sleep 'a b'", "x") == ["sleep", "a b"]
    assert check(Field("argv", ""), ["true"], "x") == ["true"]
    for kind, value, message in [
        ("strlist", "a", "x: expected an array of strings, got a string"),
        ("argv", [], "x: expected a non-empty command line"),
        ("argv", "a 'b", "x: cannot be split like a shell line"),
    ]:
        with pytest.raises(RtqError, match=message):
            check(Field(kind, ""), value, "x")


def test_rss_kb_of_a_live_and_a_gone_process():
    assert rss_kb(os.getpid()) > 1000 and rss_kb(2**22 + 1) is None


def test_an_atomic_write_never_goes_through_a_planted_symlink(tmp_path):
    from rtqual.util import write_text_atomic

    victim = tmp_path / "victim"
    victim.write_text("mine")
    (tmp_path / "out.html").symlink_to(victim)
    (tmp_path / ".out.html.tmp").symlink_to(victim)  # the name the old writer used
    write_text_atomic(tmp_path / "out.html", "new")
    assert victim.read_text() == "mine" and not (tmp_path / "out.html").is_symlink()
    assert (tmp_path / "out.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.html.tmp", "out.html", "victim"]

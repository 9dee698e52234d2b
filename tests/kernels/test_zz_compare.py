"""Last in the RT guest: the KEK-style comparison, `rtqual compare STD RT --report`, over the timer bundles the
standard kernel's guest and this one wrote (tests/kernels/run boots the standard kernel first)."""

import os
from pathlib import Path

import pytest
from lab import KERNEL, lab_out

from conftest import rtqual_run


@pytest.mark.skipif(KERNEL != "rt", reason="the comparison runs in the RT guest, after the standard kernel's")
def test_compare_std_with_rt():
    std = sorted(p / "timer" for p in Path(os.environ["RTQUAL_LAB_OUT"]).glob("std*") if (p / "timer").is_dir())
    if not std:
        pytest.skip("no standard kernel bundle beside this one (run tests/kernels/run, which boots std first)")
    out = lab_out()
    report = out / "std-vs-rt.html"
    p = rtqual_run("compare", std[0], out / "timer", "--report", report, timeout=180)
    assert p.returncode == 0, p.stderr
    assert report.stat().st_size > 0 and "PREEMPT_RT" in report.read_text()

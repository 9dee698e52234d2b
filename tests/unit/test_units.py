import os

import pytest

from rtqual.errors import RtqError
from rtqual.units import (
    SCHED_POLICY_NAMES,
    format_cpulist,
    format_duration,
    format_ns,
    parse_cpulist,
    parse_duration_ns,
)


@pytest.mark.parametrize(
    "text,ns",
    [
        ("500us", 500_000),
        ("1ms", 1_000_000),
        ("10s", 10_000_000_000),
        ("5m", 300_000_000_000),
        ("24h", 86_400_000_000_000),
        ("1.5ms", 1_500_000),
        ("0.25s", 250_000_000),
        ("7ns", 7),
        (".5us", 500),
        ("2d", 172_800_000_000_000),
        (" 3 ms ", 3_000_000),
        ("1.0000001s", 1_000_000_100),
        ("200\u00b5s", 200_000),  # the micro sign a keyboard types
        ("200\u03bcs", 200_000),  # the Greek mu
        ("200 us", 200_000),
    ],
)
def test_duration_units(text, ns):
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize("text", ["", "10", "1.5", "ms", "-1ms", "1 sec", "1e3us", "1ms2", "1,5ms"])
def test_duration_rejects(text):
    with pytest.raises(RtqError, match="not a duration"):
        parse_duration_ns(text)


def test_format_duration_roundtrip():
    for ns in (1, 999, 1_000, 250_000, 1_000_000, 10_000_000_000, 300_000_000_000, 3_600_000_000_000):
        assert parse_duration_ns(format_duration(ns)) == ns


def test_format_ns():
    assert format_ns(812) == "812ns"
    assert format_ns(45_210) == "45.2us"
    assert format_ns(6_010_000) == "6.01ms"
    assert format_ns(None) == "-"


@pytest.mark.parametrize(
    "text,cpus", [("0", [0]), ("0-3,8", [0, 1, 2, 3, 8]), ("0-7:2", [0, 2, 4, 6]), ("3,1,1", [1, 3])]
)
def test_cpulist(text, cpus):
    assert parse_cpulist(text, check_online=False) == cpus


@pytest.mark.parametrize("text", ["", "a", "1-", "3-1", "0-4:0", "1,,2", "-1"])
def test_cpulist_rejects(text):
    with pytest.raises(RtqError, match="--cpus"):
        parse_cpulist(text, check_online=False)


def test_cpulist_offline():
    with pytest.raises(RtqError, match="CPU 4095 is not online"):
        parse_cpulist("0,4095")


def test_format_cpulist():
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert parse_cpulist(format_cpulist([0, 1, 2, 5]), check_online=False) == [0, 1, 2, 5]


@pytest.mark.parametrize("text", ["1-50000000", "1-99999999999", "0-" + "9" * 30, "8192", "0-8192:2"])
def test_a_cpu_list_beyond_the_kernels_cpus_is_refused_at_once(text):
    import time

    from rtqual.units import MAX_CPUS, parse_kernel_cpulist

    t0 = time.process_time()
    with pytest.raises(RtqError, match="beyond the kernel's 8192 CPUs|not a CPU list"):
        parse_cpulist(text, check_online=False)
    assert parse_kernel_cpulist(text) is None and time.process_time() - t0 < 1
    assert parse_cpulist(f"0-{MAX_CPUS - 1}", check_online=False) == list(range(MAX_CPUS))


@pytest.mark.parametrize("text", ["\u0661-\u0662", "0-1" * 40_000, 5, ["0"]])
def test_a_cpu_list_of_other_digits_or_no_text_is_no_cpu_list(text):
    from rtqual.units import parse_kernel_cpulist

    assert parse_kernel_cpulist(text) is None


def test_policy_names_are_the_kernels_numbers():
    """One table names the policies everywhere (stat files, sched_getscheduler, trace windows, IRQ threads)."""
    for name in ("other", "fifo", "rr", "batch", "idle"):
        assert SCHED_POLICY_NAMES[getattr(os, f"SCHED_{name.upper()}")] == name
    assert SCHED_POLICY_NAMES[6] == "deadline"  # SCHED_DEADLINE (linux/sched.h; not in Python's os)
    assert len(set(SCHED_POLICY_NAMES.values())) == len(SCHED_POLICY_NAMES)

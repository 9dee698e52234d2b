"""Short real `pio` probe runs (root): programmed-I/O sweeps over shared memory. Invariants only."""

import pytest

from conftest import needs_probe, needs_root, probe_records, run_case

pytestmark = [needs_probe, needs_root]


def run_probe(*args, timeout=60):
    return probe_records("pio", *args, timeout=timeout)


@pytest.mark.parametrize("op", ["read", "write"])
@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_shm_each_width(width, op):
    out, recs = run_probe("--width", width, "--op", op, "--passes", "30", "--size", "262144", "--warmup", "2")
    assert out.returncode == 0, out.stderr
    header = next(r for r in recs if r["type"] == "header")
    (cpu,) = next(r for r in recs if r["type"] == "summary")["cpus"]
    hist = next(r for r in recs if r["type"] == "hist")
    p = header["params"]
    assert p["width_bits"] == width and p["op"] == op and p["map_kind"] == "shm"
    assert p["accesses_per_pass"] * width // 8 == p["bytes_per_pass"] == 262144
    assert cpu["count"] == cpu["passes"] == 30 == hist["count"] == sum(c for _, c in hist["counts"])
    assert cpu["width_bits"] == width and cpu["bytes"] == 30 * 262144
    assert cpu["throughput_mb_s"] > 0 and cpu["ns_per_access"] > 0
    # throughput and ns/access describe the same transfer
    assert cpu["throughput_mb_s"] == pytest.approx(width / 8 / cpu["ns_per_access"] * 1000, rel=1e-3)
    assert cpu["min_ns"] <= cpu["p50_ns"] <= cpu["p99_ns"] <= cpu["max_ns"]
    assert len(cpu["checksum"]) == 16


def test_pass_samples_match_transfer_time():
    out, recs = run_probe("--width", "32", "--passes", "20", "--sample", "pass", "--size", "65536")
    assert out.returncode == 0, out.stderr
    (cpu,) = next(r for r in recs if r["type"] == "summary")["cpus"]
    hist = next(r for r in recs if r["type"] == "hist")
    assert int(hist["sum_ns"]) == cpu["transfer_ns"]  # each pass time is one sample


def test_duration_bounded():
    out, recs = run_probe("--duration", "300ms", "--size", "65536")
    assert out.returncode == 0, out.stderr
    (cpu,) = next(r for r in recs if r["type"] == "summary")["cpus"]
    assert cpu["count"] > 0 and 0 < cpu["transfer_ns"] <= 400_000_000


@pytest.mark.parametrize("spec, what", [("uio:/dev/uio0", "/dev/uio0"), ("mem:0x1000:4096", "/dev/mem")])
def test_unavailable_maps_skip_with_reason(spec, what):
    import os

    if os.path.exists(what):
        pytest.skip(f"{what} exists here")
    out, recs = run_probe("--map", spec, "--passes", "1")
    assert out.returncode == 3 and not recs
    assert what in out.stderr and "Grant:" in out.stderr and out.stderr.count("\n") == 1


def test_bad_map_is_an_error():
    out, _ = run_probe("--map", "uio:/dev/uio0:x")
    assert out.returncode == 1 and out.stderr.startswith("rtqual-probe: error: --map")


def test_through_pipeline(tmp_path):
    case = run_case(tmp_path / "b", "pio", "--duration", "1s", "--width", "16", "--size", "65536")
    assert case["stats"]["count"] > 0

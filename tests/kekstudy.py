"""Hand-built bundles of the KEK study (scenarios/kek-rpi-2020.toml and kek-rpi-ioc-2020.toml) for the
comparison report's tests: this VM has one kernel, so a "standard" and an "RT" Raspberry Pi bundle are
written here with the bundle writer from the real scenario's plan (ids, labels, params, loads, conditions)
and seeded random samples. The numbers mean nothing; the tests check what the report says of them (which
bundles, what differs, one bar per stress method, frequency, run length), never a value."""

from __future__ import annotations

import json
import random
from pathlib import Path

from rtqual.results.bundle import names
from rtqual.results.bundle.writer import Bundle, write_json, write_text
from rtqual.results.hist import Histogram
from rtqual.scenario import model
from rtqual.scenario.plan import expand, plan_json

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
KERNELS = {  # name -> (release, version, preemption model, frequencies it can set in kHz, latency scale)
    "std": ("5.4.51-v7l+", "#1333 SMP", "PREEMPT_VOLUNTARY", {600000, 750000, 1000000, 1500000}, 1.0),
    "rt": ("4.19.71-rt24-v7l+", "#1 SMP PREEMPT RT", "PREEMPT_RT", {600000, 1500000}, 0.5),
}
STAGES = ("wake", "dispatch", "chain", "return")


def _facts(kernel: str) -> dict:
    release, version, preempt, _, _ = KERNELS[kernel]
    per_cpu = [
        {"cpu": c, "governor": "ondemand", "scaling_min_freq_khz": 600000, "scaling_max_freq_khz": 1500000}
        for c in range(4)
    ]
    return {
        "hostname": "rpi4",
        "kernel": {"release": release, "version": version, "machine": "armv7l"},
        "preempt": {"model": preempt},
        "cpu": {"model": "BCM2711 Cortex-A72", "online_cpus": [0, 1, 2, 3], "per_cpu": per_cpu},
        "virtualization": {"virtualized": False},
    }


def _hist(rng: random.Random, n: int, typical_ns: float, spread: float, spike_ns: float) -> Histogram:
    h = Histogram()
    for _ in range(n):
        h.record(max(1000, int(rng.lognormvariate(0, spread) * typical_ns)))
    h.record(int(spike_ns))
    return h


def _result(case: dict, kernel: str, rng: random.Random, samples: int) -> tuple[dict, dict]:
    """A case's result.json and hist.json: timer latencies, or an IOC's delays with its stages."""
    _, _, _, settable, scale = KERNELS[kernel]
    freq = case["conditions"].get("frequency_khz")
    applied = freq is None or freq in settable
    mhz = (freq if applied and freq else 600000) / 1000
    loaded = bool(case["load_names"])
    ioc = case["probe"] == "iocresp"
    if ioc:
        h = _hist(rng, samples, 350_000 * (1.1 if kernel == "rt" else 1.0), 0.1, 600_000)
    else:
        typical = 15_000 * (600 / mhz) * (1.5 if loaded else 1.0)
        h = _hist(rng, samples, typical, 0.3, typical * (12 if loaded else 4) * scale)
    stats = {**h.stats(), "overruns": 0}
    thr = case["params"].get("threshold_ns", 100_000)
    stats["over_threshold"] = h.count_above(thr)
    stats["over_threshold_pct"] = 100.0 * stats["over_threshold"] / h.count
    changes = []
    if freq is not None:
        changes.append({"condition": "frequency", "after": f"{freq} kHz", "applied": applied})
        if not applied:
            changes[-1]["reason"] = f"{freq} kHz is not among this kernel's frequencies"
    result = {
        "schema_version": 1,
        "id": case["id"],
        "label": case["label"],
        "probe": case["probe"],
        "params": {**case["params"], "threshold_ns": thr},
        "requirements": {},
        "verdict": "pass",
        "reason": "completed",
        "exit_code": 0,
        "stats": stats,
        "per_cpu": {"0": stats},
        "loads": [{"name": n, "type": n} for n in case["load_names"]],
        "conditions": {"changes": changes, "restored": [], "applied": applied},
        "host_samples": {"freq_khz_range": [int(mhz * 1000), int(mhz * 1000)], "temp_max_c": 55.0},
        "warnings": [],
    }
    if ioc:
        result["ioc"] = {"preset": "kek", "mode": "callback", "cpus_allowed": "0-3", "threads": []}
        parts = [_hist(rng, samples, 350_000 * f, 0.1, 500_000 * f) for f in (0.4, 0.1, 0.3, 0.2)]
        result["probe_summary"] = {"stages": {s: {**p.stats(), "over_threshold": 0} for s, p in zip(STAGES, parts)}}
    return result, {"layout": "hdr", "per_cpu": {"0": {"type": "hist", "cpu": 0, **h.to_record()}}}


def kek_bundle(path: Path, kernel: str, scenario: str = "kek-rpi-2020", samples: int = 2000, seed: int = 1) -> Path:
    """A bundle of one KEK scenario on one kernel ("std" or "rt"), every case of the real plan."""
    rng = random.Random(f"{kernel}-{scenario}-{seed}")
    source = SCENARIOS / f"{scenario}.toml"
    doc = model.load(source)
    cases = expand(doc, scale=0.01, cpus=[0, 1, 2, 3])
    b = Bundle(path, ["rtqual", "run", str(source), "--scale", "0.01"], "0.1.0")
    b.manifest["hostname"] = "rpi4"
    write_json(path / names.PLAN, plan_json(cases, doc))
    write_text(path / names.SCENARIO, source.read_text())
    write_json(path / names.FACTS_BEFORE, _facts(kernel))
    for case in cases:
        result, hist = _result(case, kernel, rng, samples)
        folder = b.case_dir(case["id"])
        (folder / names.RESULT).write_text(json.dumps(result, indent=1))
        (folder / names.HIST).write_text(json.dumps(hist))
        b.add_case(result)
    b.finish("complete", "pass")
    b.close()
    return path

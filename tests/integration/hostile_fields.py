"""Hostile bundle *fields* (issue 34 classes 2, 3, 4's inputs): a field of a frozen bundle set to a value of the
wrong type or size, the bundle re-sealed (so `verify` calls its files intact, as anyone who sends a bundle could
do), then every reader run in-process, each call bounded by an alarm. Shared by test_hostile_bundles.py (the
table) and test_fuzz_inputs.py (hypothesis), and by scripts that count the defects before and after a change."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import signal
from pathlib import Path

from conftest import seal

FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"
CASE = "cases/001-timer"
IOC_CASE = "cases/002-ioc"
CALL_S = 20  # one command on one small bundle: well under a second when nothing hangs
IMPORT_S = 180  # the first `tail` of a process imports scipy and statsmodels (seconds on a loaded machine)
_WARM: set[str] = set()

# what `advise` reads beyond the facts (host/tuning-before.json), as a recent run records it: the frozen
# bundles predate the file
TUNING = {
    "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
    "kernel_release": "6.18.0",
    "irqs": {
        "default_affinity": "3",
        "irqbalance": False,
        "irqs": [{"irq": 24, "name": "eth0", "counts": [5, 7], "affinity": "0-1", "effective": "0"}],
    },
    "rt_tasks": [{"pid": 18, "tid": 18, "comm": "migration/0", "rt_priority": 99, "policy": "fifo", "cpus": "0"}],
    "watchdog": {"watchdog": 1, "nmi_watchdog": 0, "soft_watchdog": 1, "cpumask": "0-1"},
    "memory": {"thp": "always", "thp_defrag": "madvise", "ksm_run": 0, "swaps": ["/swap"], "swappiness": 60},
    "workqueue_cpumask": "3",
    "boost": None,
    "no_turbo": None,
    "per_cpu": [{"cpu": 0, "siblings": "0", "pm_qos_resume_latency_us": "0"}],
    "self_limits": {"rtprio": {"soft": 0, "hard": 0}, "memlock_bytes": {"soft": 8388608, "hard": 8388608}},
    "rpi": {"model": "Raspberry Pi 4", "throttled": "0x0", "config_file": "/boot/config.txt", "config": {}},
    "unavailable": [],
}
FINDING = {"id": "smt", "severity": "minor", "evidence": ["x"], "why": "w", "fix": "f", "runtime": True, "check": "c"}
PROGRESS = {
    "type": "progress",
    "cpus": [{"cpu": 0, "count": 10, "min_ns": 9000, "max_ns": 20000, "window_max_ns": 20000}],
}

# (file, dotted field (numbers index lists), value): one per defect class of issue 34 and field shape
F, T, P, R, IOC, H = (
    "host/facts-before.json",
    "host/tuning-before.json",
    "plan.json",
    f"{IOC_CASE}/result.json",
    f"{IOC_CASE}/ioc.json",
    f"{CASE}/hist.json",
)
TYPES = [
    (F, "cpu.online_cpus", "0-1"),
    (F, "cpu.online_cpus", [0, "1\n[script]\nscript=./x.sh"]),
    (F, "cpu.online", 5),
    (F, "cpu.isolated", 5),
    (F, "cpu.nohz_full", ["1"]),
    (F, "cpu.per_cpu", "x"),
    (F, "cpu.per_cpu", [5]),
    (F, "cpu.per_cpu.0.governor", 7),
    (F, "cpu.per_cpu.0.scaling_max_freq_khz", "x"),
    (F, "cpu.smt_active", "yes"),
    (F, "cpu.possible_count", 10**30),
    (F, "cpu", "x"),
    (F, "cpuidle.per_cpu", [{"cpu": "0", "states": "x"}]),
    (F, "cpuidle.per_cpu", [{"cpu": 0, "states": [{"index": "a", "latency_us": "x", "disabled": "no"}]}]),
    (F, "cpuidle", 5),
    (F, "preempt.model", 5),
    (F, "preempt", "x"),
    (F, "cmdline", "x"),
    (F, "cmdline.full", 5),
    (F, "cmdline.rt_options.isolcpus", 7),
    (F, "kernel.release", 5),
    (F, "hostname", ["a"]),
    (F, "sched.rt_runtime_us", "x"),
    (F, "limits.rtprio.soft", "x"),
    (F, "limits", "x"),
    (F, "privileges.capabilities", "CAP_SYS_NICE"),
    (F, "privileges.euid", "0"),
    (F, "devices.available_tracers", "timerlat"),
    (F, "clocksource.available", "tsc"),
    (F, "virtualization.virtualized", "yes"),
    (F, "virtualization.container_files", "x"),
    (F, "memory.mem_total_kb", "x"),
    (F, "load.avg_1m", "x"),
    (F, "uptime_s", "x"),
    (F, "tools", "x"),
    (F, "unavailable", "x"),
    (T, "irqs.irqs", "x"),
    (T, "irqs.irqs", [{"irq": "1; touch p", "affinity": 5, "counts": "x"}]),
    (T, "irqs.default_affinity", 3),
    (T, "rt_tasks", [{"pid": "1; touch p", "comm": 5, "rt_priority": "x", "cpus": 7}]),
    (T, "rt_tasks", "x"),
    (T, "watchdog.cpumask", 5),
    (T, "memory.swaps", "x"),
    (T, "memory", "x"),
    (T, "per_cpu", [{"cpu": "0", "siblings": 5}]),
    (T, "self_limits.rtprio", "x"),
    (T, "rpi", {"config_file": 5, "config": "x", "throttled": 9}),
    (T, "workqueue_cpumask", ["x"]),
    (P, "advise", "x"),
    (P, "advise", {"findings": "x"}),
    (P, "advise", {"findings": [5]}),
    (P, "advise", {"findings": [{"id": 5}]}),
    (P, "advise", {"findings": [{**FINDING, "severity": "nope", "evidence": "x", "runtime": "yes"}]}),
    (P, "cases", "x"),
    (R, "ioc", "x"),
    (R, "ioc.threads", "x"),
    (R, "ioc.threads", [5]),
    (R, "ioc.threads", [{"tid": "x", "comm": 5, "rtprio": "x", "last_cpu": "0"}]),
    (R, "ioc.reader_cpu", "0"),
    (R, "ioc.cpus_allowed", 5),
    (R, "ioc.spec", "x"),
    (R, "ioc.prefix", 5),
    (R, "ioc.pid", "x"),
    (R, "host_samples", "x"),
    (R, "host_samples.temps_c", "x"),
    (R, "cpu_time", "x"),
    (R, "threshold_events", "x"),
    (R, "conditions", "x"),
    (R, "loads", [5]),
    (R, "spikes", "x"),
    (R, "stats.over_threshold_pct", float("nan")),
    (IOC, "threads", "x"),
    (IOC, "threads", [{"tid": 1, "comm": ["x"]}]),
    (IOC, "reader_cpu", "0"),
]
SIZES = [
    (F, "cpu.isolated", "1-50000000"),
    (F, "cpu.isolated", "1-99999999999"),
    (F, "cpu.nohz_full", "0-4000000000"),
    (F, "cpu.online", "0-" + "9" * 30),
    (F, "cpu.online_cpus", list(range(100_000))),
    (T, "irqs.irqs.0.affinity", "1-50000000"),
    (T, "rt_tasks.0.cpus", "0-99999999999"),
    (T, "watchdog.cpumask", "1-50000000"),
    (R, "ioc.cpus_allowed", "0-99999999999"),
    (H, "per_cpu.0.counts", [[1 << 46, 1]]),
    (H, "per_cpu.0.counts", [[0, 1], [1 << 62, 1]]),
    (H, "per_cpu.0.count", "x"),
    (H, "per_cpu.0", "x"),
    (H, "per_cpu", "x"),
]
TAIL = [  # the stream's progress records: what `tail` and the report's figures read
    ("stream", "window_max_ns", float("nan")),
    ("stream", "window_max_ns", float("inf")),
    ("stream", "window_max_ns", "x"),
    ("stream", "window_max_ns", -5),
    ("stream", "count", float("nan")),
    ("stream", "cpu", 1 << 40),
    ("stream", "cpu", "0"),
]
CLASSES = {"types": TYPES, "sizes": SIZES, "tail": TAIL}


def set_field(doc, dotted: str, value):
    """doc with the field at dotted (list indices as numbers) set to value; the missing levels made."""
    *path, last = dotted.split(".")
    d = doc
    for k in path:
        d = d[int(k)] if isinstance(d, list) else d.setdefault(k, {})
    if isinstance(d, list):
        d[int(last)] = value
    else:
        d[last] = value
    return doc


def good_copy(name: str, dst: Path) -> Path:
    """A frozen bundle with host/tuning-before.json and progress records, sealed."""
    b = shutil.copytree(FROZEN / name, dst)
    (b / "host" / "tuning-before.json").write_text(json.dumps(TUNING))
    case = b / (CASE if name != "ioc" else "cases/001-timer-baseline")
    with open(case / "stream.jsonl", "a") as f:
        for _ in range(40):
            f.write(json.dumps(PROGRESS) + "\n")
    return seal(b)


def hostile_copy(rel: str, dotted: str, value, dst: Path) -> Path:
    """A good bundle (the IOC one for an IOC case's files) with one field set, re-sealed."""
    b = good_copy("ioc" if rel.startswith(IOC_CASE) else "timer-raw", dst)
    if rel == "stream":
        row = {**PROGRESS["cpus"][0], dotted: value}
        case = b / ("cases/001-timer" if (b / "cases/001-timer").is_dir() else "cases/001-timer-baseline")
        with open(case / "stream.jsonl", "a") as f:
            f.write(json.dumps({"type": "progress", "cpus": [row]}) + "\n")
    else:
        doc = json.loads((b / rel).read_text()) if (b / rel).exists() else {}
        (b / rel).write_text(json.dumps(set_field(doc, dotted, value)))
    return seal(b)


def commands(b: Path, good: Path, out: Path) -> dict[str, list[str]]:
    """Every command that reads a bundle, as argv."""
    return {
        "show": ["show", str(b)],
        "show-json": ["show", "--json", str(b)],
        "report": ["report", str(b), "-o", str(out / "r.html")],
        "compare": ["compare", str(b), str(good)],
        "table": ["table", "kek", str(b)],
        "fleet": ["fleet", str(b), str(good)],
        "advise": ["advise", "--bundle", str(b)],
        "advise-emit": ["advise", "--bundle", str(b), "--emit", "tuned"],
        "tail": ["tail", str(b)],
        "verify": ["verify", str(b)],
    }


class Hang(Exception):
    """A command that did not end within CALL_S."""


def _alarm(signum, frame):
    raise Hang


def call(argv: list[str]) -> tuple[int | str, str, str]:
    """(exit code, or "traceback: ..." / "hang"; stdout; stderr) of rtqual.cli.main(argv) in this process."""
    from rtqual import cli

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_S if argv[0] != "tail" or _WARM else IMPORT_S)  # an alarm inside an import breaks it
    _WARM.update({"tail"} if argv[0] == "tail" else ())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int | str = cli.main(argv)
    except Hang:
        code = "hang"
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException as e:  # noqa: BLE001 - what the table counts
        code = f"traceback: {type(e).__name__}: {e}"[:300]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def sound(code: int | str, err: str) -> bool:
    """Exit 0 or 1 (2 is `check`'s regression, not read here), every stderr line rtqual's own, no traceback."""
    lines = err.strip().splitlines()
    return code in (0, 1) and "Traceback" not in err and all(x.startswith("rtqual: ") for x in lines)

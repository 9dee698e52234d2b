"""The kernel's own noise figures beside the noise probe's: where the kernel has the osnoise tracer, a noise case
runs it right after rtqual's loop has ended (never at the same time: each would be the other's noise), on the same
CPUs, under the same loads and conditions, at the loop's policy and priority and duty cycle, for the loop's
duration (at most MAX_NS), and keeps its per-period summaries in the case's probe_summary `noise.osnoise`.

Per period and CPU the tracer writes one line (Documentation/trace/osnoise-tracer.rst): after the usual fields
(task-pid, [cpu], flags, timestamp) RUNTIME IN US, NOISE IN US, % OF CPU AVAILABLE, MAX SINGLE NOISE IN US and the
interference counters HW NMI IRQ SIRQ THREAD. Per CPU they add up to noise per second of runtime (the noise probe's
noise_ns_per_s), the largest single noise and the counts by source.

What it changes, each journaled before it is made (the bundle's host/changes.json, so `rtqual restore` undoes a
killed run) and undone at its end: a tracefs instance rtqual-<pid>-<n> (rtqual.measure.host.trace.Tracer.make_instance,
as --trace makes its own), the global osnoise/ knobs (cpus, period_us, runtime_us, stop_tracing_us,
stop_tracing_total_us) and the top-level tracing_thresh (the shortest noise counted: the probe's --gap). The
timerlat probe sets the same osnoise/ knobs through Knobs (without a journal: it is a process of its own).

hwlat is not run: it spins with interrupts off and the kernel runs it only as the top-level instance's tracer,
which is the user's; the note says so."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtqual.measure.host.trace import Tracer, TraceUnavailable
from rtqual.results.stream import Stream
from rtqual.units import SCHED_POLICY_NAMES, format_cpulist

NAME = "osnoise"
PERIOD_US = 50_000  # the noise probe's duty cycle: spin 45 ms, sleep 5 ms (under the kernel's RT throttling)
RUNTIME_US = 45_000
MIN_NS = 5 * PERIOD_US * 1000  # a few periods even after a very short loop (the first one is not counted)
MAX_NS = 10_000_000_000  # the tracer's run is bounded: the loop's duration, at most this
BUFFER_KB = 64  # per CPU: a summary line per period (20 a second) and nothing else
POLL_S = 0.05
COUNTS = ("hw", "nmi", "irq", "sirq", "thread")
THRESH = "tracing_thresh"  # top-level, not in osnoise/
HWLAT_NOTE = (
    "hwlat tracer present, not run (it spins with interrupts off and runs only as the top-level instance's "
    "tracer, which rtqual leaves to the user)"
)
_POLICIES = {"fifo": os.SCHED_FIFO, "rr": os.SCHED_RR}
# '<task>-<pid> [CPU] flags SEC.USEC: RUNTIME NOISE %AVAILABLE MAX_SINGLE HW NMI IRQ SIRQ THREAD'
_PERIOD = re.compile(
    r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+):\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+)"
    r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$"
)


IRQ_OPTION = "OSNOISE_IRQ_DISABLE"  # osnoise/options: the workload runs with interrupts off (rtla's hwnoise mode)
HW = "hwnoise"


def _tracefs_to_read() -> Path | None:
    """A tracefs to read available_tracers from: RTQUAL_TRACEFS, a usual mount, else any tracefs mounted (only
    read, never written: another tool's mount serves to ask what the kernel has); None when none is mounted."""
    forced = os.environ.get("RTQUAL_TRACEFS")
    if forced:
        return Path(forced)
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return None
    points = [f[1] for f in map(str.split, mounts.splitlines()) if len(f) > 2 and f[2] == "tracefs"]
    usual = [p for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing") if p in points]
    return next((Path(p) for p in usual + points if (Path(p) / "available_tracers").exists()), None)


def _config_says(option: str) -> bool | None:
    """Whether the running kernel's build config (/boot/config-RELEASE) sets option; None where unknown."""
    try:
        text = Path(f"/boot/config-{os.uname().release}").read_text()
    except OSError:
        return None
    return f"\n{option}=y" in f"\n{text}"


def hw_unavailable() -> str | None:
    """Why `--hw` cannot run here, in one line (no osnoise tracer in this kernel, or one without the
    OSNOISE_IRQ_DISABLE option: an older one), or None when it can or cannot be known before the run (no tracefs
    mounted and no kernel config: the run says in noise.hwnoise what it found)."""
    root = _tracefs_to_read()
    if root is None:
        has = _config_says("CONFIG_OSNOISE_TRACER")
        return (
            "--hw: this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER): no hwnoise mode here"
            if has is False
            else None
        )
    try:
        tracers = (root / "available_tracers").read_text().split()
        options = (root / "osnoise" / "options").read_text().split() if "osnoise" in tracers else []
    except OSError as e:
        return f"--hw: {root}: {e.strerror}: cannot tell whether this kernel has the hwnoise mode"
    if "osnoise" not in tracers:
        return "--hw: this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER): no hwnoise mode here"
    if not any(o in (IRQ_OPTION, f"NO_{IRQ_OPTION}") for o in options):
        return f"--hw: this kernel's osnoise tracer has no {IRQ_OPTION} option (an older kernel): no hwnoise mode"
    return None


def parse_period(line: str) -> dict | None:
    """One osnoise period summary line as {"cpu", "ts_ns", "runtime_us", "noise_us", "available_pct",
    "max_single_us", "hw", "nmi", "irq", "sirq", "thread"}; None for any other line."""
    m = _PERIOD.search(line)
    if not m:
        return None
    g = m.groups()
    out: dict[str, Any] = {"cpu": int(g[0]), "ts_ns": int(g[1]) * 1_000_000_000 + int(g[2].ljust(9, "0")[:9])}
    out.update(runtime_us=int(g[3]), noise_us=int(g[4]), available_pct=float(g[5]), max_single_us=int(g[6]))
    out.update(zip(COUNTS, map(int, g[7:]), strict=True))
    return out


def per_second(noise_ns: int, runtime_ns: int) -> int | None:
    """Noise per second of runtime, ns (rounded, as the noise probe's noise_ns_per_s); None without runtime."""
    return round(noise_ns * 1e9 / runtime_ns) if runtime_ns > 0 else None


def tally(lines: list[str], cpus: list[int], window: tuple[int, int] | None = None) -> list[dict]:
    """Per CPU of cpus (in order) the sum of its periods (those ending inside window, CLOCK_MONOTONIC ns, if
    given): periods, runtime_ns, noise_ns, noise_ns_per_s, max_single_noise_ns, counts by source."""
    rows = {c: {"cpu": c, "periods": 0, "runtime_ns": 0, "noise_ns": 0, "max_single_noise_ns": 0} for c in cpus}
    counts = {c: dict.fromkeys(COUNTS, 0) for c in cpus}
    for line in lines:
        p = parse_period(line)
        if p is None or p["cpu"] not in rows or (window and not window[0] <= p["ts_ns"] <= window[1]):
            continue
        r = rows[p["cpu"]]
        r["periods"] += 1
        r["runtime_ns"] += p["runtime_us"] * 1000
        r["noise_ns"] += p["noise_us"] * 1000
        r["max_single_noise_ns"] = max(r["max_single_noise_ns"], p["max_single_us"] * 1000)
        for k in COUNTS:
            counts[p["cpu"]][k] += p[k]
    return [
        {**r, "noise_ns_per_s": per_second(r["noise_ns"], r["runtime_ns"]), "counts": counts[c]}
        for c, r in rows.items()
    ]


def ratio(ours: Any, theirs: Any) -> float | None:
    """rtqual's noise per second over the tracer's (3 significant digits); None where either is unknown or
    theirs is 0."""
    ok = all(isinstance(x, int) and not isinstance(x, bool) for x in (ours, theirs))
    return float(f"{ours / theirs:.3g}") if ok and theirs > 0 else None


def figures(rows: list[dict], ours: dict) -> dict:
    """The osnoise object's figures from the per-CPU rows: each row with rtqual's noise per second beside it and
    the ratio, and the totals over all CPUs. ours: the noise probe's summary (cpus[] and noise)."""
    mine = {c.get("cpu"): c.get("noise_ns_per_s") for c in ours.get("cpus") or [] if isinstance(c, dict)}
    runtime, noise = sum(r["runtime_ns"] for r in rows), sum(r["noise_ns"] for r in rows)
    total = per_second(noise, runtime)
    out_rows = [
        {**r, "rtqual_noise_ns_per_s": mine.get(r["cpu"]), "ratio": ratio(mine.get(r["cpu"]), r["noise_ns_per_s"])}
        for r in rows
    ]
    return {
        "cpus": out_rows,
        "periods": sum(r["periods"] for r in rows),
        "noise_ns_per_s": total,
        "max_single_noise_ns": max((r["max_single_noise_ns"] for r in rows), default=0),
        "counts": {k: sum(r["counts"][k] for r in rows) for k in COUNTS},
        "ratio": ratio((ours.get("noise") or {}).get("noise_ns_per_s"), total),
    }


class Knobs:
    """The global osnoise/ knobs (and the top-level tracing_thresh) set for a while: each one's old value kept
    (and journaled, with a journal: anything with note() and save_state()) before it is written; restore()
    writes them back, newest first."""

    def __init__(self, root: Path, journal: Any = None):
        self.root, self.journal = root, journal
        self.saved: list[tuple[str, str, dict]] = []  # (name, old value, journal record)

    def path(self, name: str) -> Path:
        """The file of a knob: osnoise/NAME, or tracing_thresh at the top."""
        return self.root / name if name == THRESH else self.root / "osnoise" / name

    def has(self, name: str) -> bool:
        """Whether this kernel has the knob (stop_tracing_total_us came later than the tracer)."""
        return self.path(name).exists()

    def get(self, name: str) -> str:
        """The knob's value now."""
        return self.path(name).read_text().strip()

    def option(self, word: str, on: bool) -> None:
        """Set one osnoise/options flag (WORD on, NO_WORD off), its old state kept and journaled as the word that
        brings it back (the file lists every option; one word is written at a time)."""
        was = word if word in self.get("options").split() else f"NO_{word}"
        self.set("options", word if on else f"NO_{word}", before=was)

    def set(self, name: str, value: str, before: str | None = None) -> None:
        """Write a knob, its old value (or `before`: what writes it back) kept and journaled first (the first
        time only)."""
        path = self.path(name)
        if name not in {n for n, _, _ in self.saved}:
            before = self.get(name) if before is None else before
            record = {"knob": str(path), "kind": NAME, "condition": NAME, "applied": True, "after": value}
            record["before"] = before if before or name != "cpus" else None  # "" (all CPUs) cannot be written
            if self.journal is not None:
                self.journal.note(record)
            self.saved.append((name, before, record))
        path.write_text(value)

    def restore(self) -> list[str]:
        """Every knob written back (newest first, so period and runtime stay consistent); what failed."""
        problems = []
        for name, value, record in reversed(self.saved):
            if record.get("before") is None:
                continue
            try:
                self.path(name).write_text(value)
                record["restored"] = True
            except OSError as e:
                problems.append(f"could not restore osnoise/{name}={value}: {e.strerror}")
        self.saved = []
        if self.journal is not None:
            self.journal.save_state()
        return problems


def kernel_threads(prefix: str, cpus: list[int]) -> list[dict]:
    """The kernel threads PREFIX/N of the CPUs (the osnoise and timerlat tracers' workers): cpu, pid, policy,
    priority, CPU time (ns, /proc/PID/schedstat)."""
    names = {f"{prefix}/{c}": c for c in cpus}
    out = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            name = comm.read_text().strip()
            if name not in names:
                continue
            pid = int(comm.parent.name)
            policy = SCHED_POLICY_NAMES.get(os.sched_getscheduler(pid), "other")
            prio = os.sched_getparam(pid).sched_priority
            cpu_ns = int((comm.parent / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out.append({"cpu": names[name], "pid": pid, "policy": policy, "priority": prio, "cpu_time_ns": cpu_ns})
    return sorted(out, key=lambda t: t["cpu"])


def set_policy(threads: list[dict], policy: str, priority: int) -> None:
    """The tracer's workers at the loop's RT policy and priority (SCHED_OTHER loops: left as the kernel makes
    them); a worker gone or refused is left as it is (its policy is recorded after)."""
    if policy not in _POLICIES:
        return
    for t in threads:
        try:
            os.sched_setscheduler(t["pid"], _POLICIES[policy], os.sched_param(priority))
        except OSError:
            pass


def measure(
    cpus: list[int],
    duration_ns: int,
    gap_ns: int,
    policy: str,
    priority: int,
    journal: Any,
    stopped: Callable,
    irq_disable: bool = False,
) -> dict:
    """Run the osnoise tracer on cpus for duration_ns (or until stopped() says so) in rtqual's own instance and
    return its per-CPU rows with the run's settings ("note" says why there are none); everything it changed is
    undone before it returns. irq_disable: its hwnoise mode (OSNOISE_IRQ_DISABLE: the workload runs with
    interrupts off, so only hardware and NMI noise remain)."""
    holder = Tracer(cpus, journal=journal, buffer_kb=BUFFER_KB)
    knobs: Knobs | None = None
    threshold_us = max(1, -(-gap_ns // 1000))
    out: dict[str, Any] = {"tracer": NAME, "when": "after rtqual's loop, same CPUs", "duration_ns": duration_ns}
    out.update(period_us=PERIOD_US, runtime_us=RUNTIME_US, threshold_ns=threshold_us * 1000, note=None)
    try:
        path = holder.make_instance(condition=NAME)
        out["instance"] = path.name
        knobs = Knobs(holder.root, journal)  # type: ignore[arg-type]
        knobs.set("cpus", format_cpulist(cpus))
        order = ["period_us", "runtime_us"]  # runtime <= period at every step
        if int(knobs.get("period_us")) > PERIOD_US:
            order.reverse()
        for name in order:
            knobs.set(name, str(PERIOD_US if name == "period_us" else RUNTIME_US))
        for name in ("stop_tracing_us", "stop_tracing_total_us"):
            if knobs.has(name):
                knobs.set(name, "0")
        knobs.set(THRESH, str(threshold_us))
        if irq_disable:
            knobs.option(IRQ_OPTION, True)
            out["mode"] = HW
        try:
            (path / "current_tracer").write_text(NAME)
        except OSError as e:
            raise TraceUnavailable(f"{e.strerror} (another instance may hold an osnoise or timerlat tracer)") from None
        (path / "tracing_on").write_text("1")
        time.sleep(POLL_S)  # the workers exist once the tracer runs; they start at the kernel's policy
        set_policy(kernel_threads(NAME, cpus), policy, priority)
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        end = start + duration_ns
        while not stopped() and (now := time.clock_gettime_ns(time.CLOCK_MONOTONIC)) < end:
            time.sleep(min(POLL_S, (end - now) / 1e9))
        end = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        out["threads"] = kernel_threads(NAME, cpus)
        (path / "tracing_on").write_text("0")
        text = (path / "trace").read_text(errors="replace")
        out["rows"] = tally(text.splitlines(), cpus, (start + PERIOD_US * 1000, end))  # periods begun after start
        out["duration_ns"] = end - start
        if not any(r["periods"] for r in out["rows"]):
            out["note"] = "the tracer completed no period"
    except (TraceUnavailable, OSError) as e:
        out["note"] = f"could not run: {getattr(e, 'strerror', None) or e}"
    finally:
        if holder.instance is not None:
            try:
                (holder.instance / "current_tracer").write_text("nop")
            except OSError:
                pass
        problems = knobs.restore() if knobs is not None else []
        holder.stop()
        problems += holder.notes
        if problems:
            out["note"] = "; ".join([out["note"], *problems] if out["note"] else problems)
    return out


def beside(stream: Stream, journal: Any, stopped: Callable[[], bool], hw: bool = False) -> None:
    """After a noise case's loop: where the kernel has the osnoise tracer, its run on the same CPUs, added to
    the probe's summary as noise.osnoise (and said in noise.tracer_note); nothing where it is absent. hw (`--hw`):
    then its hwnoise mode too, as noise.hwnoise (interrupts off: only hardware and NMI noise)."""
    header, summary = stream.header or {}, stream.summary
    noise = (summary or {}).get("noise")
    if not isinstance(noise, dict):
        return
    if noise.get("osnoise_tracer") is not True:
        if hw:
            noise["hwnoise"] = {"tracer": NAME, "mode": HW, "note": "not run: this kernel has no osnoise tracer"}
        return
    params, rt = header.get("params") or {}, header.get("rt") or {}
    rows = [c for c in summary.get("cpus") or [] if isinstance(c, dict)]  # type: ignore[union-attr]
    cpus = [c["cpu"] for c in rows if isinstance(c.get("cpu"), int)]
    duration = min(max(int(params.get("duration_ns") or 0), MIN_NS), MAX_NS)
    got = measure(
        cpus, duration, int(params.get("gap_ns") or 1000), rt.get("policy") or "other", int(rt.get("priority") or 0),
        journal, stopped,
    )  # fmt: skip
    periods = got.pop("rows", None) or []
    noise["osnoise"] = {**got, **figures(periods, summary)}  # type: ignore[arg-type]
    if hw and not stopped():
        why = hw_unavailable()
        if why:
            noise["hwnoise"] = {"tracer": NAME, "mode": HW, "note": f"not run: {why}"}
        else:
            args = (int(params.get("gap_ns") or 1000), rt.get("policy") or "other", int(rt.get("priority") or 0))
            hw_got = measure(cpus, duration, *args, journal, stopped, irq_disable=True)
            hw_rows = hw_got.pop("rows", None) or []
            hw_figures = figures(hw_rows, summary or {})
            noise["hwnoise"] = {**hw_got, **hw_figures, "when": "after the osnoise run, same CPUs"}
    said = (
        "osnoise tracer present: its figures beside (noise.osnoise: the kernel's osnoise tracer on the same "
        "CPUs right after this loop)"
        if periods and not got["note"]
        else f"osnoise tracer present; {got['note']}"
    )
    parts = str(noise.get("tracer_note") or "").split("; ")
    hwlat = HWLAT_NOTE if noise.get("hwlat_tracer") is True else (parts[-1] if len(parts) > 1 else "")
    noise["tracer_note"] = "; ".join(p for p in (said, hwlat) if p)

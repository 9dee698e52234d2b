"""Kill-anywhere campaign (issue 14 item 3): run a 3-case scenario (timer idle, timer under hackbench in a
cpuset, rtqual's EPICS IOC) and kill rtqual with SIGINT, SIGTERM or SIGKILL at a random moment; after each
run check what a user relies on:

- every case the manifest lists as finished reads back (`rtqual show --json` lists it) and `rtqual verify`
  finds every file intact; a bundle left `running` names its cut case;
- host changes undone: by rtqual itself (INT/TERM), or by `rtqual restore` after SIGKILL (a second restore
  has nothing left to do), the cpusets and temp folders of the journal gone;
- no live process of the run (marked by an environment tag its children inherit), no temp folder (a
  private TMPDIR per run), no new rtqual tracefs instance;
- INT/TERM: rtqual exits within 10 s of the signal.

    .venv/bin/python benchmarks/kill_anywhere.py [--runs 50] [--seed 1] [--keep DIR] [--json OUT]

The slow tests (tests/system/test_kill_anywhere.py) run a few of these runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

SCENARIO = """\
[run]
name = "kill-anywhere"
description = "timer idle, timer under hackbench in a cpuset, the EPICS IOC: killed at random moments"

[defaults.timer]
interval = "1ms"
duration = "2s"

[[case]]
label = "timer idle"
probe = "timer"

[[case]]
label = "timer hackbench"
probe = "timer"
loads = ["hackbench"]
conditions = { settle = "500ms", cpuset = { loads = "0" } }

[[case]]
label = "ioc idle"
probe = "ioc"
params = { duration = "2s", rate = 100 }
"""
EXIT_WITHIN_S = 10.0
TAG_VAR = "RTQUAL_KILL_TAG"
SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


def rtqual(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed rtqual CLI."""
    return subprocess.run(
        [sys.executable, "-m", "rtqual", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def tagged_pids(tag: str) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose environment holds the run's tag: (pid, command line)."""
    needle = f"{TAG_VAR}={tag}".encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if state != "Z":
            out.append((int(d), cmd))
    return out


def tracefs_instances() -> set[str]:
    """Names of the tracefs instances that look like rtqual's."""
    for root in ("/sys/kernel/tracing/instances", "/sys/kernel/debug/tracing/instances"):
        if os.path.isdir(root):
            return {n for n in os.listdir(root) if "rtqual" in n}
    return set()


def wait_gone(tag: str, within_s: float) -> list[tuple[int, str]]:
    """The run's processes still alive after waiting up to within_s for them to end (PID 1 may reap late)."""
    end = time.monotonic() + within_s
    while True:
        left = tagged_pids(tag)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def check_bundle(bundle: Path, env: dict) -> dict:
    """What the bundle says after the kill (and restore): finished cases readable, cut case named,
    files intact, journal fully undone."""
    out: dict = {"exists": (bundle / "manifest.json").is_file()}
    if not out["exists"]:
        return out
    manifest = json.loads((bundle / "manifest.json").read_text())
    finished = [c["id"] for c in manifest.get("cases", [])]
    show = rtqual("show", "--json", str(bundle), env=env)
    shown = [c["id"] for c in json.loads(show.stdout)["cases"]] if show.returncode == 0 else []
    verify = rtqual("verify", str(bundle), env=env)
    out.update(
        status=manifest.get("status"),
        finished=finished,
        lost=[c for c in finished if c not in shown],
        show_exit=show.returncode,
        show_error=show.stderr.strip()[-300:] if show.returncode else "",
        cut=json.loads(show.stdout).get("cut") if show.returncode == 0 else None,
        verify_exit=verify.returncode,
        verify_out=(verify.stdout + verify.stderr).strip()[-300:] if verify.returncode else "",
    )
    out["cut_named"] = manifest.get("status") != "running" or bool(out["cut"])
    changes = bundle / "host" / "changes.json"
    if changes.is_file():
        again = rtqual("restore", str(bundle), env=env)
        records = json.loads(changes.read_text())["changes"]
        out["journal_left"] = [
            r["knob"]
            for r in records
            if (r.get("kind") in ("cpuset", "tempdir") and r.get("applied") and os.path.exists(r["knob"]))
            or (r.get("before") is not None and not r.get("restored"))
        ]
        out["restore_again"] = again.stdout.strip().splitlines()[-1:] if again.stdout else []
        out["journal_left"] += [] if "nothing to restore" in again.stdout else ["second restore did something"]
    else:
        out["journal_left"] = []
    return out


def one_run(workdir: Path, signame: str, delay_s: float) -> dict:
    """One run of the scenario killed with signame after delay_s; every check's outcome."""
    tag = uuid.uuid4().hex
    tmp = workdir / "tmp"
    tmp.mkdir(parents=True)
    scenario = workdir / "kill.toml"
    scenario.write_text(SCENARIO)
    bundle = workdir / "bundle"
    env = {**os.environ, TAG_VAR: tag, "TMPDIR": str(tmp)}
    traces_before = tracefs_instances()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtqual", "run", str(scenario), "-o", str(bundle), "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # our own signals only reach rtqual (kill(pid), not its group)
    )
    try:
        proc.wait(timeout=delay_s)
        killed, exit_s = False, None  # finished before the kill
    except subprocess.TimeoutExpired:
        proc.send_signal(SIGNALS[signame])
        sent, killed = time.monotonic(), True
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        exit_s = time.monotonic() - sent
    stdout, stderr = proc.communicate()
    r: dict = {"signal": signame, "delay_s": round(delay_s, 3), "killed": killed, "exit_code": proc.returncode}
    r["run_s"] = round(time.monotonic() - started, 3)
    r["exit_s"] = None if exit_s is None else round(exit_s, 3)
    r["traceback"] = "Traceback" in stderr
    if killed and signame == "KILL" and (bundle / "host" / "changes.json").is_file():
        restore = rtqual("restore", str(bundle), env=env)
        r["restore_exit"] = restore.returncode
    r["processes_left"] = [cmd[:120] for _, cmd in wait_gone(tag, 5.0)]
    for pid, _ in tagged_pids(tag):  # never leave them to disturb the next run
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    r["temp_left"] = sorted(os.listdir(tmp))
    r["tracefs_left"] = sorted(tracefs_instances() - traces_before)
    r.update(check_bundle(bundle, env))
    r["stderr_tail"] = stderr.strip().splitlines()[-2:]
    return r


def problems(r: dict) -> list[str]:
    """What went wrong in one run (empty: all invariants held)."""
    out = []
    if r["traceback"]:
        out.append("traceback")
    if r["killed"] and r["signal"] != "KILL" and (r["exit_s"] is None or r["exit_s"] > EXIT_WITHIN_S):
        out.append(f"exit after {r['exit_s']} s")
    for key in ("processes_left", "temp_left", "tracefs_left", "lost", "journal_left"):
        if r.get(key):
            out.append(f"{key}: {r[key]}")
    if r.get("exists"):
        if r.get("show_exit") != 0:
            out.append(f"show exit {r['show_exit']}: {r.get('show_error')}")
        if r.get("verify_exit") != 0:
            out.append(f"verify exit {r['verify_exit']}: {r.get('verify_out')}")
        if not r.get("cut_named"):
            out.append("bundle running but no cut case named")
    if r.get("restore_exit") not in (None, 0):
        out.append(f"restore exit {r['restore_exit']}")
    return out


def full_duration(workdir: Path) -> float:
    """Seconds one uninterrupted run takes (the kills are spread over it)."""
    r = one_run(workdir, "INT", 600)
    bad = problems(r)
    if bad or r["exit_code"] not in (0, 2, 4):
        raise SystemExit(f"the uninterrupted run failed: {bad or r}")
    return r["run_s"]


def campaign(runs: int, seed: int, keep: Path | None) -> dict:
    """runs random kills; the figures: per signal, runs, kills, exit times, and every problem."""
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="kill-anywhere-")) if keep is None else keep
    total_s = full_duration(base / "full")
    results = []
    for i in range(runs):
        signame = rng.choice(list(SIGNALS))
        delay = rng.uniform(0.05, total_s * 1.05)
        r = one_run(base / f"run-{i:03d}", signame, delay)
        r["problems"] = problems(r)
        results.append(r)
        print(
            f"{i + 1:3d} {signame:4s} at {delay:5.2f}s exit {r['exit_code']} "
            f"in {r['exit_s']}s status {r.get('status')} finished {len(r.get('finished') or [])} "
            f"cut {r.get('cut')} {'; '.join(r['problems']) or 'ok'}",
            flush=True,
        )
    if keep is None:
        shutil.rmtree(base, ignore_errors=True)
    exits = [r["exit_s"] for r in results if r["killed"] and r["signal"] != "KILL"]
    return {
        "runs": runs,
        "seed": seed,
        "uninterrupted_run_s": round(total_s, 2),
        "killed": sum(r["killed"] for r in results),
        "by_signal": {s: sum(r["signal"] == s and r["killed"] for r in results) for s in SIGNALS},
        "cut_bundles": sum(r.get("status") == "running" for r in results),
        "finished_cases_kept": sum(len(r.get("finished") or []) for r in results),
        "finished_cases_lost": sum(len(r.get("lost") or []) for r in results),
        "int_term_exit_s_max": max(exits) if exits else None,
        "int_term_exit_s_median": sorted(exits)[len(exits) // 2] if exits else None,
        "runs_with_problems": sum(bool(r["problems"]) for r in results),
        "problems": [(i, r["signal"], r["delay_s"], r["problems"]) for i, r in enumerate(results) if r["problems"]],
        "results": results,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, help="keep every run's bundle under this folder")
    p.add_argument("--json", type=Path, help="write every run's checks here")
    a = p.parse_args()
    # a background job of a shell starts with SIGINT ignored, and its children inherit that: not ours
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if a.runs < 1:
        p.error("--runs must be at least 1")
    out = campaign(a.runs, a.seed, a.keep)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "results"}, indent=1))
    return 1 if out["runs_with_problems"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every file name of a bundle, written once (DESIGN.md "Result bundle").

rtqual-<host>-<YYYYmmdd-HHMMSS>/
  manifest.json          schema_version, versions, argv, start/end, status, verdict, case index, checksums
  scenario.toml          what was asked (verbatim for scenario files)
  plan.json              the expanded cases
  report.html            the run's HTML report (rtqual report BUNDLE rewrites it)
  selftest.json          a selftest's answer (rtqual selftest)
  capacity.json          a capacity sweep's steps and answer (rtqual capacity)
  host/                  facts-before.json, facts-after.json, tunables-before.json, tunables-after.json,
                         tuning-before.json,
                         changes.json (the change journal `rtqual restore` reads)
  cases/<id>/            params.json, result.json, hist.json, hist-cpuN.hdr, hist-all.hdr,
                         stream.jsonl, probe.stderr, rt-tasks.json, host-samples.jsonl,
                         environment.json (steal, SMT siblings, throttling: rtqual.measure.host.sampler),
                         raw.bin (--raw), spikes/ (--trace)
"""

from __future__ import annotations

MANIFEST = "manifest.json"
PLAN = "plan.json"
SCENARIO = "scenario.toml"
REPORT = "report.html"
SELFTEST = "selftest.json"
CAPACITY = "capacity.json"
HOST = "host"
FACTS_BEFORE = "host/facts-before.json"
FACTS_AFTER = "host/facts-after.json"
TUNABLES_BEFORE = "host/tunables-before.json"
TUNING_BEFORE = "host/tuning-before.json"  # rtqual.measure.host.facts.tuning() before the run (advise's checks)
TUNABLES_AFTER = "host/tunables-after.json"
CHANGES = "host/changes.json"
CASES = "cases"

# the files of one case folder
PARAMS = "params.json"
RESULT = "result.json"
HIST = "hist.json"
STREAM = "stream.jsonl"
STDERR = "probe.stderr"
RT_TASKS = "rt-tasks.json"
HOST_SAMPLES = "host-samples.jsonl"
ENVIRONMENT = "environment.json"
RAW = "raw.bin"
SPIKES = "spikes"

UNSEALED = {MANIFEST, CHANGES}  # rewritten after the run (restore): no checksum


def case_file(case_id: str, name: str) -> str:
    """The path of a case's file relative to the bundle: cases/<id>/<name>."""
    return f"{CASES}/{case_id}/{name}"

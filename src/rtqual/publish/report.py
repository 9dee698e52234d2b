"""The text report (`rtqual show`, `rtqual host`): tables and JSON from stored results (no measuring, no I/O
beyond the text returned). Rows and cells come from publish.views, host rows from publish.hostview."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rtqual.answers import caveats as caveats_mod
from rtqual.answers import environment as environment_mod
from rtqual.answers.answer import answer_lines, answers
from rtqual.answers.requirements import describe
from rtqual.answers.verdict import headline
from rtqual.probes import has_section
from rtqual.publish import capacity as capacity_view
from rtqual.publish.hostview import host_rows
from rtqual.publish.views import (
    PERCENTILE_NOTE,
    STAT_COLUMNS,
    bundle_view,  # noqa: F401 - report.bundle_view: the commands' one bundle loader
    carried_note,
    cases_table,
    cpu_name,
    interrupt_lines,
    ioc_lines,
    network_lines,
    noise_lines,
    paper_table,
    spike_lines,
    stage_table,
    stat_cell,
    temperature_line,
)
from rtqual.textfmt import clean, clean_lines, format_table
from rtqual.units import format_ns

JSON_STAT_KEYS = [k for _, k in STAT_COLUMNS]


def stat_cells(stats: dict) -> list[str]:
    """A row of STAT_COLUMNS' cells, each percentile only where the row's samples carry it."""
    return [stat_cell(key, stats) for _, key in STAT_COLUMNS]


def case_table(result: dict) -> str:
    """One row per CPU (named as the case pinned it: views.cpu_name) and one for all CPUs; the note on
    percentiles its samples do not carry."""
    per_cpu = sorted(result["per_cpu"].items(), key=lambda kv: int(kv[0]))
    rows = [[cpu_name(result, cpu), *stat_cells(s)] for cpu, s in per_cpu]
    rows.append(["all", *stat_cells(result["stats"])])
    note = carried_note([s for _, s in per_cpu] + [result["stats"]], [k for _, k in STAT_COLUMNS])
    return "\n".join([format_table(["", *[h for h, _ in STAT_COLUMNS]], rows), *note])


STAGE_NOTE = (
    "stages: wake = stimulus -> IOC reader awake, dispatch = -> record processing (read_bi), "
    "chain = -> bo written, return = -> response read by the harness"
)
GPIO_STAGE_NOTE = (
    "stages: drive = stimulus line toggled -> IOC input edge (kernel timestamp), wake = -> IOC reader "
    "awake (the interrupt latency), dispatch = -> record processing (read_bi), chain = -> bo written, "
    "return = -> response edge (kernel timestamp)"
)
UIO_STAGES_NOTE = (
    "stages (the kernel's events, docs/interrupts.md): hardirq = trigger write -> irq_handler_entry (active only), "
    "irq_thread_woken/_running = -> the IRQ thread woken/running, reader_woken/_running = -> the reader woken/running, "
    "read_returned = -> its read of the UIO device returned"
)
UIO_STAGE_NOTE = f"{UIO_STAGES_NOTE}; they sum to the total"
IOC_UIO_STAGE_NOTE = (
    f"{UIO_STAGES_NOTE} (the IOC's reader: together the FIFO input's wake stage), dispatch = -> record processing "
    "(read_bi), chain = -> bo written, return = -> response read by the harness; they sum to the total (per sample "
    "with every point in the trace)"
)
TIMERLAT_STAGE_NOTE = (
    "stages (timerlat tracer): irq = timer expiry -> timer IRQ, thread = -> the timerlat thread running, "
    "user = -> back in user space (where the kernel has timerlat's user-space interface)"
)


def baseline_line(result: dict, results: list[dict]) -> str | None:
    """An IOC case next to the timer baseline measured in the same run: the timer case under the
    same loads, else the first timer case."""

    def loads(r: dict) -> list[str]:
        return sorted(ld.get("name") or "" for ld in r.get("loads") or [])

    timers = [r for r in results if has_section(r["probe"], "baseline") and r["stats"].get("count") and r is not result]
    base = next((r for r in timers if loads(r) == loads(result)), timers[0] if timers else None)
    if not result.get("ioc") or base is None:
        return None
    s, b = result["stats"], base["stats"]
    pairs = ", ".join(
        f"{name} {stat_cell(k, s)} vs {stat_cell(k, b)}"
        for name, k in (("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns"))
    )
    return f"vs timer baseline (case {base['id']}, same run): {pairs}"


def bundle_answer(data: dict) -> list[dict]:
    """The answers of a bundle's cases (rtqual.answers.answer), counted on its histograms when given."""
    return answers(data["cases"], data.get("hists"))


def show_text(data: dict, table: str | None = None, env_lines: Sequence[str] = ()) -> str:
    """The human view of a bundle: first the answer (one line per question, then env_lines, sentences on where
    it was measured: by default the environment's host sentences); per case, its table, verdict and warnings;
    then the summary table (one row per case, or a seed paper's layout)."""
    out = []
    m = data["manifest"]
    env = data.get("environment")
    lines = answer_lines(bundle_answer(data), env_lines or (environment_mod.host_sentences(env) if env else []))
    if data.get("capacity"):  # a capacity sweep: its answer first, the steps' own answers after it
        out += [*capacity_view.lines(data["capacity"]), ""]
    if lines:
        out += ["answer:", *(f"  {clean(line)}" for line in lines), ""]
    out.append(
        clean(
            f"bundle {data['path']}  ({m.get('status')}, rtqual {m.get('rtqual_version')}, "
            f"host {m.get('hostname')}, started {m.get('start')})"
        )
    )
    if data.get("cut"):  # a run killed (SIGKILL) mid-case: its manifest stayed `running`
        out.append(
            f"cut: case {data['cut']} was running when rtqual was killed: no result; the cases below finished "
            f"(`rtqual restore {data['path']}` puts back what the run changed)"
        )
    out.extend(clean_lines(environment_lines(data.get("environment"))))
    records = {c["id"]: c for c in data.get("caveats") or caveats_mod.records(env, data["cases"])}
    env_cases = {c.get("id"): c for c in (env or {}).get("cases") or [] if isinstance(c, dict)}
    for r in data["cases"]:
        thr = r.get("params", {}).get("threshold_ns")
        out.append("")
        out.append(clean(f"case {r['id']}: {r['label']}" + (f"  (threshold {format_ns(thr)})" if thr else "")))
        out.append(case_table(r))
        stages = stage_table(r)
        if stages:
            names = (r.get("probe_summary") or {}).get("stages", {})
            note = (
                IOC_UIO_STAGE_NOTE
                if "read_returned" in names and "dispatch" in names
                else UIO_STAGE_NOTE
                if "read_returned" in names
                else TIMERLAT_STAGE_NOTE
                if "irq" in names
                else GPIO_STAGE_NOTE
                if "drive" in names
                else STAGE_NOTE
            )
            out.extend(["", stages, note])
        out.extend(clean_lines(interrupt_lines(r) + ioc_lines(r) + noise_lines(r) + network_lines(r) + spike_lines(r)))
        baseline = baseline_line(r, data["cases"])
        if baseline:
            out.append(baseline)
        temperature = temperature_line(env_cases.get(r["id"]))
        if temperature:
            out.append(clean(temperature))
        out.extend(clean(f"requirement {describe(v)}") for v in r.get("requirement_verdicts") or [])
        out.append(clean(f"verdict: {headline(r['verdict'], r.get('reason', ''))}"))
        out.extend(clean(f"warning: {w}") for w in r.get("warnings", []))
        out.extend(clean(f"caveat: {c['text']}") for c in caveat_list(records.get(r["id"]), SHOW_OWN))
    table = table or data.get("table") or "cases"
    if data["cases"] and (len(data["cases"]) > 1 or table != "cases"):
        out.append("")
        out.append(cases_table(data["cases"]) if table == "cases" else paper_table(data["cases"], table))
    out.append("")
    out.append(PERCENTILE_NOTE)
    if m.get("capability"):  # written by the run (bundles of rtqual 0.1.0 have none)
        out += ["", "capability (from the numbers above):", *(f"  - {clean(line)}" for line in m["capability"])]
    return "\n".join(out)


SHOW_OWN = ("probe-error", "load-unreached", "degraded", "few-samples", "odd")
"""The caveat kinds `show` states on their own line under the case; the others it states already: the host's
with the answer, what else happened (and a condition not applied) in the environment block."""


def caveat_list(record: dict | None, kinds: tuple[str, ...]) -> list[dict]:
    """The caveats of a case's record (rtqual.answers.caveats) of these kinds."""
    return [c for c in (record or {}).get("caveats") or [] if c["kind"] in kinds]


def environment_lines(env: dict | None) -> list[str]:
    """The `show` text's environment block: what each case's conditions mean for the numbers (the host's
    hypervisor and container are said with the answer; nothing without an environment or events)."""
    said = environment_mod.sentences(env) if env else []
    cases = said[len(environment_mod.host_sentences(env)) :] if env else []
    return ["", "environment (what the numbers include):", *(f"  - {s}" for s in cases)] if cases else []


def check_printable(bundle: Mapping, r: dict) -> None:
    """Raise (KeyError, TypeError, ValueError...) when `show` or `show --json` cannot print the result r of
    `bundle` (a shape the bundle's checks did not foresee): the result model counts it as damage."""
    one = {"path": bundle["path"], "manifest": bundle["manifest"], "cases": [r], "table": bundle["table"],
           "damage": [], "cut": bundle["cut"]}  # fmt: skip
    show_text(one)
    json.dumps(show_json(one))


def show_json(data: dict) -> dict:
    """The `rtqual show --json` document (a contract: keys are never renamed)."""

    def pick(s: dict) -> dict:
        return {k: s.get(k) for k in JSON_STAT_KEYS}

    records = {c["id"]: c for c in data.get("caveats") or caveats_mod.records(data.get("environment"), data["cases"])}

    return {
        **({"cut": data["cut"]} if data.get("cut") else {}),
        **({"damage": data["damage"]} if data.get("damage") else {}),
        "bundle": data["path"],
        "schema_version": data["manifest"].get("schema_version"),
        **({"environment": data["environment"]} if data.get("environment") is not None else {}),
        "cases": [
            {
                "id": r["id"],
                "label": r["label"],
                "probe": r["probe"],
                **({"run_as": r["run_as"]} if r.get("run_as") else {}),  # bundles before 0.2 lack it
                "params": r["params"],
                "stats": pick(r["stats"]),
                "per_cpu": {c: pick(s) for c, s in r["per_cpu"].items()},
                "verdict": r["verdict"],
                "reason": r.get("reason"),
                "degraded": r.get("degraded", False),
                "warnings": r.get("warnings", []),
                **(
                    {"stages": (r.get("probe_summary") or {}).get("stages")}
                    if (r.get("probe_summary") or {}).get("stages")
                    else {}
                ),
                **({"ioc": r["ioc"]} if r.get("ioc") else {}),
                **(
                    {k: (r.get("probe_summary") or {}).get(k) for k in ("irq", "interrupts")}
                    if interrupt_lines(r)
                    else {}
                ),
                **({"noise": (r.get("probe_summary") or {}).get("noise")} if noise_lines(r) else {}),
                **({"requirements_judged": r["requirement_verdicts"]} if r.get("requirement_verdicts") else {}),
                **({"spikes": r.get("spikes") or [], "trace": r["trace"]} if isinstance(r.get("trace"), dict) else {}),
                "qualifiers": records.get(r["id"]),
            }
            for r in data["cases"]
        ],
        "verdict": data["manifest"].get("verdict"),
        "answer": bundle_answer(data),
        **({"capability": data["manifest"]["capability"]} if "capability" in data["manifest"] else {}),
        **({"capacity": data["capacity"]} if data.get("capacity") else {}),
    }


def format_host(facts: dict) -> str:
    """The `rtqual host` table of a host.facts.collect() result."""
    return format_table(["fact", "value"], [list(r) for r in host_rows(facts)], left=2)

"""The facts that qualify a case's numbers, one record per case, computed here once and rendered by every view
(show, the HTML report, compare, table, fleet, history): where it ran (an emulator, a virtual machine, a
container), what else happened (steal, load during an idle case, a busy SMT sibling, heat), what it asked
for and did not get (a condition not applied, real-time scheduling), whether the probe failed and why, what a
load did not reach, and how many samples it has and which percentiles they carry. Pure: results, host
facts and the environment (rtqual.answers.environment) in, dicts and words out.

A percentile p is stated only where the samples carry it: N >= 10 / (1 - p), so that some ten samples lie
beyond it (p99 needs 1,000 samples, p99.9 10,000, p99.99 100,000); below that it is a dash and the N needed.
"""

from __future__ import annotations

from rtqual.answers import environment as environment_mod

PERCENTILES = {"p99_ns": 99.0, "p999_ns": 99.9, "p9999_ns": 99.99}
"""The percentile statistics (key -> p in percent) that need more samples than they seem to."""
BEYOND = 10
"""Samples that must lie beyond a percentile for it to be more than the largest few values."""

FLAGS: dict[str, tuple[str, str]] = {
    "emulated": ("E", "emulated (QEMU TCG, no KVM): the emulator's numbers, not the hardware's"),
    "virtual": ("V", "in a virtual machine: maxima include the hypervisor's"),
    "container": ("C", "in a container: kernel and settings are the host's"),
    "steal": ("S", "the hypervisor stole CPU time during the case"),
    "not-idle": ("L", "an idle case ran under load (other runnable tasks)"),
    "smt": ("H", "a busy SMT sibling shared the core"),
    "hot": ("T", "hot or throttled: the CPU may have run slower"),
    "throttled": ("T", "hot or throttled: the CPU may have run slower"),
    "not-applied": ("N", "a condition the case asked for was not applied"),
    "degraded": ("D", "degraded: without real-time scheduling or memory locking"),
    "probe-error": ("X", "the probe failed (cause stated)"),
    "load-unreached": ("R", "a load did not reach what it stands for"),
    "few-samples": ("n", "fewer samples than p99 needs (1,000)"),
    "odd": ("?", "caveats not read: values of an unexpected shape"),
}
"""Caveat kind -> (the flag letter of tables, the legend's words)."""


def needed(key: str) -> int | None:
    """The samples a percentile statistic needs to be stated (10 / (1 - p)), None for other statistics."""
    p = PERCENTILES.get(key)
    return None if p is None else round(BEYOND * 100 / (100 - p))


def carried(key: str, count: object) -> bool:
    """Whether `count` samples carry the statistic `key` (every non-percentile statistic is carried)."""
    need = needed(key)
    return need is None or (isinstance(count, int | float) and count >= need)


def shown(key: str, stats: dict) -> object:
    """The value of statistic `key` in `stats` as views may state it: None where the samples do not carry it."""
    return stats.get(key) if carried(key, stats.get("count")) else None


def percentiles(count: object) -> dict[str, dict]:
    """Per percentile key: the samples it needs and whether `count` carries it (show --json's record)."""
    return {k: {"needs": needed(k), "carried": carried(k, count)} for k in PERCENTILES}


def not_carried_note(counts: list[object], keys: list[str]) -> str | None:
    """Under a table: which of its percentile columns are dashed for too few samples and the N each needs;
    None when every row carries them."""
    short = [k for k in keys if k in PERCENTILES and any(not carried(k, n) for n in counts)]
    if not short:
        return None
    needs = ", ".join(f"{_name(k)} needs {needed(k):,}" for k in short)
    return f"'-' in a percentile column: too few samples to state it ({needs} samples: 10 / (1 - p))"


def _name(key: str) -> str:
    return "p" + f"{PERCENTILES[key]:g}"


# ---------------------------------------------------------------- the record


def host_caveats(env: dict | None) -> list[dict]:
    """The caveats of where every case of a bundle ran: an emulator, a virtual machine, a container."""
    env = env or {}
    out = []
    said = environment_mod.host_sentences(env) if env else []
    hv, ct = env.get("hypervisor"), env.get("container")
    if hv == "qemu-tcg":
        out.append(_caveat("emulated", "emulated", said[0]))
    elif hv not in (None, "none"):
        out.append(_caveat("virtual", f"{environment_mod.HYPERVISOR_NAMES.get(hv, hv)} guest", said[0]))
    if ct and ct != "none":
        out.append(_caveat("container", f"{environment_mod.CONTAINER_NAMES.get(ct, ct)} container", said[1]))
    firmware = environment_mod.firmware_sentence(env.get("firmware_throttled"))
    if firmware:
        out.append(_caveat("throttled", "Pi throttled before the run", firmware))
    return out


def _caveat(kind: str, word: str, text: str) -> dict:
    return {"kind": kind, "flag": FLAGS[kind][0], "word": word, "text": text}


_EVENT_WORDS = {"not-idle": "load during idle", "steal": "steal", "smt": "busy SMT sibling", "hot": "hot",
                "throttled": "throttled", "not-applied": "not applied"}  # fmt: skip


def case_caveats(result: dict, env_case: dict | None) -> list[dict]:
    """The caveats of one case's own: what else happened (its environment), what it did not get, a probe
    failure with its cause, a load that did not reach what it stands for, too few samples."""
    label = result.get("label")
    out = []
    for kind, text in environment_mod.case_events(env_case or {}):
        word = _EVENT_WORDS.get(kind, kind)
        if kind == "not-applied":
            word = text.split(" not applied", 1)[0].removeprefix("condition ") + " not applied"
        out.append(_caveat(kind, word, text))
    if result.get("degraded"):
        out.append(_caveat("degraded", "degraded", f"case '{label}' ran degraded: {result.get('reason') or ''}"))
    if result.get("verdict") == "error":
        cause = probe_error_cause(result)
        out.append(_caveat("probe-error", f"probe failed: {cause}", f"the probe of '{label}' failed: {cause}"))
    out += load_caveats(result)
    count = (result.get("stats") or {}).get("count")
    if result.get("verdict") != "error" and isinstance(count, int) and 0 < count < (needed("p99_ns") or 0):
        out.append(
            _caveat(
                "few-samples",
                f"{count:,} samples",
                f"'{label}' has {count:,} samples: p99 needs {needed('p99_ns'):,}; its percentiles above the median "
                "are not stated, its maximum is one value",
            )
        )
    return out


def probe_error_cause(result: dict) -> str:
    """Why a case's probe failed: its verdict's reason and, where the probe's end record says more (e.g.
    'watchdog', kept in stream.jsonl and the result's `end`), that too."""
    reason = str(result.get("reason") or "no reason recorded")
    end: dict = result["end"] if isinstance(result.get("end"), dict) else {}
    message = str(end.get("message") or "")
    if message and message not in reason:
        return f"{reason} (the probe's end record: {end.get('reason') or 'error'}, {message})"
    return reason


def load_caveats(result: dict) -> list[dict]:
    """A network load run beside an IOC over rtqual's private veth pair: its packets (CA name searches, UDP)
    go to rtqual's own receiver, while the IOC serves Channel Access on 127.0.0.1: they load the kernel's
    network stack, not the IOC's CA server (its search and beacon handling)."""
    if not result.get("ioc"):
        return []
    out = []
    for ld in result.get("loads") or []:
        net = ld.get("network") if isinstance(ld, dict) else None
        if not isinstance(net, dict) or (net.get("path") or {}).get("interface"):
            continue
        out.append(
            _caveat(
                "load-unreached",
                f"load {ld.get('name')} never reaches the IOC",
                f"network load {ld.get('name')} in '{result.get('label')}' sends to rtqual's own receiver on a "
                "private veth pair while the IOC serves Channel Access on 127.0.0.1: it loads the kernel's network "
                "stack, not the IOC's CA server (its name-search and beacon handling)",
            )
        )
    return out


def records(env: dict | None, results: list[dict]) -> list[dict]:
    """One record per case (in the results' order): id, label, sample count, planned duration, the
    percentiles the samples carry and every caveat (the host's first, then the case's own)."""
    env = env or {}
    by_id = {c.get("id"): c for c in env.get("cases") or [] if isinstance(c, dict)}
    host = host_caveats(env)
    out = []
    for r in results:
        stats: dict = r["stats"] if isinstance(r.get("stats"), dict) else {}
        params: dict = r["params"] if isinstance(r.get("params"), dict) else {}
        try:
            own = case_caveats(r, by_id.get(r.get("id")))
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):  # a hand-edited or foreign bundle
            own = [_caveat("odd", "caveats not read", f"'{r.get('label')}': values of an unexpected shape: not stated")]
        out.append(
            {
                "id": r.get("id"),
                "label": r.get("label"),
                "count": stats.get("count"),
                "duration_ns": params.get("duration_ns"),
                "percentiles": percentiles(stats.get("count")),
                "caveats": host + own,
            }
        )
    return out


def flags(record: dict | None) -> str:
    """The flag letters of a record's caveats, each once, in FLAGS' order ('' for none)."""
    kinds = {c["kind"] for c in (record or {}).get("caveats") or []}
    return "".join(dict.fromkeys(FLAGS[k][0] for k in FLAGS if k in kinds))


def legend(used: str) -> str | None:
    """The legend of the flag letters in `used` ('flags: E emulated ..., N a condition ...'), None for none."""
    letters = dict.fromkeys(used)
    words = dict.fromkeys(f"{f} {w}" for k, (f, w) in FLAGS.items() if f in letters)
    return "flags: " + "; ".join(words) if words else None


def words(record: dict | None) -> str:
    """A record's caveats in a few words ('emulated; governor (performance) not applied'), '' for none."""
    return "; ".join(dict.fromkeys(c["word"] for c in (record or {}).get("caveats") or []))

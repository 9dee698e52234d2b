"""`rtqual advise` as text: the findings (blockers first, each with its fix), the report's "What to change"
lines (--short, the HTML report, scripts/qualify), and the persistent form of the fixes (--emit tuned, sysctl,
cmdline).

What the facts held is printed with its control characters escaped (a newline in a thread's name makes no line
of its own); a fix's lines are printed as its check built them (rtqual.answers.advice.hostchecks: values, quoted).
An --emit line that is not of its form's plain shape (a kernel command line word, `name = value`,
`section:key=value`) is left out with a note saying so: what lands in a tuned profile or on a kernel command
line is never free text.
"""

from __future__ import annotations

import re

from rtqual.answers.advice.advise import SEVERITIES
from rtqual.units import format_ns

SYSCTL_FILE = "/etc/sysctl.d/90-rtqual.conf"
TUNED_FILE = "/etc/tuned/rtqual/tuned.conf"
FORMS = ("tuned", "sysctl", "cmdline")
_PLAIN = r"[A-Za-z0-9_.,:/+-]"
SHAPES = {  # what a persistent line of each kind may be
    "cmdline": re.compile(rf"[A-Za-z0-9_.-]+(={_PLAIN}+)?"),
    "sysctl": re.compile(rf"[a-z0-9_.]+ = {_PLAIN}+"),
    "tuned": re.compile(rf"[a-z_]+:[a-z0-9_.]+={_PLAIN}+"),
}


def plain(text: object) -> str:
    """Text with its control characters (newline, ESC ...) written as escapes: one printable line."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in str(text))


def effect_text(m: dict) -> str:
    """One line of a measured effect: 'p99 -12.0us (spread 3.1us), max -40us ...' or 'no measurable effect'."""
    if m.get("effect") == "no measurable effect" or not m.get("change"):
        return f"no measurable effect ({m.get('rounds')} rounds)"
    parts = [
        f"{stat} {'+' if d['delta_ns'] > 0 else '-'}{format_ns(abs(d['delta_ns']))}" for stat, d in m["change"].items()
    ]
    return f"{m['effect']}: " + ", ".join(parts) + f" ({m.get('rounds')} rounds)"


def text(result: dict, measured: list[dict] | None = None) -> str:
    """The findings as text, blockers first: id, severity, why, evidence, fix, check (and the measured effect,
    and what a fix would gain where the requirement holds without it; what was refused is said on stderr)."""
    by_id = {m["id"]: m for m in measured or []}
    lines = [f"rtqual advise: real-time CPUs {result['cpus']}, application priority {result['priority']}"]
    if not result["findings"]:
        lines.append("nothing to change")
    for f in result["findings"]:
        lines += ["", f"[{f['severity']}] {plain(f['id'])}: {plain(f['why'])}"]
        lines += [f"  evidence: {plain(e)}" for e in f["evidence"]]
        fix_lines = [plain(line) for line in f["fix"].splitlines()] or [""]
        lines += [f"  fix{' (at run time)' if f['runtime'] else ' (needs a reboot or the host)'}: {fix_lines[0]}"]
        lines += [f"       {line}" for line in fix_lines[1:]]
        lines.append(f"  check: {plain(f['check'])}")
        if f.get("gain"):
            lines.append(f"  gain: {plain(f['gain'])}")
        if f["id"] in by_id:
            lines.append(f"  measured: {effect_text(by_id[f['id']])}")
    lines += ["", f"passed: {', '.join(result['passed']) or '-'}"]
    return "\n".join(lines)


def what_to_change(findings: list[dict], measured: list[dict] | None = None) -> list[str]:
    """The 'What to change' lines of a report: blockers first, one line a finding, with its measured effect."""
    by_id = {m["id"]: m for m in measured or []}
    out = []
    for f in sorted(findings, key=lambda f: SEVERITIES.index(f["severity"])):
        line = f"[{f['severity']}] {plain(f['id'])}: {plain((f['fix'].splitlines() or [''])[0])}"
        if f["id"] in by_id:
            line += f" — measured: {effect_text(by_id[f['id']])}"
        out.append(line)
    return out


def persistent_lines(findings: list[dict], kind: str) -> tuple[list[str], int]:
    """The findings' persistent lines of one kind that have its plain shape (each once), and how many had not."""
    lines = [w for f in findings for w in (f.get("persistent") or {}).get(kind) or []]
    good = [w for w in lines if isinstance(w, str) and SHAPES[kind].fullmatch(w)]
    return list(dict.fromkeys(good)), len(lines) - len(good)


def emit(findings: list[dict], measured: list[dict], form: str) -> tuple[str, list[str]]:
    """The persistent form (tuned, sysctl or cmdline) of the fixes that helped (measured effect 'better');
    without a measurement, of every finding. Also the notes of lines left out (not of their plain shape)."""
    helped = {m["id"] for m in measured if m.get("effect") == "better"} if measured else {f["id"] for f in findings}
    chosen = [f for f in findings if f["id"] in helped]
    cmdline, bad_cmdline = persistent_lines(chosen, "cmdline")
    sysctl, bad_sysctl = persistent_lines(chosen, "sysctl")
    bad_tuned = persistent_lines(chosen, "tuned")[1]
    bad = {"cmdline": bad_cmdline, "sysctl": bad_sysctl, "tuned": bad_cmdline + bad_sysctl + bad_tuned}[form]
    notes = [f"--emit {form}: {bad} line(s) that are not plain settings left out"] if bad else []
    if form == "cmdline":
        return " ".join(cmdline) + "\n", notes
    if form == "sysctl":
        return f"# {SYSCTL_FILE} (then: sysctl --system)\n" + "\n".join(sysctl) + "\n", notes
    sections: dict[str, list[str]] = {}
    for f in chosen:
        own = [
            *persistent_lines([f], "tuned")[0],
            *("sysctl:" + w.replace(" = ", "=") for w in persistent_lines([f], "sysctl")[0]),
        ]
        for entry in own:
            section, _, line = entry.partition(":")
            sections.setdefault(section, []).append(line)
        sections.setdefault("bootloader", [])
    base = "realtime" if "variables" in sections else "latency-performance"
    out = [f"# {TUNED_FILE} (then: tuned-adm profile rtqual)", "[main]", f"include={base}"]
    for section, lines in sections.items():
        lines = list(dict.fromkeys(lines)) + (
            [f"cmdline_rtqual={' '.join(cmdline)}"] if section == "bootloader" and cmdline else []
        )
        if lines:
            out += [f"[{section}]", *lines]
    return "\n".join(out) + "\n", notes

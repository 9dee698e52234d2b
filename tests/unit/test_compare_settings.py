"""`rtqual compare` names the tunable settings `rtqual advise` checks that differ between bundles, read from
each bundle's recorded host facts (facts-before.json, tuning-before.json)."""

import json
import shutil
from pathlib import Path

from rtqual import cli
from rtqual.answers.advice.advise import SETTINGS, settings
from rtqual.answers.compare import settings_differ, settings_text
from rtqual.measure.host import facts, tuning

DATA = Path(__file__).resolve().parents[1] / "data"
FROZEN = DATA / "bundles" / "ioc"  # no checksums: a copy may be edited


def copy(tmp_path: Path, name: str, edit=None, tuning: dict | None = None) -> Path:
    """A copy of the frozen ioc bundle with its facts edited (edit(facts)) and a tuning-before.json."""
    b = tmp_path / name
    shutil.copytree(FROZEN, b)
    f = json.loads((b / "host/facts-before.json").read_text())
    if edit:
        edit(f)
    (b / "host/facts-before.json").write_text(json.dumps(f))
    if tuning is not None:
        (b / "host/tuning-before.json").write_text(json.dumps(tuning))
    return b


def tuned(f: dict) -> None:
    f["sched"]["rt_runtime_us"] = -1
    f["cmdline"]["rt_options"]["isolcpus"] = "1"


def run(capsys, *argv) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().out


def test_settings_of_a_recorded_host_name_each_check():
    tree = str(DATA / "hosts" / "vm")
    values = settings(facts.collect(root=tree), tuning.tuning(tree))
    assert values["rt-throttling"] == "950000" and values["isolcpus"] == "none" and values["threadirqs"] == "off"
    assert set(values) <= set(SETTINGS) and {"thp", "watchdog", "timer-migration", "clocksource"} <= set(values)
    assert settings(None, None) == {}


def test_compare_names_the_settings_that_differ(tmp_path, capsys):
    a = copy(tmp_path, "before", tuning={"memory": {"thp": "always"}})
    b = copy(tmp_path, "after", tuned, tuning={"memory": {"thp": "never"}, "workqueue_cpumask": "1"})
    code, out = run(capsys, "compare", a, b)
    assert code == 0
    assert "settings that differ: isolcpus (none → 1), rt-throttling (950000 → -1), thp (always → never)" in out
    assert "workqueue" not in out  # recorded in B only: unknown in A is not a difference
    code, out = run(capsys, "compare", a, b, "--json")
    assert json.loads(out)["settings_differ"] == [
        {"id": "isolcpus", "check": "isolcpus", "a": "none", "b": "1"},
        {"id": "rt-throttling", "check": "rt-throttling", "a": "950000", "b": "-1"},
        {"id": "thp", "check": "thp", "a": "always", "b": "never"},
    ]


def test_compare_of_three_and_the_html_name_each_bundle(tmp_path, capsys):
    a, b, c = copy(tmp_path, "a"), copy(tmp_path, "b", tuned), copy(tmp_path, "c")
    code, out = run(capsys, "compare", a, b, c, "--report", tmp_path / "cmp.html")
    assert code == 0 and "settings that differ: isolcpus (A none, B 1, C none), rt-throttling (A 950000" in out
    html = (tmp_path / "cmp.html").read_text()
    table = html.split('id="differences"')[1].split("</table>")[0]
    assert "rt-throttling" in table and "950000" in table and "-1" in table
    code, out = run(capsys, "compare", a, c, "--json")
    assert json.loads(out)["settings_differ"] == [] and "settings that differ" not in run(capsys, "compare", a, c)[1]


def test_settings_text_is_empty_when_nothing_differs():
    same = {"facts": {"sched": {"rt_runtime_us": 1}}}
    assert settings_differ([same, same]) == [] and settings_text([]) == ""

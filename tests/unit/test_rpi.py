"""A Raspberry Pi 4's own facts, read from a recorded tree (tests/data/environment/rpi-throttled, the formats of
the Raspberry Pi documentation: get_throttled's flag word, thermal_zone0's milli-degrees, cmdline.txt) through
the same root-relative readers as every host fact: the firmware's throttled state now and since boot, the SoC
temperature before and after a case, the firmware's cmdline file, cpufreq limits; in the facts, their door,
`rtqual host`'s rows, show's sentences and caveats, and advise's blocker with its fix."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import seal
from rtqual import cli
from rtqual.answers import caveats
from rtqual.answers import environment as env
from rtqual.answers.advice import advise
from rtqual.measure.host import facts as hf
from rtqual.measure.host import tuning
from rtqual.measure.host.sampler import Sampler
from rtqual.publish.hostview import host_rows
from rtqual.publish.views import temperature_line
from rtqual.results.bundle import schema
from rtqual.results.facts import decode_throttled, parse_throttled

TREE = Path(__file__).resolve().parents[1] / "data" / "environment" / "rpi-throttled"
FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"
THROTTLED = "sys/devices/platform/soc/soc:firmware/get_throttled"
TEMP = "sys/class/thermal/thermal_zone0/temp"


def pi_tree(tmp_path: Path, throttled: str | None = None, **files: str) -> Path:
    """A copy of the recorded Pi 4 with another flag word or other files (relative path -> text)."""
    root = tmp_path / "pi"
    shutil.copytree(TREE, root)
    for rel, text in {**({THROTTLED: throttled} if throttled is not None else {}), **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    "text,flags",
    [("throttled=0x50005", 0x50005), ("50005\n", 0x50005), ("0", 0), ("throttled=0x0", 0), ("", None), ("hot", None)],
)
def test_flag_word_as_vcgencmd_and_sysfs_print_it(text, flags):
    assert parse_throttled(text) == flags


def test_bits_decode_as_the_documentation_tables_them():
    assert decode_throttled(0x50005) == {
        "flags_hex": "0x50005",
        "now": ["under-voltage", "throttled"],
        "since_boot": ["under-voltage", "throttled"],
    }
    assert decode_throttled(0x80008)["now"] == ["soft temperature limit"] == decode_throttled(0x80008)["since_boot"]
    assert decode_throttled(0x20002)["now"] == ["ARM frequency capped"]
    assert decode_throttled(0) == {"flags_hex": "0x0", "now": [], "since_boot": []}
    assert decode_throttled(None) is None


def test_facts_of_the_recorded_pi():
    facts = hf.collect(TREE)
    pi = facts["rpi"]
    assert pi["model"] == "Raspberry Pi 4 Model B Rev 1.1"
    assert pi["throttled"] == {
        "flags_hex": "0x50005",
        "now": ["under-voltage", "throttled"],
        "since_boot": ["under-voltage", "throttled"],
        "source": "/sys/devices/platform/soc/soc:firmware/get_throttled",
    }
    assert pi["soc_temp_c"] == 82.374
    assert pi["firmware_cmdline"]["path"] == "/boot/firmware/cmdline.txt"
    assert pi["firmware_cmdline"]["text"].endswith("rootwait isolcpus=3 nohz_full=3 rcu_nocbs=3")
    cpu0 = facts["cpu"]["per_cpu"][0]
    limits = (cpu0["governor"], cpu0["scaling_min_freq_khz"], cpu0["scaling_max_freq_khz"])
    assert limits == ("ondemand", 600000, 1500000)
    assert facts["cmdline"]["rt_options"]["isolcpus"] == "3"  # this boot's, the firmware's additions included
    repaired, found = schema.check(schema.FACTS, json.loads(json.dumps(facts)))
    assert found == [] and repaired["rpi"] == pi


def test_older_boot_layout_and_other_boards(tmp_path):
    root = pi_tree(tmp_path)
    (root / "boot/firmware/cmdline.txt").rename(root / "boot/cmdline.txt")
    assert hf.collect(root)["rpi"]["firmware_cmdline"]["path"] == "/boot/cmdline.txt"
    (root / "boot/cmdline.txt").unlink()
    (root / THROTTLED).unlink()
    facts = hf.collect(root)
    assert facts["rpi"]["firmware_cmdline"] is None and facts["rpi"]["throttled"] is None
    assert {"rpi.firmware_cmdline", "rpi.throttled"} <= {u["fact"] for u in facts["unavailable"]}
    (root / "proc/device-tree/model").write_text("Pine64 RockPro64 v2.1\x00")
    assert hf.collect(root)["rpi"] is None


def test_a_bad_flag_word_is_unknown_not_zero(tmp_path):
    facts = hf.collect(pi_tree(tmp_path, throttled="throttled=lots"))
    assert facts["rpi"]["throttled"] is None
    assert any(u["fact"] == "rpi.throttled" and "not a flag word" in u["reason"] for u in facts["unavailable"])
    damaged = json.loads(json.dumps(hf.collect(TREE)))
    damaged["rpi"]["throttled"]["flags_hex"] = "0x50005; reboot"
    _, found = schema.check(schema.FACTS, damaged)
    assert [path for path, _ in found] == ["rpi.throttled.flags_hex"]


def test_host_rows_say_the_firmware_state_and_the_cpufreq_range():
    rows = dict(host_rows(hf.collect(TREE)))
    assert rows["Raspberry Pi firmware"] == (
        "Raspberry Pi 4 Model B Rev 1.1: get_throttled 0x50005: now under-voltage, throttled; "
        "since boot under-voltage, throttled; SoC 82.374 °C"
    )
    assert rows["Firmware cmdline"].startswith("/boot/firmware/cmdline.txt: console=serial0,115200")
    assert rows["cpufreq range"] == "600-1500 of 600-1500 MHz (all)"
    assert rows["Governor/frequency"] == "ondemand, 600 MHz (all)"


def test_throttled_before_the_run_is_a_host_sentence_and_caveat(tmp_path):
    e = env.environment(hf.collect(TREE), [], {})
    assert e["firmware_throttled"]["now"] == ["under-voltage", "throttled"]
    said = env.host_sentences(e)
    assert said[0].startswith("measured on bare metal")
    assert said[-1].startswith(
        "the Raspberry Pi's firmware reported now under-voltage, throttled; since boot under-voltage, throttled "
        "before the run (get_throttled 0x50005)"
    )
    assert [c["kind"] for c in caveats.host_caveats(e)] == ["throttled"]
    clean = env.environment(hf.collect(pi_tree(tmp_path, throttled="0")), [], {})
    assert clean["firmware_throttled"]["flags_hex"] == "0x0"
    assert len(env.host_sentences(clean)) == 1 and caveats.host_caveats(clean) == []


def test_soc_temperature_before_and_after_a_case(tmp_path):
    root = pi_tree(tmp_path, **{TEMP: "48312\n"})
    sampler = Sampler(tmp_path / "s.jsonl", root=root, record=tmp_path / "environment.json", cpus=[3])
    sampler.begin()
    (root / TEMP).write_text("55104\n")
    sampler.finish()
    assert sampler.errors == 0, sampler.last_error
    record = json.loads((tmp_path / "environment.json").read_text())
    assert record["start"]["temps_c"] == {"cpu-thermal": 48.312} and record["end"]["temps_c"] == {"cpu-thermal": 55.104}
    _, found = schema.check(schema.ENVIRONMENT, json.loads(json.dumps(record)))
    assert found == []
    hs = {"temps_c": {"cpu-thermal": {"min": 48.312, "max": 56.0, "mean": 52.0}}}
    case = env.case_environment({"id": "1", "label": "timer idle", "loads": [], "host_samples": hs}, record)
    assert case["temperature_start_end"] == {"sensor": "cpu-thermal", "start_c": 48.312, "end_c": 55.104}
    assert temperature_line(case) == "temperature: cpu-thermal 48.312 °C at the start, 55.104 °C at the end (max 56 °C)"
    assert temperature_line(env.case_environment({"id": "1"}, None)) is None  # older bundles: no line


def run_advise(root: Path) -> dict:
    result = advise.advise(hf.collect(root=root), tuning.tuning(root), [3], None, None)
    return {f["id"]: f for f in result["findings"]}


@pytest.mark.parametrize(
    "flags,severity,power",
    [
        ("50005", "blocker", True),  # under-voltage and throttled now
        ("50000", "blocker", True),  # under-voltage since boot: the supply cannot carry the load
        ("4", "blocker", False),  # throttled now (heat)
        ("40000", "major", False),  # throttled since boot, not now
        ("0", "minor", True),  # nothing yet; the clock may still change (no force_turbo)
    ],
)
def test_advise_names_the_fix_in_words(tmp_path, flags, severity, power):
    pi = run_advise(pi_tree(tmp_path, throttled=flags))["rpi"]
    assert pi["severity"] == severity
    assert ("power supply" in pi["fix"]) is power
    assert "cooling" in pi["fix"] and "force_turbo=1" in pi["fix"]


def test_advise_fix_holds_no_text_of_the_tree(tmp_path):
    root = pi_tree(
        tmp_path,
        **{
            "proc/device-tree/model": "Raspberry Pi 4 $(reboot)\x00",
            "boot/firmware/config.txt": "arm_freq=1800\n",
        },
    )
    pi = run_advise(root)["rpi"]
    assert "$(reboot)" in pi["evidence"][0]  # evidence quotes what was read
    assert "$(reboot)" not in pi["fix"] + pi["check"] and "/boot/firmware/config.txt" in pi["fix"]


def run(capsys, *argv) -> str:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def pi_bundle(tmp_path: Path) -> Path:
    """The frozen timer bundle as a throttled Pi 4's: its facts' `rpi` from the recorded tree, its case's
    environment record with the SoC temperature at the start and end."""
    b = tmp_path / "pi-bundle"
    shutil.copytree(FROZEN / "timer-raw", b)
    facts = json.loads((b / "host/facts-before.json").read_text())
    facts["rpi"] = hf.collect(TREE)["rpi"]
    (b / "host/facts-before.json").write_text(json.dumps(facts))
    point = {"cpu_ticks": {}, "throttled": 0x50005}
    record = {
        "cpus": [0],
        "start": {**point, "temps_c": {"cpu-thermal": 48.3}},
        "end": {**point, "temps_c": {"cpu-thermal": 55.1}},
    }
    (b / "cases/001-timer/environment.json").write_text(json.dumps(record))
    return seal(b)


def test_show_json_and_report_of_a_pi_bundle(tmp_path, capsys):
    b = pi_bundle(tmp_path)
    text = run(capsys, "show", b)
    assert "temperature: cpu-thermal 48.3 °C at the start, 55.1 °C at the end" in text
    assert "the Raspberry Pi's firmware reported now under-voltage, throttled; since boot" in text
    doc = json.loads(run(capsys, "show", b, "--json"))
    assert doc["environment"]["firmware_throttled"]["flags_hex"] == "0x50005"
    assert {c["kind"] for c in doc["cases"][0]["qualifiers"]["caveats"]} >= {"throttled"}
    run(capsys, "report", b, "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "Raspberry Pi firmware" in page and "Temperature: cpu-thermal 48.3 °C at the start" in page

"""Scenario files: validation with key paths, matrix expansion, scale, plans, JSON Schema, presets."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtqual import cli, scenario
from rtqual.errors import RtqError
from rtqual.scenario import model, plan, schema, single

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted((ROOT / "scenarios").glob("*.toml"))
CPUS = [0, 1, 2, 3]
MS, S = 1_000_000, 1_000_000_000


def load(text: str) -> dict:
    return scenario.loads(text, "x.toml")


def expand(text: str, **kw) -> list[dict]:
    return scenario.expand(load(text), cpus=kw.pop("cpus", CPUS), **kw)


def error(text: str, **kw) -> str:
    with pytest.raises(RtqError) as e:
        expand(text, **kw)
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# --- presets --------------------------------------------------------------------------------------


def test_presets_exist():
    assert {p.name for p in PRESETS} >= {"quick.toml", "kek-rpi-2020.toml"}


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.name)
def test_preset_validates_and_expands(path):
    sc = scenario.load(path)
    cases = scenario.expand(sc, cpus=CPUS)
    assert cases and len({c["id"] for c in cases}) == len(cases) == len({c["label"] for c in cases})
    json.dumps(scenario.plan_json(cases, sc))


def test_quick_is_about_a_minute_and_a_half():
    cases = scenario.expand(scenario.load(ROOT / "scenarios/quick.toml"), cpus=CPUS)
    assert [c["label"] for c in cases] == ["idle", "hackbench", "cpu-hog", "ioc idle", "ioc hackbench"]
    assert [c["load_names"] for c in cases] == [[], ["hackbench"], ["cpu-hog"], [], ["hackbench"]]
    assert all(c["params"]["interval_ns"] == MS and c["params"]["cpus"] == CPUS for c in cases[:3])
    assert [c["service"]["type"] for c in cases[3:]] == ["ioc", "ioc"]
    assert 60 * S <= scenario.total_ns(cases) <= 120 * S


def test_kek_reproduces_the_study():
    cases = scenario.expand(scenario.load(ROOT / "scenarios/kek-rpi-2020.toml"), cpus=CPUS)
    by = {c["label"]: c for c in cases}
    assert [label for label in by if label.startswith("stress")] == [
        "stress idle",
        "stress hackbench",
        "stress cat-dev-zero",
        "stress pi_stress",
    ]
    assert by["stress cat-dev-zero"]["loads"] == [{"name": "cat-dev-zero", "type": "cpu-hog", "instances": 1}]
    assert [by[f"frequency {f}MHz"]["conditions"]["frequency_khz"] for f in (600, 750, 1000, 1500)] == [
        600_000,
        750_000,
        1_000_000,
        1_500_000,
    ]
    assert by["runtime 10m"]["params"]["duration_ns"] == 600 * S
    assert by["runtime 50m"]["params"]["duration_ns"] == 3000 * S
    p = by["stress idle"]["params"]
    assert (p["cpus"], p["policy"], p["priority"], p["interval_ns"], p["warmup"]) == ([0], "fifo", 80, 10 * MS, 0)
    assert by["stress idle"]["conditions"] == {"settle_ns": 0, "frequency_khz": 600_000}
    assert by["stress hackbench"]["conditions"]["settle_ns"] == 2 * S


def test_kek_scaled_to_a_tenth():
    sc = scenario.load(ROOT / "scenarios/kek-rpi-2020.toml")
    full, tenth = scenario.expand(sc, cpus=CPUS), scenario.expand(sc, scale=0.1, cpus=CPUS)
    assert [c["label"] for c in full] == [c["label"] for c in tenth]
    assert [c["id"] for c in full] == [c["id"] for c in tenth]
    assert {c["label"]: c["params"]["duration_ns"] for c in tenth}["runtime 50m"] == 300 * S
    assert scenario.total_ns(tenth) < scenario.total_ns(full) / 8


# --- bad files: one line with file and key path ---------------------------------------------------

CASE = '[[case]]\nprobe = "timer"\n'
BAD = [
    ("[rn]\nname = 'x'\n" + CASE, "x.toml: unknown key 'rn' (did you mean 'run'?)"),
    (
        CASE + CASE + '[case.params]\nintervall = "1ms"\n',
        "x.toml: case[2].params: unknown key 'intervall' (did you mean 'interval'?)",
    ),
    (
        CASE + '[case.params]\ninterval = "10"\n',
        "x.toml: case[1].params.interval: '10' is not a duration (use a unit: 500us",
    ),
    (CASE + "[case.params]\ninterval = 10\n", "case[1].params.interval: '10' is not a duration"),
    (
        CASE + "[case.params]\ninterval = [1]\n",
        "case[1].params.interval: expected a duration such as '1ms', got an array",
    ),
    (CASE + '[case.params]\ninterval = "5us"\n', "case[1].params.interval: must be between 10us and 10s (got 5us)"),
    (CASE + '[case.params]\npriority = "80"\n', "case[1].params.priority: expected an integer, got a string"),
    (CASE + "[case.params]\npriority = 100\n", "case[1].params.priority: must be between 1 and 99 (got 100)"),
    (
        CASE + '[case.params]\npolicy = "fifi"\n',
        "case[1].params.policy: 'fifi' is not one of fifo, rr, other, deadline (did you mean 'fifo'?)",
    ),
    (CASE + '[case.params]\ncpus = "0-x"\n', "case[1].params.cpus: '0-x' is not a CPU list"),
    (CASE + '[case.params]\ncpus = "3-1"\n', "case[1].params.cpus: bad range '3-1'"),
    (CASE + '[case.params]\ncpus = "0-99999999999"\n', "case[1].params.cpus: '0-99999999999' is not a CPU list"),
    (CASE + "[case.params]\ncpus = [0, -1]\n", "case[1].params.cpus: expected CPU numbers"),
    (CASE + '[case.params]\nduration = "1s"\nloops = 5\n', "case[1].params: 'duration' and 'loops' exclude each other"),
    (CASE + "label = 3\n", "case[1].label: expected a string, got an integer"),
    (CASE + 'probe = "timr"\n', "x.toml:3:15: invalid TOML: Cannot overwrite a value"),  # duplicate key is a TOML error
    ('[[case]]\nprobe = "timr"\n', "case[1].probe: 'timr' is not one of timer, "),
    (
        CASE + 'conditions = {governor = "performnce"}\n',
        "case[1].conditions.governor: 'performnce' is not one of performance",
    ),
    (CASE + 'conditions = {frequency = "600"}\n', "case[1].conditions.frequency: '600' is not a frequency (use a unit"),
    (CASE + 'conditions = {frequency = "1.0000001GHz"}\n', "not a whole number of kHz"),
    (
        CASE + 'conditions = {cpuset = {cpus = "1", for = "probe"}}\n',
        "case[1].conditions.cpuset: unknown key 'cpus' (known: probe, loads)",
    ),
    (CASE + 'loads = ["hackbnch"]\n', "case[1].loads[1]: unknown load 'hackbnch' (did you mean 'hackbench'?)"),
    (CASE + 'loads = "hackbench"\n', "case[1].loads: expected an array of load names or load tables, got a string"),
    (CASE + "loads = [{cpus = 1}]\n", "case[1].loads[1]: missing 'type'"),
    ('[loads.heavy]\nkind = "hackbench"\n' + CASE, "x.toml: loads.heavy: missing 'type'"),
    ('[loads.idle]\ntype = "hackbench"\n' + CASE, "loads.idle: 'idle' is reserved"),
    ("[matrix]\ninterval = []\n", "x.toml: matrix.interval: expected a non-empty array of values"),
    (
        '[matrix]\ninterval = "1ms"\n',
        "matrix.interval: expected a non-empty array of values, e.g. interval = [a, b], got a string",
    ),
    ('[matrix]\nintervall = ["1ms"]\n', "x.toml: matrix: unknown key 'intervall' (did you mean 'interval'?)"),
    ('[matrix]\ninterval = ["1ms", "2"]\n', "matrix.interval[2]: '2' is not a duration"),
    ('[matrix]\ninterval = ["1ms", "1ms"]\n', "matrix.interval[2]: '1ms' is listed twice"),
    ('[matrix]\nload = ["idle", "hakbench"]\n', "matrix.load[2]: unknown load 'hakbench' (did you mean 'hackbench'?)"),
    ('[matrix]\nfrequency = ["600MHz", 600]\n', "matrix.frequency[2]: '600' is not a frequency"),
    ('[matrix]\nduration = ["1s"]\nloops = [5]\n', "matrix: 'duration' and 'loops' exclude each other"),
    ('[matrix]\nlabel = "x"\n', "matrix: no parameter to vary"),
    (
        '[[matrix]]\ninterval = ["1ms"]\n[[matrix]]\nbase.params.prio = 1\ninterval = ["1ms"]\n',
        "matrix[2].base.params: unknown key 'prio' (did you mean 'priority'?)",
    ),
    ("matrix = 3\n", "matrix: expected a table ([matrix]) or an array of tables ([[matrix]]), got an integer"),
    ('[case]\nprobe = "timer"\n', "case: expected an array of tables ([[case]]), got a table"),
    ('[run]\nname = "quick"\n', "x.toml: no cases: add [[case]] tables or a [matrix]"),
    ("[run]\nscale = 0\n" + CASE, "run.scale: must be between 0.001 and 1000 (got 0)"),
    ('[defaults]\nparams = {interval = "1ms"}\n' + CASE, "defaults: unknown key 'params'"),
    ('[defaults.timer]\ninterval = "1"\n' + CASE, "defaults.timer.interval: '1' is not a duration"),
    ('[run]\nname = "x"\n[run]\nname = "y"\n', "x.toml:3:5: invalid TOML: Cannot declare ('run',) twice"),
    ('[[case]]\nprobe = "timer\n', "x.toml:2:"),
    ("[[case]\n", "x.toml:1:"),
    ("a = [1,\n", "x.toml:2:"),
    (CASE + CASE, "x.toml: cases 1 and 2 are both labelled 'idle 1ms'"),
    (
        CASE + 'conditions = {cpuset = {probe = "1"}}\nparams = {cpus = "0-1"}\n',
        "x.toml: case 1: cpus 0-1 are outside the probe cpuset 1",
    ),
]


@pytest.mark.parametrize("text,fragment", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_file_one_line_with_path(text, fragment):
    msg = error(text)
    assert fragment in msg, msg
    assert msg.startswith("x.toml")


def test_unreadable_and_binary_files(tmp_path):
    with pytest.raises(RtqError, match=r"nope.toml: cannot read scenario"):
        scenario.load(tmp_path / "nope.toml")
    f = tmp_path / "bin.toml"
    f.write_bytes(b"\xff\xfe[[case]]")
    with pytest.raises(RtqError, match=r"bin.toml: not UTF-8 text"):
        scenario.load(f)


@pytest.mark.parametrize(
    "table, message",
    [
        ('type = "hackbnch"', "load: unknown type 'hackbnch' (one of: hackbench, pi_stress, stress-ng, cpu-hog,"),
        ('type = "hackbench"\ngroups = 0', "load 'hackbench': option 'groups' must be in 1..10000, got 0"),
        ('type = "cpu-hog"\npriority = 5', "load 'cpu-hog': priority applies to policy fifo or rr only"),
        ('type = "network"\ninstances = 2', "load 'network': option 'instances' does not apply"),
        ('type = "network"\nname = "n"\nrate = 0', "load 'n': rate 0 (unpaced) is for mode tcp only; give packets/s"),
        ('type = "network"\npeer = "10.0.0.1"', "load 'network': interface and peer go together"),
        ('type = "network"\narp_rate = 5', "load 'network': arp_rate applies to mode broadcast only"),
        ('type = "inject"\nstall = "1s"', "load 'inject': stall must be in 100us..200ms (got 1s)"),
        ('type = "inject"\ngap = "5"', "load 'inject': gap: '5' is not a duration"),
        ('type = "pi_stress"\ncpus = "1"', "load 'pi_stress': option 'cpus' is not supported: pi_stress pins"),
        ('type = "stress-ng"\nstressor = "cpu; rm"', "load 'stress-ng': 'cpu; rm' is not a stressor name"),
        ('type = "command"', "load 'command': option 'argv' is required"),
    ],
)
def test_load_tables_are_checked_in_full(table, message):
    """Every check of a load table that needs no host runs when the scenario is read (rtqual.loadspec)."""
    assert error(f"[loads.h]\n{table}\n" + CASE).startswith(f"x.toml: loads.h: {message}")


def test_scenario_checks_loads_without_their_drivers():
    """Reading a scenario checks its loads in full and imports no driver (rtqual.measure.loads)."""
    code = (
        "import sys\nfrom rtqual import scenario\ntry:\n    scenario.loads(sys.argv[1], 'x.toml')\n"
        "except Exception as e:\n    print(e)\nprint('rtqual.measure.loads' in sys.modules)"
    )
    bad = '[loads.h]\ntype = "network"\nrate = 0\n' + CASE + 'loads = ["h"]\n'
    out = subprocess.run([sys.executable, "-c", code, bad], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == [
        "x.toml: loads.h: load 'network': rate 0 (unpaced) is for mode tcp only; give packets/s",
        "False",
    ], out.stderr


# --- expansion, labels, scale ---------------------------------------------------------------------

MATRIX = """
[run]
name = "m"
[defaults.timer]
duration = "1m"
[loads.heavy]
type = "hackbench"
[matrix]
load = ["idle", "heavy"]
interval = ["1ms", "10ms", "20ms"]
frequency = ["600MHz", "1.5GHz"]
governor = ["performance"]
base.params.priority = 90
"""


def test_matrix_cartesian_product_and_labels():
    cases = expand(MATRIX)
    assert len(cases) == 12
    assert cases[0]["label"] == "idle 1ms 600MHz"  # constant axis (governor) left out of labels
    assert cases[-1]["label"] == "heavy 20ms 1500MHz"
    assert cases[-1]["id"] == "012-heavy-20ms-1500mhz"
    assert [c["id"][:3] for c in cases] == [f"{i:03d}" for i in range(1, 13)]
    c = cases[7]
    assert c["label"] == "heavy 1ms 1500MHz"
    assert c["params"]["priority"] == 90 and c["params"]["interval_ns"] == MS and c["params"]["duration_ns"] == 60 * S
    assert c["conditions"] == {"settle_ns": 2 * S, "governor": "performance", "frequency_khz": 1_500_000}
    assert c["loads"] == [{"name": "heavy", "type": "hackbench"}] and c["load_names"] == ["heavy"]
    assert "--priority" in c["args"] and c["args"][c["args"].index("--interval") + 1] == "1000000ns"


def test_matrix_single_values_label_all_and_prefix():
    cases = expand(
        '[[matrix]]\nlabel = "base"\ninterval = ["2ms"]\npriority = [70]\n'
        '[[matrix]]\nload = [["hackbench", "cpu-hog"], "idle"]\n'
    )
    assert [c["label"] for c in cases] == ["base 2ms priority 70", "hackbench+cpu-hog", "idle"]
    assert cases[1]["loads"] == [{"type": "hackbench"}, {"type": "cpu-hog"}]


LAYERS = """
[defaults]
loads = ["hackbench"]
conditions = {governor = "performance", settle = "5s"}
[defaults.timer]
loops = 1000
interval = "2ms"
[[case]]
label = "mine"
params = {duration = "3s"}
conditions = {frequency = "1GHz"}
[[case]]
loads = []
[matrix]
base.params.cpus = "1"
duration = ["10s"]
"""


def test_layers_defaults_base_case():
    a, b, m = expand(LAYERS)
    assert a["label"] == "mine" and a["params"]["duration_ns"] == 3 * S and a["params"]["loops"] == 0
    assert a["conditions"] == {"settle_ns": 5 * S, "governor": "performance", "frequency_khz": 1_000_000}
    assert b["label"] == "idle 2ms performance" and b["params"]["loops"] == 1000 and b["loads"] == []
    assert b["params"]["duration_ns"] == 2 * S and b["conditions"]["settle_ns"] == 0
    assert m["params"]["cpus"] == [1] and m["params"]["loops"] == 0 and m["load_names"] == ["hackbench"]


def test_cpuset_probe_is_the_default_cpus():
    (c,) = expand(CASE + 'conditions = {cpuset = {probe = "2-3", loads = "0-1"}}\n')
    assert c["params"]["cpus"] == [2, 3]
    assert c["conditions"]["cpuset"] == {"probe": [2, 3], "loads": [0, 1]}


@pytest.mark.parametrize(
    "params,scale,want",
    [
        ('duration = "10m"', 0.1, {"duration_ns": 60 * S}),
        ('duration = "10m"', 2, {"duration_ns": 1200 * S}),
        ('duration = "10s"', 0.01, {"duration_ns": 1 * S}),  # floor: 1 s
        ('duration = "500ms"', 0.1, {"duration_ns": 500 * MS}),  # never longer than asked
        ('duration = "100s"\ninterval = "1s"', 0.01, {"duration_ns": 10 * S}),  # floor: 10 intervals
        ('duration = "10s"', 1 / 3, {"duration_ns": 3333 * MS}),  # rounded to ms
        ('loops = 10000\ninterval = "10ms"', 0.1, {"loops": 1000, "duration_ns": 10 * S}),
        ('loops = 10000\ninterval = "10ms"', 0.0001, {"loops": 100}),  # floor: 1 s of periods
        ('loops = 5\ninterval = "10ms"', 0.01, {"loops": 5}),
    ],
)
def test_scale(params, scale, want):
    (c,) = expand(f"[defaults.timer]\n{params}\n" + CASE, scale=scale)
    assert {k: c["params"][k] for k in want} == want
    assert c["scale"] == scale


def test_scale_from_run_and_rejected_values():
    (c,) = expand('[run]\nscale = 0.5\n[defaults.timer]\nduration = "1m"\n' + CASE)
    assert c["params"]["duration_ns"] == 30 * S
    for bad in (0, -1, 1e9, float("nan")):
        assert "--scale" in error(CASE, scale=bad)


def test_case_matches_rtqual_run_timer():
    """The scenario path builds exactly what `rtqual run timer` builds for the same options."""
    argv = [
        "run",
        "timer",
        "--cpus",
        "0",
        "--policy",
        "rr",
        "--priority",
        "70",
        "--interval",
        "2ms",
        "--loops",
        "50",
        "--warmup",
        "7",
        "--threshold",
        "50us",
        "--max-latency",
        "1ms",
        "--p99-latency",
        "200us",
        "--no-dma-latency",
    ]
    want = single.probe_options_case("timer", cli.build_parser().parse_args(argv))
    (got,) = expand(
        CASE + 'params = {cpus = "0", policy = "rr", priority = 70, interval = "2ms", loops = 50, '
        'warmup = 7, threshold = "50us", max_latency = "1ms", p99_latency = "200us", '
        "no_dma_latency = true}\n"
    )
    for key in ("probe", "args", "params", "requirements"):
        assert got[key] == want[key], key
    one = scenario.probe_case(
        "timer",
        scenario.check_params(
            "timer",
            {
                "cpus": "0",
                "policy": "rr",
                "priority": 70,
                "interval": "2ms",
                "loops": 50,
                "warmup": 7,
                "threshold": "50us",
                "max_latency": "1ms",
                "p99_latency": "200us",
                "no_dma_latency": True,
            },
            "",
        ),
        [0],
        "001-timer",
    )
    assert one == want


def test_check_params_cli_names():
    with pytest.raises(RtqError, match=r"^--max-latency: 'x' is not a duration"):
        scenario.check_params("timer", {"max_latency": "x"}, "", name_of=lambda k: "--" + k.replace("_", "-"))


# --- plan views -----------------------------------------------------------------------------------


def test_plan_text_shows_cases_and_total():
    sc = load(MATRIX)
    cases = scenario.expand(sc, cpus=CPUS)
    text = scenario.plan_text(cases, scenario.plan_title(sc))
    lines = text.splitlines()
    assert lines[0] == "x.toml (m)"
    assert lines[1].split() == ["id", "label", "probe", "loads", "conditions", "interval", "duration", "time"]
    assert "001-idle-1ms-600mhz" in text and "performance 1500MHz" in text
    total = scenario.total_ns(cases)
    assert total == 12 * (60 * S + 3 * S) + 6 * 2 * S + 4 * 100 * (1 + 10 + 20) * MS
    assert lines[-1].startswith(f"12 cases, about {plan.format_hms(total)} in total (12m00s measuring")
    assert "scaled by 0.1" in scenario.plan_text(scenario.expand(sc, scale=0.1, cpus=CPUS))


def test_plan_json_is_plain_json():
    sc = load(MATRIX)
    doc = json.loads(json.dumps(scenario.plan_json(scenario.expand(sc, cpus=CPUS), sc)))
    assert doc["schema_version"] == 1 and doc["name"] == "m" and len(doc["cases"]) == 12
    assert set(doc["cases"][0]) >= {"id", "label", "probe", "args", "params", "requirements", "loads", "conditions"}


@pytest.mark.parametrize(
    "ns,text",
    [
        (0, "0s"),
        (45 * S, "45s"),
        (150 * S, "2m30s"),
        (3900 * S, "1h05m"),
        (3905 * S, "1h05m05s"),
        (180000 * S, "2d02h"),
    ],
)
def test_format_hms(ns, text):
    assert plan.format_hms(ns) == text


# --- JSON Schema ----------------------------------------------------------------------------------


def test_schema_file_is_up_to_date():
    committed = (ROOT / "docs/scenario.schema.json").read_text()
    assert committed == schema.schema_text(), "regenerate: python -m rtqual.scenario.schema > docs/scenario.schema.json"


def schema_errors(s: dict, v, root: dict, path: str = "$") -> list[str]:
    """A small JSON Schema subset (the keywords schema.py emits), enough to check documents against it."""
    errs = []
    if "$ref" in s:
        errs += schema_errors(root["$defs"][s["$ref"].rsplit("/", 1)[1]], v, root, path)
    if "anyOf" in s and all(schema_errors(x, v, root, path) for x in s["anyOf"]):
        errs.append(f"{path}: matches nothing in anyOf")
    if "not" in s and not schema_errors(s["not"], v, root, path):
        errs.append(f"{path}: matches 'not'")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}
    t = s.get("type")
    if t and (not isinstance(v, types[t]) or (t in ("integer", "number") and isinstance(v, bool))):
        return errs + [f"{path}: not {t}"]
    if "enum" in s and v not in s["enum"]:
        errs.append(f"{path}: not in enum")
    if "const" in s and v != s["const"]:
        errs.append(f"{path}: not const")
    if "pattern" in s and isinstance(v, str) and not re.search(s["pattern"], v):
        errs.append(f"{path}: pattern")
    if "minimum" in s and v < s["minimum"] or "maximum" in s and v > s["maximum"]:
        errs.append(f"{path}: range")
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0):
            errs.append(f"{path}: minItems")
        for i, x in enumerate(v):
            errs += schema_errors(s.get("items", {}), x, root, f"{path}[{i}]")
    if isinstance(v, dict):
        errs += [f"{path}: missing {k}" for k in s.get("required", []) if k not in v]
        for k, x in v.items():
            if "propertyNames" in s:
                errs += schema_errors(s["propertyNames"], k, root, f"{path}.{k}(name)")
            if k in s.get("properties", {}):
                errs += schema_errors(s["properties"][k], x, root, f"{path}.{k}")
            elif s.get("additionalProperties") is False:
                errs.append(f"{path}: additional property {k}")
            elif isinstance(s.get("additionalProperties"), dict):
                errs += schema_errors(s["additionalProperties"], x, root, f"{path}.{k}")
    return errs


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.name)
def test_presets_match_the_json_schema(path):
    import tomllib

    root = schema.json_schema()
    assert schema_errors(root, tomllib.loads(path.read_text()), root) == []


@pytest.mark.parametrize(
    "text",
    [
        MATRIX,
        CASE + 'params = {cpus = [0, 1]}\nloads = ["hackbench", {type = "cpu-hog"}]\n'
        'conditions = {cpuset = {probe = 1}, frequency = "1.5GHz"}\n',
    ],
)
def test_valid_files_match_the_json_schema(text):
    import tomllib

    root = schema.json_schema()
    assert schema_errors(root, tomllib.loads(text), root) == []


@pytest.mark.parametrize(
    "text",
    [
        '[matrix]\nintervall = ["1ms"]\n',
        CASE + 'params = {interval = "10"}\n',
        "[matrix]\ninterval = []\n",
        CASE + 'conditions = {governor = "fast"}\n',
        '[loads.idle]\ntype = "hackbench"\n',
        CASE + "loads = [{cpus = 1}]\n",
    ],
)
def test_bad_files_fail_the_json_schema_too(text):
    import tomllib

    root = schema.json_schema()
    assert schema_errors(root, tomllib.loads(text), root)


# --- never a traceback --------------------------------------------------------------------------

VOCAB = sorted(
    {
        *model.TOP,
        *model.RUN,
        *model.CASE,
        *model.DEFAULTS,
        *model.CONDITIONS,
        *model.CPUSET,
        *model.MATRIX,
        *model.axes("timer"),
        "type",
        "heavy",
        "x",
        "for",
        "cpus",
    }
)
SCALARS = st.one_of(
    st.sampled_from(
        [
            "1ms",
            "10",
            "600MHz",
            "1.5GHz",
            "0-3",
            "3-1",
            "0-7:2",
            "idle",
            "hackbench",
            "cpu-hog",
            "fifo",
            "timer",
            "performance",
            "",
            "2d",
            "0-99999",
            "heavy",
        ]
    ),
    st.integers(-3, 200),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=5),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(VOCAB), inner, max_size=4)),
    max_leaves=12,
)
DOCS = st.dictionaries(st.sampled_from(VOCAB), VALUES, max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS)
def test_fuzz_structures_only_rtqerror(doc):
    try:
        cases = scenario.expand(scenario.validate(doc, "f.toml"), cpus=CPUS)
        scenario.plan_text(cases)
    except RtqError as e:
        assert "\n" not in str(e) and str(e).startswith("f.toml")


def _paths(v, prefix=()):
    """Every key path of a parsed document (tables and arrays), for mutation."""
    yield prefix
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        yield from _paths(x, (*prefix, k))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_valid_files_only_rtqerror(data):
    """Valid files with one value replaced or one key added: deep paths, not just the first check."""
    import copy
    import tomllib

    doc = copy.deepcopy(tomllib.loads(data.draw(st.sampled_from([MATRIX, LAYERS, *[p.read_text() for p in PRESETS]]))))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(doc))[1:]))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            parent[data.draw(st.sampled_from(VOCAB))] = data.draw(VALUES)
        else:
            parent[path[-1]] = data.draw(VALUES)
    try:
        cases = scenario.expand(
            scenario.validate(doc, "f.toml"), scale=data.draw(st.sampled_from([None, 0.01, 3])), cpus=CPUS
        )
        scenario.plan_text(cases)
        json.dumps(scenario.plan_json(cases))
    except RtqError as e:
        assert "\n" not in str(e) and str(e).startswith("f.toml")


TOKENS = st.sampled_from(
    [
        "[",
        "]",
        "[[",
        "]]",
        "=",
        '"',
        "'",
        "\n",
        " ",
        ",",
        "{",
        "}",
        ".",
        "#",
        "1ms",
        "600MHz",
        "case",
        "matrix",
        "run",
        "params",
        "interval",
        "load",
        "loads",
        "conditions",
        "base",
        "idle",
        "hackbench",
        "true",
        "1",
        "1.5",
        "-",
        "defaults",
        "timer",
        "cpus",
        '"0-3"',
        '["1ms"]',
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=40).map("".join))
def test_fuzz_text_only_rtqerror(text):
    try:
        expand(text)
    except RtqError as e:
        assert "\n" not in str(e) and str(e).startswith("x.toml")


def test_every_key_is_documented():
    doc = (ROOT / "docs/scenario.md").read_text()
    tables = [model.RUN, model.CASE, model.CONDITIONS, model.CPUSET, model.MATRIX, scenario.PROBES["timer"].params]
    missing = [k for t in tables for k in t if f"`{k}`" not in doc]
    assert missing == []
    probes_doc = (ROOT / "docs/probes.md").read_text()  # native probes: their options, in probes.md
    missing = [
        (name, k)
        for name, p in scenario.PROBES.items()
        if name != "timer"
        for k in p.params
        if k not in ("max_latency", "p99_latency") and f"--{k.replace('_', '-')}" not in probes_doc
    ]
    assert missing == []

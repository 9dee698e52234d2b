"""What a capacity sweep measures: a probe with its params and loads, the one dimension raised, its range, the
requirements and each step's length. From a preset (`aps`, `kek`, `madoca`: the seeds' questions) or a sweep file
(TOML, docs/capacity.md), checked in full before anything runs (one line naming what is wrong).

    sw = from_preset("aps", dimension=None, ...)     # or from_file(path, ...)
    sw.case(value, index)                            # the plan case of one step (the dimension set to value)
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rtqual import loadspec
from rtqual.answers import planning
from rtqual.answers.requirements import Requirement, gather
from rtqual.capacity.sweep import Range, fmt
from rtqual.errors import RtqError
from rtqual.loadspec import load_name
from rtqual.probes.catalog import ALL_PROBES, S, check_params, probe_case
from rtqual.units import format_duration, online_cpus, parse_duration_ns

STEP_NS = 10 * S  # a step's measured time before --scale
LONGEST_STEP_NS = 60 * S  # a step lengthened to decide its requirements never runs longer (--longest-step)
SETTLE = "2s"  # the loads run this long before each step's probe starts


@dataclass(frozen=True)
class Dimension:
    """A load dimension: a probe parameter (records, put_rate, rate) or a load's option (hackbench.groups)."""

    name: str
    unit: str
    start: float
    ceiling: float
    factor: float = 2.0
    help: str = ""


@dataclass(frozen=True)
class Sweep:
    """One sweep, checked: its probe and params (as a scenario case gives them), loads, the dimension and range,
    the requirements every step is judged on, each step's measured time (and the longest it may be lengthened
    to, to decide the requirements) and the settle time of its loads."""

    name: str
    probe: str
    params: dict
    loads: list[dict]
    dim: Dimension
    range: Range
    require: list[Requirement]
    step_ns: int
    longest_ns: int
    settle: str = SETTLE
    profile: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def dimension(self) -> str:
        return self.dim.name

    def _load_of(self) -> tuple[int, str] | None:
        """(index of the load, option) when the dimension is a load's option ("hackbench.groups")."""
        kind, dot, option = self.dim.name.partition(".")
        if not dot:
            return None
        index = next((i for i, ld in enumerate(self.loads) if load_name(ld) == kind or ld["type"] == kind), None)
        return None if index is None else (index, option)

    def case(self, value: float, index: int) -> dict:
        """The plan case of one step: the dimension at `value`, measured for step_ns or as long as its
        requirements need (at most longest_ns: RtqError beyond), under the loads, judged on the requirements."""
        params, loads = dict(self.params), copy.deepcopy(self.loads)
        v = int(value) if float(value).is_integer() else value
        where = self._load_of()
        if where is None:
            params[self.dim.name] = v
        else:
            loads[where[0]][where[1]] = v
            try:
                loadspec.check(loads[where[0]])
            except RtqError as e:
                raise RtqError(f"capacity {self.name}: {self.dim.name} {fmt(value)}: {e}") from None
        timed = "duration" in ALL_PROBES[self.probe].params  # a probe without one (fake) runs its own length
        if timed:
            params["duration"] = f"{self.step_ns}ns"
        checked = check_params(self.probe, params, f"capacity {self.name}: params")
        case = probe_case(
            self.probe, checked, online_cpus(), f"{index:03d}-{self.dim.name}-{fmt(value)}".replace(",", "")
        )
        need = self._duration_needed(case, value)
        if timed and need > self.step_ns:
            checked = check_params(self.probe, {**params, "duration": f"{need}ns"}, f"capacity {self.name}: params")
            case = probe_case(self.probe, checked, online_cpus(), case["id"])
        case["label"] = f"{self.dim.name}={fmt(value)}: {case['label']}"
        case["capacity"] = {"dimension": self.dim.name, "value": value}
        if loads:
            case.update(loads=loads, load_names=[load_name(ld) for ld in loads])
            case["conditions"] = {"settle_ns": parse_duration_ns(self.settle, "settle")}
        case["require"] = list(self.require)
        if self.profile:
            case["profile"] = self.profile
        return case

    def _duration_needed(self, case: dict, value: float) -> int:
        """The measured time the requirements need at this step (0: any), or RtqError when more than longest_ns."""
        need = 0
        for req in self.require:
            plan = planning.requirement_plan(req, case["probe"], case["params"])
            if plan["decidable"] is not False:
                continue
            wanted = plan["duration_needed_ns"]
            if wanted is None or wanted > self.longest_ns:
                raise RtqError(
                    f"capacity {self.name}: requirement '{req.text}' cannot be judged at {self.dim.name} {fmt(value)} "
                    f"in a step of at most {format_duration(self.longest_ns)}: "
                    + planning.undecided_text(plan, case["probe"], case["params"])
                    + " (a longer --longest-step, another requirement)"
                )
            need = max(need, wanted)
        return need

    def check(self) -> None:
        """Every step can be built and judged: the cases of the start and the ceiling (one line otherwise)."""
        for value in (self.range.start, self.range.ceiling):
            self.case(value, 1)


# ---------------------------------------------------------------- presets

PRESETS: dict[str, dict] = {
    "aps": {
        "help": "rtqual's IOC, aps chain, under the APS CA load (seed 001): records 100..10,000 with CA put and "
        "monitor, or the put rate",
        "probe": "ioc",
        "params": {"preset": "aps", "rate": 500, "records": 1000, "put_rate": 1000, "ca_monitor": "yes"},
        "loads": [],
        "dimensions": [
            Dimension("records", "records", 100, 10_000, help="load records scanned and served over CA"),
            Dimension("put_rate", "puts/s", 100, 10_000, help="CA puts per second over the load records"),
        ],
        "profile": "aps-100us",
    },
    "kek": {
        "help": "rtqual's IOC, kek chain, under hackbench (seed 000/002): the stimulus rate 25 Hz..1 kHz, or the "
        "hackbench groups",
        "probe": "ioc",
        "params": {"preset": "kek", "rate": 25},
        "loads": [{"type": "hackbench", "groups": 2}],
        "dimensions": [
            Dimension("rate", "Hz", 25, 1000, help="IOC stimuli per second"),
            Dimension("hackbench.groups", "groups", 1, 32, help="hackbench groups beside the IOC"),
        ],
        "require": ["max < 20ms", "p50 <= 1ms"],
    },
    "madoca": {
        "help": "MADOCA-style messages (msg probe, ZeroMQ REQ/REP): the round-trip rate 500..100,000/s",
        "probe": "msg",
        "params": {"transport": "zmq-tcp"},
        "loads": [],
        "dimensions": [Dimension("rate", "round trips/s", 500, 100_000, help="message round trips per second")],
        "require": ["p99 <= 1ms"],
    },
}


def _range(dim: Dimension, c: Choices) -> Range:
    r = Range(
        float(c.start if c.start is not None else dim.start),
        float(c.ceiling if c.ceiling is not None else dim.ceiling),
        float(c.factor if c.factor is not None else dim.factor),
        confirm=1 if c.confirm is None else c.confirm,
    )
    problem = r.problem()
    if problem:
        raise RtqError(f"capacity: {dim.name}: {problem}")
    return r


def _dimension(name: str | None, dims: list[Dimension], where: str) -> Dimension:
    if name is None:
        return dims[0]
    found = next((d for d in dims if d.name == name), None)
    if found is None:
        raise RtqError(f"{where}: unknown dimension '{name}' (one of {', '.join(d.name for d in dims)})")
    return found


def _requirements(given: list[str] | None, profile: str | None, default: list[str], default_profile: str | None):
    """(requirements, profile): the ones given, else the preset's; at least one (a sweep needs a break)."""
    if given or profile:
        return gather(given, profile), profile
    return gather(default, default_profile), default_profile


@dataclass(frozen=True)
class Choices:
    """What the command line sets over a preset or a sweep file (None: the preset's or the file's own)."""

    dimension: str | None = None
    start: float | None = None
    ceiling: float | None = None
    factor: float | None = None
    require: list[str] | None = None
    profile: str | None = None
    scale: float | None = None
    step: str | None = None
    longest: str | None = None
    confirm: int | None = None


def from_preset(name: str, **given: Any) -> Sweep:
    """A preset's sweep with the user's choices (Choices) over it, checked."""
    c = Choices(**given)
    if name not in PRESETS:
        raise RtqError(f"capacity: unknown preset or file '{name}' (presets: {', '.join(PRESETS)}; a file: *.toml)")
    p = PRESETS[name]
    dim = _dimension(c.dimension, p["dimensions"], f"capacity {name}")
    texts, prof = _requirements(c.require, c.profile, p.get("require") or [], p.get("profile"))
    return _finish(
        Sweep(
            name,
            p["probe"],
            dict(p["params"]),
            copy.deepcopy(p["loads"]),
            dim,
            _range(dim, c),
            texts,
            STEP_NS,
            LONGEST_STEP_NS,
            profile=prof,
        ),  # fmt: skip
        c,
    )


def _finish(sw: Sweep, c: Choices) -> Sweep:
    """--step, --longest-step and --scale applied (scale shortens every step and the loads' settle, at least 1 s
    each), checked."""
    scale = c.scale
    step_ns = parse_duration_ns(c.step, "--step") if c.step else sw.step_ns
    longest_ns = parse_duration_ns(c.longest, "--longest-step") if c.longest else sw.longest_ns
    settle_ns = parse_duration_ns(sw.settle, "settle")
    if scale is not None:
        if not 0 < scale <= 100:
            raise RtqError(f"--scale {scale:g}: must be above 0 and at most 100")
        # the longest step is a bound, not a length: scaled steps are still lengthened to decide the requirements
        step_ns, settle_ns = (max(S, round(x * scale)) for x in (step_ns, settle_ns))
    if step_ns < S or longest_ns < step_ns:
        raise RtqError(
            f"capacity: a step of {format_duration(step_ns)}, at most {format_duration(longest_ns)}: want at least "
            "1s and --longest-step no shorter than --step"
        )
    sw = replace(sw, step_ns=step_ns, longest_ns=longest_ns, settle=f"{settle_ns}ns")
    sw.check()
    return sw


# ---------------------------------------------------------------- sweep files

FILE_KEYS = {"probe", "params", "loads", "dimension", "unit", "start", "ceiling", "factor", "requirements",
             "profile", "step", "longest_step", "settle"}  # fmt: skip


def from_file(path: str, **given: Any) -> Sweep:
    """A sweep file (TOML, one [sweep] table: docs/capacity.md), the command line's choices (Choices) over it,
    checked."""
    c = Choices(**given)
    try:
        doc = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise RtqError(f"{path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RtqError(f"{path}: not TOML ({e})") from None
    t = doc.get("sweep")
    if not isinstance(t, dict):
        raise RtqError(f"{path}: expected a [sweep] table (docs/capacity.md)")
    unknown = sorted(set(t) - FILE_KEYS)
    if unknown:
        raise RtqError(f"{path}: sweep.{unknown[0]}: unknown key (one of {', '.join(sorted(FILE_KEYS))})")
    probe = t.get("probe")
    if probe not in ALL_PROBES:
        raise RtqError(f"{path}: sweep.probe: unknown probe {probe!r}")
    params = t.get("params") or {}
    loads = t.get("loads") or []
    if not isinstance(params, dict) or not isinstance(loads, list) or not all(isinstance(x, dict) for x in loads):
        raise RtqError(f"{path}: sweep.params is a table, sweep.loads an array of load tables")
    for ld in loads:
        loadspec.check(ld)
    name = c.dimension or t.get("dimension")
    if not isinstance(name, str):
        raise RtqError(f"{path}: sweep.dimension: a probe parameter or LOAD.OPTION to raise")
    kind, dot, option = name.partition(".")
    if dot and not any(load_name(ld) == kind or ld["type"] == kind for ld in loads):
        raise RtqError(f"{path}: dimension '{name}': no load '{kind}' in sweep.loads")
    if not dot and name not in ALL_PROBES[probe].params:
        raise RtqError(f"{path}: unknown dimension '{name}': not a parameter of the {probe} probe nor LOAD.OPTION")
    for key in ("start", "ceiling"):
        if not isinstance(t.get(key), (int, float)) and getattr(c, key) is None:
            raise RtqError(f"{path}: sweep.{key}: a number")
    dim = Dimension(name, str(t.get("unit", "")), t.get("start", 0), t.get("ceiling", 0), t.get("factor", 2.0))
    texts, prof = _requirements(c.require, c.profile, list(t.get("requirements") or []), t.get("profile"))
    sw = Sweep(Path(path).stem, probe, dict(params), loads, dim, _range(dim, c), texts,
               parse_duration_ns(t["step"], "sweep.step") if t.get("step") else STEP_NS,
               parse_duration_ns(t["longest_step"], "sweep.longest_step") if t.get("longest_step") else LONGEST_STEP_NS,
               settle=str(t.get("settle", SETTLE)), profile=prof)  # fmt: skip
    return _finish(sw, c)


def resolve(target: str, **kw) -> Sweep:
    """A preset by name, else a sweep file (a name ending in .toml, or naming a file)."""
    if target in PRESETS:
        return from_preset(target, **kw)
    if target.endswith(".toml") or Path(target).is_file():
        return from_file(target, **kw)
    return from_preset(target, **kw)  # says the name is unknown

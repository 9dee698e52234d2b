"""Fuzzing (issue 14 item 4): every bundle file damaged (truncated, garbage, invalid UTF-8, another JSON shape,
missing), CLI options of `run` (checked, never run), and the probe's JSON Lines stream with records of the
wrong shape. Never a traceback: a one-line error naming the file, key or line and exit 1, or a warning that
names the damaged file. Scenario TOML is fuzzed in test_scenario.py, the import formats in test_imports.py.
Bounded: a few hundred examples in all, deadline None."""

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtqual import cli
from rtqual.answers.requirements import gather
from rtqual.answers.verdict import judge, summarize
from rtqual.errors import RtqError
from rtqual.publish import htmlreport
from rtqual.results import bundle as bundle_mod
from rtqual.results.stats import merged_hist
from rtqual.results.stream import read_stream
from rtqual.scenario.single import single_run

FROZEN = Path(__file__).resolve().parents[1] / "data" / "bundles"
NAMES = ("timer-raw", "scenario")
FILES = {n: sorted(f.relative_to(FROZEN / n).as_posix() for f in (FROZEN / n).rglob("*") if f.is_file()) for n in NAMES}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


def damaged(data: bytes, how: str, where: float, junk: bytes, value) -> bytes | None:
    """The file's new content (None: removed)."""
    cut = int(len(data) * where)
    return {
        "truncate": data[:cut],
        "garbage": junk,
        "utf8": data[:cut] + b"\xff\xc3\x28\x80" + data[cut:],
        "splice": data[:cut] + junk + data[cut:],
        "json": json.dumps(value).encode(),
        "missing": None,
    }[how]


def sealed_copy(src: Path, dst: Path) -> Path:
    """A frozen bundle with checksums of every file, as rtqual writes bundles today."""
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m[bundle_mod.CHECKSUMS] = {
        rel: bundle_mod.sha256_file(dst / rel) for rel in FILES[src.name] if rel not in bundle_mod.UNSEALED
    }
    (dst / "manifest.json").write_text(json.dumps(m, indent=1))
    return dst


def one_line_or_warnings(code: int, err: str) -> bool:
    """Exit 0, or exit 1 with stderr lines each an rtqual error or warning (never a traceback)."""
    lines = err.strip().splitlines()
    return code in (0, 1) and "Traceback" not in err and all(x.startswith("rtqual: ") for x in lines)


@FUZZ
@given(
    name=st.sampled_from(NAMES),
    pick=st.integers(0, 10**6),
    how=st.sampled_from(["truncate", "garbage", "utf8", "splice", "json", "missing"]),
    where=st.floats(0, 1),
    junk=st.binary(max_size=64),
    value=JSON,
    sealed=st.booleans(),
    report=st.integers(0, 3),
)
def test_any_damaged_bundle_file_is_named_never_a_traceback(
    capsys, name, pick, how, where, junk, value, sealed, report
):
    with tempfile.TemporaryDirectory() as tmp:
        b = sealed_copy(FROZEN / name, Path(tmp) / name) if sealed else shutil.copytree(FROZEN / name, Path(tmp) / name)
        rel = FILES[name][pick % len(FILES[name])]
        before = (b / rel).read_bytes()
        new = damaged(before, how, where, junk, value)
        if new is None:
            (b / rel).unlink()
        else:
            (b / rel).write_bytes(new)
        for argv in (
            ["show", b],
            ["show", "--json", b],
            ["compare", b, FROZEN / name],
            ["export", "raw", b],
            ["verify", b],
            *([["report", b, "-o", Path(tmp) / "r.html"]] if report == 0 else []),  # the slowest: 1 in 4
        ):
            code = cli.main([str(a) for a in argv])
            out = capsys.readouterr()
            assert one_line_or_warnings(code, out.err), (argv, rel, how, out.err)
            if argv[0] == "verify" and sealed and rel not in bundle_mod.UNSEALED and new != before:
                assert code == 1 and rel in out.out, (rel, how, out.out)  # verify finds every damaged file
            if code == 1 and argv[0] in ("show", "compare") and rel != "manifest.json" and sealed:
                assert rel in out.err or "manifest.json" in out.err or "no case in common" in out.err, out.err


@settings(max_examples=150, deadline=None)
@given(
    probe=st.sampled_from(["timer", "switch", "ioc", "msg"]),
    opts=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "--duration",
                    "--loops",
                    "--interval",
                    "--cpus",
                    "--priority",
                    "--threshold",
                    "--settle",
                    "--load",
                    "--require",
                    "--profile",
                    "--raw-max-mb",
                    "--baseline",
                    "--warmup",
                    "--policy",
                    "--rate",
                ]
            ),
            st.one_of(
                st.sampled_from(["-1", "0", "-5s", "1e99", "nan", "inf", "1s", "-0", "99999999999999999999", "", " "]),
                st.text(max_size=12),
                st.integers(-(2**63), 2**63).map(str),
            ),
        ),
        max_size=4,
    ),
)
def test_run_options_are_checked_to_one_line(probe, opts):
    """The options of `rtqual run PROBE` as parsed and turned into cases (nothing runs): RtqError or cases."""
    argv = ["run", probe] + [x for k, v in opts for x in (k, v)]
    try:
        a = cli.build_parser().parse_args(argv)
        if a.raw_max_mb < 1:
            return
        single_run(a, ["rtqual", *argv])
    except RtqError as e:
        assert "\n" not in str(e) and str(e), argv


RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["header", "progress", "hist", "summary", "end", "event"])},
    optional={
        "cpu": JSON,
        "kind": st.sampled_from(["threshold", "suppressed", "warning"]) | JSON,
        "count": JSON,
        "message": JSON,
        "cpus": st.lists(st.dictionaries(st.sampled_from(["cpu", "overruns", "over_threshold"]), JSON)) | JSON,
        "rt": JSON,
        "buckets": JSON,
        "status": JSON,
        "raw": JSON,
        "layout": JSON,
        "max_ns": JSON,
        "min_ns": JSON,
        "total": JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RECORD | JSON, max_size=8), st.integers(-3, 5))
def test_stream_of_wrong_shaped_records_is_summarized(records, exit_code):
    """Any JSON Lines the probe might write (known types, wrong fields): a result with the bad lines named."""
    lines = [json.dumps(r) + "\n" for r in records]
    stream = read_stream(lines)
    params = json.loads((FROZEN / "scenario" / "cases" / "001-timer-idle" / "params.json").read_text())
    result = summarize(params, stream, exit_code, "", interrupted=False)
    judge(
        result,
        gather(["p99 <= 100us", "max < 1ms", "overruns <= 0"], None),
        merged_hist(stream) if stream.hists else None,
    )
    assert result["verdict"] in bundle_mod.VERDICTS
    json.dumps(result)


def test_html_report_of_a_sealed_bundle_with_a_damaged_hist_says_so(tmp_path):
    b = sealed_copy(FROZEN / "scenario", tmp_path / "scenario")
    (b / "cases" / "001-timer-idle" / "hist.json").write_text('{"per_cpu": {}}')
    html = htmlreport.render([htmlreport.load_bundle(b)])
    assert "cases/001-timer-idle/hist.json: damaged" in html

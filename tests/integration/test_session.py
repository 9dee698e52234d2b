"""The probe session (rtqual.measure.run.session) with the fake probe: where the records go is the caller's one hook,
a hook asking to stop stops the probe early, a signal before the spawn either stops the probe at once or spawns
nothing, and the stream is kept verbatim on request (a service: tests/epics/test_session_service.py)."""

import signal

import pytest

from conftest import needs_probe
from rtqual.measure.run.session import Interrupted, Session
from rtqual.probes.catalog import probe_case

pytestmark = needs_probe

ENDLESS = "repeat 1000000\nsample 0 20000\nsample 1 30000\nsleep 20\nprogress\nend\n"


def fake_args(tmp_path, text: str) -> list[str]:
    script = tmp_path / "fake.txt"
    script.write_text(text)
    return probe_case("fake", {"script": str(script)}, [0], "c")["args"]


def test_records_go_to_the_hook_and_the_stream_is_kept(tmp_path):
    args = fake_args(tmp_path, "sample 0 5000\nsample 1 150000\n")
    seen: list[dict] = []
    s = Session("fake", args, tmp_path, Interrupted(), keep_stream=True).run(seen.append)
    assert s.exit_code == 0 and s.stderr_last == ""
    assert [r["type"] for r in seen][0] == "header" and seen[-1]["type"] == "end"
    assert len((tmp_path / "stream.jsonl").read_text().splitlines()) == len(seen)  # verbatim, line for line
    assert sorted(s.stream.hists) == [0, 1]


def test_a_hook_asking_to_stop_ends_the_probe_early(tmp_path):
    progress = []

    def on_record(rec: dict) -> bool:
        progress.extend([rec] if rec["type"] == "progress" else [])
        return len(progress) >= 3

    s = Session("fake", fake_args(tmp_path, ENDLESS), tmp_path, Interrupted()).run(on_record)
    assert 3 <= len(progress) < 1000 and s.stream.end is not None
    assert not (tmp_path / "stream.jsonl").exists()  # kept only when asked


@pytest.mark.parametrize("spawn", [True, False])
def test_a_signal_before_the_spawn(tmp_path, spawn):
    guard = Interrupted()
    guard.signum = signal.SIGTERM  # came while the service started
    seen: list[dict] = []
    s = Session("fake", fake_args(tmp_path, ENDLESS), tmp_path, guard, spawn_if_interrupted=spawn).run(seen.append)
    if spawn:  # spawned and stopped at once (SIGINT, maybe before its handler was in place)
        assert s.exit_code is not None and len([r for r in seen if r["type"] == "progress"]) < 100
    else:
        assert s.exit_code is None and seen == []
    assert guard.proc is None


def test_a_probe_never_inherits_an_ignored_stop_signal():
    """A shell's background job runs with SIGINT ignored; a probe spawned from there must still stop on the
    SIGINT sent before its handler is in place (else it runs its whole duration: a CI run hung on it)."""
    import subprocess

    from rtqual.measure.run.native import default_stop_signals

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        shown = subprocess.run(
            ["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True, preexec_fn=default_stop_signals
        ).stdout
        inherited = subprocess.run(["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True).stdout
    finally:
        signal.signal(signal.SIGINT, old)
    sigint = 1 << (signal.SIGINT - 1)
    assert int(inherited.split()[1], 16) & sigint  # the hazard is real
    assert not int(shown.split()[1], 16) & sigint

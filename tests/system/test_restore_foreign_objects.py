"""`rtqual restore` as root with a crafted journal naming real objects rtqual did not make (issue 21 item 1):
a network namespace, a veth pair and a cgroup with foreign names survive; the command says why in one line.
The rest of the hostile journals (files, folders, links, shapes): tests/unit/test_restore_hostile.py."""

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import rtqual_run
from rtqual.measure.conditions.journal import CHANGES_FILE, host_identity
from rtqual.measure.conditions.objects import cpuset_mount, net_objects
from rtqual.util import has_capability

CAP_NET_ADMIN = 12
needs_net_admin = pytest.mark.skipif(
    not has_capability(CAP_NET_ADMIN) or shutil.which("ip") is None, reason="needs CAP_NET_ADMIN (root) and ip"
)


def cut_bundle(path: Path, records: list[dict]) -> Path:
    """A bundle as a SIGKILL leaves it (manifest running, journal unsealed) holding records, of this boot."""
    (path / "host").mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"schema_version": 1, "status": "running", "checksums": {}}))
    state = {"schema_version": 1, "pid": 4242, **host_identity(), "changes": records}
    (path / CHANGES_FILE).write_text(json.dumps(state))
    return path


def refused(bundle: Path, says: str) -> None:
    out = rtqual_run("restore", bundle, timeout=30)
    assert out.returncode == 1 and out.stdout == "", out
    assert len(out.stderr.splitlines()) == 1 and says in out.stderr and "Traceback" not in out.stderr, out.stderr


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@needs_net_admin
def test_foreign_netns_and_veth_survive(tmp_path):
    tag = secrets.token_hex(3)
    netns, veth = f"canary-{tag}", f"cnry{tag}"
    ip("netns", "add", netns)
    try:
        ip("link", "add", veth, "type", "veth", "peer", "name", f"{veth}p")
        try:
            for kind, name in (("netns", netns), ("veth", veth)):
                rec = {"knob": name, "kind": kind, "before": None, "after": "created", "applied": True}
                refused(cut_bundle(tmp_path / kind, [rec]), f"{kind} '{name}' is not one rtqual makes")
            assert netns in net_objects("netns") and veth in net_objects("veth")
        finally:
            subprocess.run(["ip", "link", "delete", veth], capture_output=True, timeout=10)
    finally:
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True, timeout=10)


def _cgroup_root() -> Path | None:
    try:
        root, _ = cpuset_mount()
    except Exception:  # noqa: BLE001 - no cpuset hierarchy: the test says so
        return None
    return root if os.geteuid() == 0 and os.access(root, os.W_OK) else None


@pytest.mark.skipif(_cgroup_root() is None, reason="needs root and a writable cgroup cpuset hierarchy")
def test_foreign_cgroup_survives(tmp_path):
    root = _cgroup_root()
    assert root is not None
    canary = root / f"canary-{secrets.token_hex(3)}"
    canary.mkdir()
    try:
        rec = {"knob": str(canary), "kind": "cpuset", "before": None, "after": "0", "applied": True}
        refused(cut_bundle(tmp_path / "b", [rec]), "not named as rtqual names its own")
        assert canary.is_dir()
    finally:
        canary.rmdir()

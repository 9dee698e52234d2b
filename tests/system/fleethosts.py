"""Hosts for the fleet tests: N network namespaces on this machine, each with a veth address and Debian's
openssh-server (its own host key and UTS name, root allowed with a throwaway key), and `ansible-playbook`
run against them. The namespaces share this machine's CPUs and files: they prove orchestration, not N
machines' latency. Everything is removed on exit: every process in a namespace, the namespaces, the keys."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from monitoring import Server

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
PLAYBOOKS = Path(__file__).resolve().parents[2] / "deploy" / "ansible"
SSH_PORT = 2222  # each namespace has its own ports: the same port on every host


def missing() -> str | None:
    """Why the fleet hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if SSHD is None:
        return "Debian openssh-server not installed (scripts/setup --test)"
    if not ANSIBLE_PLAYBOOK.exists():
        return "ansible-core not installed in the venv (pip install '.[test]')"
    if shutil.which("ip") is None or shutil.which("ssh-keygen") is None:
        return "iproute2 or openssh-client missing"
    return None


def sh(*argv: str | Path) -> None:
    """Run a setup command, raising with its stderr when it fails."""
    out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))}: {out.stderr.strip()}")


@dataclass
class Host:
    name: str  # inventory name and UTS hostname
    netns: str
    veth: str  # the controller's end (the other end is inside netns)
    address: str  # the host's address, reached from the controller
    root: Path  # this host's own folders on the shared file system
    sshd: Server | None = None


class Fleet:
    """`n` SSH hosts in namespaces; use as a context manager (everything removed on exit)."""

    def __init__(self, folder: Path, n: int):
        self.folder = folder
        self.key = folder / "id_ed25519"
        tag = f"{os.getpid() % 100000}"
        net = free_net(os.getpid())
        self.hosts = [
            Host(f"fleet-host-{i}", f"rtqfleet{tag}-{i}", f"rqf{tag}h{i}", f"{net}.{4 * i + 2}", folder / f"host{i}")
            for i in range(n)
        ]
        self.made_run_sshd = False

    def __enter__(self) -> Fleet:
        try:
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key)
            (self.folder / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
            if not Path("/run/sshd").exists():  # sshd's privilege separation folder (the package's service makes it)
                Path("/run/sshd").mkdir(mode=0o755)
                self.made_run_sshd = True
            for i, h in enumerate(self.hosts):
                self._start(i, h)
            for h in self.hosts:
                wait_port(h.address, SSH_PORT)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, i: int, h: Host) -> None:
        """The namespace, its veth pair and address, and sshd in it under its own UTS name."""
        h.root.mkdir()
        sh("ip", "netns", "add", h.netns)
        sh("ip", "link", "add", h.veth, "type", "veth", "peer", "name", f"{h.veth}n")
        sh("ip", "link", "set", f"{h.veth}n", "netns", h.netns)
        sh("ip", "addr", "add", f"{h.address.rsplit('.', 1)[0]}.{4 * i + 1}/30", "dev", h.veth)
        sh("ip", "link", "set", h.veth, "up")
        for cmd in (["addr", "add", f"{h.address}/30", "dev", f"{h.veth}n"], ["link", "set", f"{h.veth}n", "up"]):
            sh("ip", "netns", "exec", h.netns, "ip", *cmd)
        sh("ip", "netns", "exec", h.netns, "ip", "link", "set", "lo", "up")
        hostkey = h.root / "ssh_host_ed25519_key"
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey)
        config = h.root / "sshd_config"
        config.write_text(
            f"Port {SSH_PORT}\nListenAddress {h.address}\nHostKey {hostkey}\nPidFile {h.root / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"Subsystem sftp {SFTP_SERVER}\n"
        )
        h.sshd = Server(
            ["ip", "netns", "exec", h.netns, "unshare", "--uts", "sh", "-c",
             f"hostname {h.name} && exec {SSHD} -D -e -f {config}"],
            h.root / "sshd.log",
        )  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        """Stop every process in each namespace (sshd, its sessions, detached jobs), delete the namespaces."""
        for h in self.hosts:
            if h.sshd is not None:
                h.sshd.stop()
            pids = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "link", "del", h.veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
        if self.made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
        for key in (self.key, Path(f"{self.key}.pub")):
            key.unlink(missing_ok=True)

    def inventory(self, **host_vars: str) -> Path:
        """An INI inventory of the hosts, reached as root with the throwaway key; each host's rtqual in its
        own folder (they share this file system). host_vars are added to every host line."""
        lines = ["[fleet]"]
        for h in self.hosts:
            more = {
                "ansible_host": h.address,
                "ansible_port": str(SSH_PORT),
                "rtqual_home": str(h.root / "opt-rtqual"),
                "rtqual_workdir": str(h.root / "work"),
                "rtqual_systemd_dir": str(h.root / "systemd"),
                **host_vars,
            }
            lines.append(h.name + "".join(f" {k}={v}" for k, v in more.items()))
        lines += [
            "[fleet:vars]",
            "ansible_user=root",
            f"ansible_ssh_private_key_file={self.key}",
            "ansible_ssh_common_args='-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no"
            " -o IdentitiesOnly=yes'",
            "ansible_python_interpreter=/usr/bin/python3",
        ]
        path = self.folder / "inventory.ini"
        path.write_text("\n".join(lines) + "\n")
        return path

    def playbook(self, name: str, inventory: Path, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """ansible-playbook PLAYBOOKS/name with -e extras; Ansible's own files in this fleet's folder."""
        env = dict(os.environ)
        for var, sub in [
            ("ANSIBLE_HOME", "ansible-home"),
            ("ANSIBLE_LOCAL_TEMP", "ansible-local"),
            ("ANSIBLE_REMOTE_TMP", "ansible-remote"),
            ("ANSIBLE_SSH_CONTROL_PATH_DIR", "cp"),
        ]:
            env[var] = str(self.folder / sub)
        env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_HOST_KEY_CHECKING="False")
        argv = [str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(PLAYBOOKS / name)]
        for e in extra:
            argv += ["-e", e]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def free_net(seed: int) -> str:
    """A 10.X.0 prefix no address of this machine is in (another fleet test running at the same time has
    its own): host i is 10.X.0.(4i+2), the controller's end 10.X.0.(4i+1)."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for k in range(50):
        net = f"10.{200 + (seed + k) % 50}.0"
        if f" {net}." not in used:
            return net
    raise RuntimeError("no free 10.200-249.0.0/24 for the fleet hosts")


def syntax_check(playbook: Path) -> subprocess.CompletedProcess:
    """ansible-playbook --syntax-check of a playbook (an empty inventory)."""
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "--syntax-check", str(playbook)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def wait_port(address: str, port: int, timeout: float = 30) -> None:
    """Wait until address:port accepts a TCP connection (sshd started)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)

"""A real OpenSSH server on 127.0.0.1 for the remote-run tests (tests/core/remote/): `/usr/sbin/sshd -D -f
CONFIG -p PORT` as the current user, a generated host key, a generated client key in authorized_keys
(StrictModes no), and an ssh config file (`-F`) whose alias `ptprof-test` reaches it with that key and a
known_hosts file that holds its host key. No mock: the tests drive the system ssh client against it."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = os.environ.get("PTPROF_TEST_SSHD", "/usr/sbin/sshd")
ALIAS = "ptprof-test"


def available() -> str:
    """'' when a test sshd can run here, else why not."""
    if not Path(SSHD).is_file():
        return f"no OpenSSH server at {SSHD} (apt-get install openssh-server)"
    if not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        return "no OpenSSH client (apt-get install openssh-client)"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ptprof-test", "-f", str(path)], check=True)


class Sshd:
    def __init__(self, root: Path):
        self.root = root
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        for name in ("host_key", "client_key", "other_key"):
            _keygen(root / name)
        (root / "authorized_keys").write_text((root / "client_key.pub").read_text())
        host_pub = (root / "host_key.pub").read_text().split()
        (root / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        (root / "empty_known_hosts").write_text("")
        user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        (root / "sshd_config").write_text(f"""ListenAddress 127.0.0.1
HostKey {root / 'host_key'}
AuthorizedKeysFile {root / 'authorized_keys'}
PidFile {root / 'sshd.pid'}
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
PermitRootLogin yes
UseDNS no
MaxStartups 100
MaxSessions 100
LogLevel ERROR
""")
        self.config = self.ssh_config("known_hosts", "client_key")
        self.user = user

    def ssh_config(self, known_hosts: str, key: str, name: str | None = None) -> Path:
        path = self.root / (name or f"ssh_config_{known_hosts}_{key}")
        path.write_text(f"""Host {ALIAS}
  HostName 127.0.0.1
  Port {self.port}
  IdentityFile {self.root / key}
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile {self.root / known_hosts}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
""")
        return path

    def start(self) -> "Sshd":
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder, as root
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.root / "sshd_config"), "-p", str(self.port)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.root / "sshd.log", "ab"), start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError as exc:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()[-500:]}") from exc
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 20 s")

    def stop(self) -> None:
        """Kill the daemon and every connection it serves (sshd gives each its own session, so they are
        found as its descendants): established channels drop. What the logins started in their own
        sessions (ptprof's detached run supervisor) is not touched, as on a real host."""
        if self.proc is None:
            return
        doomed = _descendants(self.proc.pid, only_sshd=True)
        for pid in [self.proc.pid, *doomed]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        self.proc = None


def _descendants(root: int, only_sshd: bool) -> list[int]:
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_bytes().rsplit(b")", 1)
                comm = fields[0].split(b"(", 1)[1]
                parents[int(d.name)] = (int(fields[1].split()[1]), comm)
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = [], {root}
    while frontier:
        kids = {pid for pid, (ppid, comm) in parents.items() if ppid in frontier
                and (not only_sshd or comm.startswith(b"sshd"))}
        out += sorted(kids)
        frontier = kids
    return out


def _fixtures():
    import pytest

    @pytest.fixture(scope="module")
    def sshd(tmp_path_factory):
        why = available()
        if why:
            pytest.skip(why)
        server = Sshd(tmp_path_factory.mktemp("sshd")).start()
        yield server
        server.stop()

    @pytest.fixture
    def remote_root(tmp_path, monkeypatch):
        """Each test's own folder on the host (PTPROF_REMOTE_ROOT): runs never mix."""
        root = tmp_path / "remote-root"
        monkeypatch.setenv("PTPROF_REMOTE_ROOT", str(root))
        monkeypatch.setenv("PTPROF_REMOTE_INDEX", str(tmp_path / "remote-runs.idx"))  # the host's index of runs
        monkeypatch.setenv("PTPROF_MIRRORS_INDEX", str(tmp_path / "mirrors.idx"))  # this desktop's mirror folders
        return root
    return sshd, remote_root


sshd_fixture, remote_root_fixture = _fixtures()  # conftest.py: `sshd = sshd_server.sshd_fixture`

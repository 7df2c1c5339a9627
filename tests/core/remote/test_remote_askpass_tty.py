"""A host whose key needs a passphrase, from the command line (tests/sshd_server.py's real sshd; the
client key here is passphrase-protected and no agent holds it): on a terminal ptprof asks for it through
SSH_ASKPASS - at the start and again when the connection drops mid-run and the follower reconnects - echo
off, nothing stored; without a terminal it is one clear line."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sshd_server import ALIAS

from core.remote.ssh import SshHost

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cret-Pass"
SLOW = """
import time, torch
from torch import nn
m = nn.Linear(8, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(60):
    opt.zero_grad(); m(torch.randn(4, 8)).sum().backward(); opt.step(); print("step", i, flush=True); time.sleep(0.15)
"""


@pytest.fixture
def locked_config(sshd, tmp_path):
    name = f"pass_key_{os.getpid()}_{time.monotonic_ns()}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", SECRET, "-C", "ptprof-test", "-f", str(sshd.root / name)],
                   check=True)
    with open(sshd.root / "authorized_keys", "a") as fh:
        fh.write((sshd.root / f"{name}.pub").read_text())
    return sshd.ssh_config("known_hosts", name, name=f"config_{name}")


def _env(extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **(extra or {}))
    env.pop("SSH_AUTH_SOCK", None)
    return env


def _on_a_terminal(argv, env, answers: int, during=None, timeout_s: float = 150):
    """Run argv with a pty as its controlling terminal; answer each passphrase prompt; (exit, output, prompts)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(str(REPO))
        os.execve(sys.executable, [sys.executable, *argv], env)
    out, prompts, deadline = b"", 0, time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            if out.count(b"passphrase") > prompts:
                prompts += 1
                os.write(fd, (SECRET + "\n").encode() if prompts <= answers else b"\x04")
            if during is not None:
                during(out)
        else:
            os.kill(pid, 9)
            pytest.fail(f"timed out: {out[-2000:]!r}")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace"), prompts


@pytest.mark.timeout(120)
def test_passphrase_asked_on_the_terminal(sshd, remote_root, locked_config):
    code, out, prompts = _on_a_terminal(["-m", "core.cli", "remote", "runs", ALIAS, "--ssh-config", str(locked_config),
                                         "--python", sys.executable], _env(), answers=1)
    assert code == 0 and prompts == 1 and "no runs" in out, out
    assert "ptprof (ssh): Enter passphrase for key" in out
    assert SECRET not in out  # echo off


@pytest.mark.timeout(120)
def test_without_a_terminal_it_is_one_line(sshd, remote_root, locked_config):
    r = subprocess.run([sys.executable, "-m", "core.cli", "remote", "runs", ALIAS, "--ssh-config", str(locked_config),
                        "--python", sys.executable], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=_env(), timeout=90, cwd=str(REPO))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "cannot log in to" in lines[0] and "terminal" in lines[0] and "Traceback" not in r.stderr


@pytest.mark.timeout(240)
def test_reconnect_mid_run_asks_again(sshd, remote_root, locked_config, tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "slow.py").write_text(SLOW)
    dropped = []

    def drop_when_running(out: bytes) -> None:  # the master connection goes away mid-run (as a network drop)
        if not dropped and out.count(b"step ") >= 5:
            dropped.append(time.monotonic())
            SshHost(ALIAS, config_file=str(locked_config)).close()
    code, out, prompts = _on_a_terminal(
        ["-m", "core.cli", "record", "--host", ALIAS, "--ssh-config", str(locked_config), "--python", sys.executable,
         "--cwd", str(tmp_path), "--out", str(tmp_path / "b"), "--wait", "1", "--warmup", "1", "--active", "2",
         "slow.py"], _env(), answers=5, during=drop_when_running, timeout_s=200)
    assert dropped, out[-2000:]
    assert code == 0 and prompts >= 2, out[-3000:]  # asked at the start and again to reconnect
    assert "step 59" in out and SECRET not in out
    assert (tmp_path / "b" / "run.json").is_file()

"""The hostile tests' CLI fork server (tests/cli_fork.py) stays in step with its answers: a request whose
answer was not read whole (a timeout racing the child's exit, an interrupt) must not shift the later ones."""
from __future__ import annotations

import os
import select
import signal
import subprocess

import cli_fork
import pytest


def _version(server, tmp_path):
    return server.run(["--version"], dict(os.environ), tmp_path, 4 << 30, 60)


def test_a_request_cut_short_restarts_the_server(tmp_path, monkeypatch):
    server = cli_fork.CliForkServer()
    try:
        first = _version(server, tmp_path)
        assert first.returncode == 0 and first.stdout.strip()
        real_select = select.select
        monkeypatch.setattr(select, "select", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):
            _version(server, tmp_path)
        monkeypatch.setattr(select, "select", real_select)
        again = _version(server, tmp_path)
        assert (again.returncode, again.stdout) == (0, first.stdout)
    finally:
        server.close()


def test_a_timeout_racing_the_child_exit_is_a_timeout(tmp_path, monkeypatch):
    server = cli_fork.CliForkServer()
    try:
        first = _version(server, tmp_path)
        real_kill = os.kill

        def late_kill(pid, sig):  # the child ended just as the timeout fired
            if sig == signal.SIGKILL:
                raise ProcessLookupError(pid)
            return real_kill(pid, sig)
        monkeypatch.setattr(select, "select", lambda *a: ([], [], []))  # "timed out" at once
        monkeypatch.setattr(os, "kill", late_kill)
        with pytest.raises(subprocess.TimeoutExpired):
            _version(server, tmp_path)
        monkeypatch.undo()
        again = _version(server, tmp_path)
        assert (again.returncode, again.stdout) == (0, first.stdout)
    finally:
        server.close()

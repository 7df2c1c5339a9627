"""A real OpenSSH server on 127.0.0.1 for this folder's tests (tests/sshd_server.py), one per test module;
each test gets its own remote root (PTPROF_REMOTE_ROOT) so runs never mix."""
from __future__ import annotations

import pytest

import sshd_server


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    why = sshd_server.available()
    if why:
        pytest.skip(why)
    server = sshd_server.Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def remote_root(tmp_path, monkeypatch):
    root = tmp_path / "remote-root"
    monkeypatch.setenv("PTPROF_REMOTE_ROOT", str(root))
    return root

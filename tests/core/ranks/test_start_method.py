"""The local pool forks only a single-threaded process that has not loaded Qt: Qt's threads are no Python
threads, and a worker forked beside them hung on a lock one of them held (the window's Compare of a multi-rank
run never finished when no Python thread ran beside it)."""
from __future__ import annotations

import multiprocessing
import sys
import types

import pytest

from core.ranks import executor


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_fork_only_without_threads_and_without_qt(monkeypatch):
    for name in executor._QT:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(executor.threading, "active_count", lambda: 1)
    assert executor.start_method() == "fork"  # the CLI: workers start with the modules already loaded
    monkeypatch.setitem(sys.modules, "PySide6.QtCore", types.ModuleType("PySide6.QtCore"))
    assert executor.start_method() in ("forkserver", "spawn")  # the window: its Qt threads are invisible here
    monkeypatch.delitem(sys.modules, "PySide6.QtCore")
    monkeypatch.setattr(executor.threading, "active_count", lambda: 3)
    assert executor.start_method() in ("forkserver", "spawn")

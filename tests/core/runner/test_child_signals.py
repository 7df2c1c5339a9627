"""Stop signals that land inside our profiler hooks are held until the hook has finished."""
from __future__ import annotations

import os
import signal

import pytest

from core.runner import child


@pytest.fixture
def sigint_held():
    old = signal.signal(signal.SIGINT, child._Signals.handle)
    child._Signals.depth, child._Signals.pending = 0, None
    yield
    signal.signal(signal.SIGINT, old)
    child._Signals.depth, child._Signals.pending = 0, None


def _guarded(hook):
    runner = child.ChildRunner.__new__(child.ChildRunner)
    runner.stepped_aside = False
    return child.ChildRunner._guarded(runner, hook)


def test_sigint_inside_a_hook_is_raised_after_it_returns(sigint_held):
    done = []

    def _on_optimizer_step():
        os.kill(os.getpid(), signal.SIGINT)  # Stop pressed while the profiler changes state
        done.append("profiler stepped")

    with pytest.raises(KeyboardInterrupt):
        _guarded(_on_optimizer_step)()
    assert done == ["profiler stepped"]
    assert child._Signals.pending is None and child._Signals.depth == 0


def test_sigterm_inside_a_hook_becomes_terminated_after_it(sigint_held):
    def _on_optimizer_step():
        child._Signals.handle(signal.SIGTERM, None)

    with pytest.raises(SystemExit) as exc:
        _guarded(_on_optimizer_step)()
    assert exc.value.code == 128 + signal.SIGTERM


def test_sigint_outside_hooks_interrupts_at_once(sigint_held):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000_000):  # the handler runs between bytecodes
            pass

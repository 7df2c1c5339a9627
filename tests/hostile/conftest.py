"""Hostile-input tests: tests marked `slow` here run only with `-m slow` or PTPROF_SLOW=1 (otherwise they
are deselected: an opt-in run, not a test that could not run)."""
from __future__ import annotations

import os


def slow_enabled(config) -> bool:
    return os.environ.get("PTPROF_SLOW", "") not in ("", "0") or "slow" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    if slow_enabled(config):
        return
    slow = [item for item in items if "slow" in item.keywords and "hostile" in str(item.fspath)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in slow]

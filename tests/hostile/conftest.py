"""Hostile-input tests: tests marked `slow` here run only with `-m slow` or PTPROF_SLOW=1."""
from __future__ import annotations

import os

import pytest


def slow_enabled(config) -> bool:
    return os.environ.get("PTPROF_SLOW", "") not in ("", "0") or "slow" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    if slow_enabled(config):
        return
    skip = pytest.mark.skip(reason="slow hostile-input run: use -m slow or PTPROF_SLOW=1")
    for item in items:
        if "slow" in item.keywords and "hostile" in str(item.fspath):
            item.add_marker(skip)

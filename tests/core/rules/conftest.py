"""Loaded real traces shared by the rule tests of one session (loading is the slow part)."""
from __future__ import annotations

import pytest

from core.trace.loader import load

_LOADED: dict = {}


@pytest.fixture(scope="session")
def loaded():
    """`loaded(path)` -> TraceSet, parsed once per session without touching any cache."""
    def get(path):
        key = str(path)
        if key not in _LOADED:
            _LOADED[key] = load(path, use_cache=False)
        return _LOADED[key]
    return get

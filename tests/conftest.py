"""Shared fixtures. Real traces come from ../shared/traces (CI has them at the same path)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own columnar cache dir: no test sees another's cache."""
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "ptprof-cache"))

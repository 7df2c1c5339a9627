"""Test helpers importable from every test module (pytest `pythonpath = tests`)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("PTPROF_SHARED_TRACES", REPO.parent / "shared" / "traces"))
SAMPLE = REPO / "resources" / "sample.pt.trace.json.gz"


def shared_trace(name: str) -> Path:
    """Path of a trace in ../shared/traces; skips the test when the folder is absent."""
    p = SHARED_TRACES / name
    if not p.exists():
        pytest.skip(f"shared trace {name} not available at {SHARED_TRACES}")
    return p


def hta_importable() -> bool:
    """traceinsight (import hta) installs and imports here; HTA tests skip when it does not."""
    try:
        import hta.trace_analysis  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "unavailable"
        return False
    return True

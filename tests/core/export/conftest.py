"""Loaded trace sets shared by the export tests (loading is the slow part; each trace loads once per module)."""
from __future__ import annotations

import pytest
from helpers import shared_trace

from core.trace.loader import load

TRACES = ["gpu_issues.pt.trace.json.gz", "gpu_memory.pt.trace.json.gz", "gpu_ddp2", "cpu_train.pt.trace.json.gz"]


@pytest.fixture(scope="module", params=TRACES)
def trace_set(request):
    return load(shared_trace(request.param), use_cache=False)


@pytest.fixture(scope="module")
def issues_set():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


@pytest.fixture(scope="module")
def cpu_set():
    return load(shared_trace("cpu_train.pt.trace.json.gz"), use_cache=False)

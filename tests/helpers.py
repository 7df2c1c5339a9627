"""Test helpers importable from every test module (pytest `pythonpath = tests`).

Real traces: the small ones the tests need are in tests/data/traces (copies of the shared set, a few MB),
so a fresh clone runs the suite alone. The big ones (BIG_TRACES) are optional: they are read from
$PTPROF_SHARED_TRACES (default ../shared/traces beside the checkout, where CI has them, or
../../shared/traces for a worktree in a folder beside it) and the tests
that need them skip with the reason when they are absent.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOCAL_TRACES = REPO / "tests" / "data" / "traces"
_BESIDE = [REPO.parent / "shared" / "traces", REPO.parent.parent / "shared" / "traces"]  # a clone, a worktree
SHARED_TRACES = Path(os.environ.get("PTPROF_SHARED_TRACES") or next((p for p in _BESIDE if p.is_dir()), _BESIDE[0]))
SAMPLE = REPO / "resources" / "sample.pt.trace.json.gz"
# too big for the repository (8-43 MB compressed); only in PTPROF_SHARED_TRACES
BIG_TRACES = frozenset({"gpu_gpt_big.pt.trace.json.gz", "gpu_gpt_big.nvml.csv",
                        "gpu_big_stack.pt.trace.json.xz", "gpu_big_stack.nvml.csv"})


def shared_trace(name: str) -> Path:
    """Path of a real trace: tests/data/traces first, then PTPROF_SHARED_TRACES. A missing big optional
    trace skips the test with the reason; a missing small one fails it (it belongs in tests/data/traces)."""
    for root in (LOCAL_TRACES, SHARED_TRACES):
        path = root / name
        if path.exists():
            return path
    if name in BIG_TRACES:
        pytest.skip(f"big optional trace {name} not found: set PTPROF_SHARED_TRACES to the folder holding it "
                    f"(now {SHARED_TRACES})")
    pytest.fail(f"trace {name} is neither in {LOCAL_TRACES} nor in {SHARED_TRACES}: "
                "a small trace a test needs belongs in tests/data/traces", pytrace=False)


def trace_names(pattern: str) -> list[str]:
    """Names matching `pattern` in tests/data/traces and PTPROF_SHARED_TRACES (each once)."""
    names = {p.name for root in (LOCAL_TRACES, SHARED_TRACES) if root.is_dir() for p in root.glob(pattern)}
    return sorted(names)


def hta_importable() -> bool:
    """traceinsight (import hta) installs and imports here; HTA tests skip when it does not."""
    try:
        import hta.trace_analysis  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "unavailable"
        return False
    return True


# for tests that run torch only in child processes: a module-level pytest.importorskip("torch") imported
# torch (~2 s of CPU) while collecting, in every xdist worker, for tests that never touch it in-process
TORCH_INSTALLED = importlib.util.find_spec("torch") is not None
no_torch_skip = pytest.mark.skipif(not TORCH_INSTALLED, reason="torch is not installed in this interpreter")


def finish(session, timeout_s: float = 180, stop_when=None, poll_s: float = 0.05) -> list[dict]:
    """Poll a started RunSession (or core.remote RemoteSession) until it ends; returns every event it read.
    `stop_when(events)` true asks it to stop (once). A run that outlives `timeout_s` fails the test."""
    import time
    events: list[dict] = []
    t0 = time.monotonic()
    while not session.finished:
        events += session.poll().events
        if stop_when is not None and not session.stopping_requested and stop_when(events):
            session.request_stop()
        assert time.monotonic() - t0 < timeout_s, "run did not finish"
        time.sleep(poll_s)
    return events


def run_cli(*args, timeout: float = 300):
    """`python -m core.cli ARGS` from the repository root (the CompletedProcess, text out and err captured)."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "core.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)

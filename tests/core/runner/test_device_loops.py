"""The loop shapes of bench/device_loops/ as recorded on an H200 (bench/device_loops/device_loops.sh,
2026-12-01, torch 2.11 + CUDA 13): each bundle has the step source the runner chose at run time, a trace
with its recorded window on the GPU, and the host syncs of the real transformers / lightning Trainers
point at the library frame and the user's line."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.rules import analyze
from core.runner.bundle import read_json
from core.trace.loader import load
from core.trace.model import Kind

LOOPS = Path(__file__).resolve().parents[2] / "data" / "device" / "loops"

EXPECTED = {  # bundle: (step source, steps counted by the runner, exit code)
    "manual_sgd": ("backward", 29, 0), "imported_loop": ("optimizer", 30, 0), "lbfgs": ("optimizer", 20, 0),
    "gan": ("optimizer", 30, 0), "grad_accum": ("optimizer", 20, 0), "lightning_style": ("optimizer", 30, 0),
    "hf_style": ("optimizer", 20, 0), "inference": ("forward", 7, 0), "torchrun_env": ("optimizer", 30, 0),
    "pkg_module": ("optimizer", 30, 0), "endless": ("optimizer", None, 130),
    "real_hf_trainer": ("optimizer", 40, 0), "real_lightning": ("optimizer", 40, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_loop_has_gpu_steps(name):
    source, steps, exit_code = EXPECTED[name]
    run = read_json(LOOPS / name / "run.json")
    assert run["step_source"] == source
    assert run["exit_code"] == exit_code
    if steps is not None:
        assert run["steps"] == steps
    else:  # --stop-after-window: stopped once its window was saved, not by a time limit
        assert run["stop_reason"] == "window_done" and run["steps"] > 5
    (gpu,) = run["environment"]["device_properties"]
    assert "H200" in gpu["name"]
    m = load(LOOPS / name, use_cache=False).primary
    assert m.meta.extra["ptprof"]["step_source"] == source
    assert len(m.steps) >= 2  # the active window (3 steps) minus a partial edge at most
    kernels = m.slices.kind == int(Kind.KERNEL)
    assert kernels.sum() > 0
    # the kernels of the window lie inside the recorded steps' span (GPU timeline, not just CPU)
    k_ts = m.slices.ts_ns[kernels]
    assert ((k_ts >= m.steps.ts_ns.min()) & (k_ts <= (m.steps.ts_ns + m.steps.dur_ns).max() + 50_000_000)).mean() > 0.9


@pytest.mark.parametrize("name, library, user_line", [
    ("real_hf_trainer", "transformers/", "real_hf_trainer.py:25"),
    ("real_lightning", "lightning/", "real_lightning.py:35"),
])
def test_host_sync_in_a_trainer_names_library_and_user_line(name, library, user_line):
    res = analyze(load(LOOPS / name, use_cache=False))
    syncs = [f for f in res.findings if f.rule == "host_sync" and f.source is not None and f.source.library]
    assert syncs, [(f.rule, f.source) for f in res.findings]
    assert any(library in f.source.library and f"{f.source.file}:{f.source.line}".endswith(user_line) for f in syncs)


def test_metadata_survives_kinetos_backslash_rewrite():
    """Kineto turns each backslash of a metadata value into '/': what the child hands it must have none,
    and must still decode after that rewrite (the recorded manual_sgd header above had `print(f/"...`)."""
    import json

    from core.runner.protocol import kineto_json
    sites = [{"file": "C:\\work\\train.py", "line": 3, "code": 'print(f"loss {loss.item():.3f}")\t# \x01 é'}]
    text = kineto_json(sites)
    assert "\\" not in text
    back = json.loads(text.replace("\\", "/"))
    assert back[0]["file"] == "C:/work/train.py" and back[0]["code"].startswith("print(f'loss {loss.item()")
    assert back[0]["code"].endswith("é") and back[0]["line"] == 3

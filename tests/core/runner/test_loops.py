"""Every loop shape gets steps decided at run time (core/runner/stepsource.py): fresh scripts in
bench/device_loops/ (the same ones the H200 run records, there with CUDA), run here on CPU. Each: >= 2
recorded steps in the trace and the right step_source in run.json and the trace metadata."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import finish, no_torch_skip  # noqa: E402

from core.gpu.backend import NoGpu
from core.runner.bundle import read_json
from core.runner.config import RunConfig, Schedule, validate
from core.runner.protocol import read_events
from core.runner.session import RunSession
from core.trace.loader import load

pytestmark = [pytest.mark.needs_torch, no_torch_skip]

LOOPS = Path(__file__).resolve().parents[3] / "bench" / "device_loops"


def _record(tmp_path, script="", args=("8",), module="", **cfg_changes):
    cfg = validate(RunConfig(script=str(LOOPS / script) if script else "", module=module, args=tuple(args),
                             schedule=Schedule(1, 1, 2, 1), out_dir=str(tmp_path / "bundle"),
                             cwd=str(LOOPS) if module else "", **cfg_changes))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    finish(s, timeout_s=200)
    run = read_json(s.bundle.run_json)
    events = read_events(str(s.bundle.events))
    return s, run, events


def _recorded_steps(s, source):
    ts = load(s.bundle.root, use_cache=False)
    assert ts.primary.meta.extra["ptprof"]["step_source"] == source
    return list(ts.primary.steps.number)


@pytest.mark.parametrize("script, source, steps", [
    ("manual_sgd.py", "backward", 7),  # 8 backwards: the source starts at the second one
    ("imported_loop.py", "optimizer", 8),
    ("lbfgs.py", "optimizer", 8),  # optimizer steps, not the closure's backwards
    ("gan.py", "optimizer", 8),  # the first optimizer only
    ("lightning_style.py", "optimizer", 8),
    ("hf_style.py", "optimizer", 8),
    ("inference.py", "forward", None),
])
def test_loop_shape_gets_its_step_source(tmp_path, script, source, steps):
    s, run, events = _record(tmp_path, script)
    assert s.exit_code == 0, (s.bundle.stderr_log.read_text()[-2000:])
    assert run["step_source"] == source
    if steps is not None:
        assert run["steps"] == steps
    assert len(_recorded_steps(s, source)) >= 2
    own = [e["step"] for e in events if e["type"] == "step" and e["source"] == source]
    assert own == list(range(1, len(own) + 1))
    # hf_style accumulates 2 backwards: one backward step (in the wait phase) before the optimizer's
    others = {e["source"] for e in events if e["type"] == "step" and e["source"] != source}
    assert others == ({"backward"} if script == "hf_style.py" else set())
    assert not [e for e in events if e.get("code") == "step_source_switched"]
    if script == "inference.py":  # no optimizer, no backward: forwards of the outermost module
        notices = [e for e in events if e["type"] == "notice"]
        assert notices[0]["code"] == "fallback" and "Sequential" in notices[0]["message"], notices
        assert all(e["source"] == "forward" for e in events if e["type"] == "step")
    if script == "imported_loop.py":  # step events say their phase
        phases = [e["phase"] for e in events if e["type"] == "step"]
        # step k's interval ran in the phase set at step k-1: start (setup), wait, warmup, active x2, done...
        assert phases[:5] == ["start", "wait", "warmup", "active", "active"] and set(phases[5:]) == {"done"}
        assert all(isinstance(e["hook_ns"], int) and e["dur_ns"] > 0 for e in events if e["type"] == "step")


def test_gradient_accumulation_switches_to_optimizer_steps(tmp_path):
    s, run, events = _record(tmp_path, "grad_accum.py")
    assert s.exit_code == 0
    # backward steps ran until the first optimizer step (4 backwards in), then optimizer steps won
    switched = [e for e in events if e.get("code") == "step_source_switched"]
    assert len(switched) == 1 and "optimizer steps seen after" in switched[0]["message"]
    assert run["step_source"] == "optimizer" and run["steps"] == 8
    assert [e["step"] for e in events if e["type"] == "step" and e["source"] == "optimizer"] == list(range(1, 9))
    assert _recorded_steps(s, "optimizer") == [2, 3]  # wait 1, warmup 1, active 2 of optimizer steps
    assert len(s.bundle.trace_files()) == 1  # the dropped backward window left no file


def test_torchrun_style_script_with_one_process(tmp_path):
    s, run, _ = _record(tmp_path, "torchrun_env.py", nproc=1, use_torchrun=True)
    assert s.exit_code == 0, s.bundle.stderr_log.read_text()[-2000:]
    assert run["config"]["torchrun"] and "torch.distributed.run" in run["command"]
    assert run["step_source"] == "optimizer" and len(_recorded_steps(s, "optimizer")) >= 2


def test_module_with_relative_imports(tmp_path):
    s, run, _ = _record(tmp_path, module="pkg_loop.train")
    assert s.exit_code == 0, s.bundle.stderr_log.read_text()[-2000:]
    assert "done __main__ pkg_loop" in s.bundle.stdout_log.read_text()
    assert run["argv"] == ["-m", "pkg_loop.train", "8"] and run["config"]["module"] == "pkg_loop.train"
    assert run["step_source"] == "optimizer" and len(_recorded_steps(s, "optimizer")) >= 2


def test_missing_module_is_bad_input(tmp_path):
    s, run, _ = _record(tmp_path, module="pkg_loop.nope")
    assert s.exit_code == 2 and "No module named" in run["exception"]


def test_endless_loop_is_stopped_after_its_window(tmp_path):
    s, run, events = _record(tmp_path, "endless.py", args=(), stop_after_window=True)
    assert run["stop_reason"] == "window_done" and s.stopped_after_window
    # ended from the step hook (guards.WindowDone), not by SIGINT: exit 0, no stop was requested
    assert s.exit_code == 0 and run["status"] == "ok" and not s.stopping_requested
    assert len(s.bundle.trace_files()) == 1 and len(_recorded_steps(s, "optimizer")) == 2
    assert [e for e in events if e["type"] == "end"]
    assert [e for e in events if e.get("code") == "window_done"]


def test_stop_after_window_runs_no_ctrl_c_handler_of_the_script(tmp_path):
    """word_language_model loads a checkpoint and exits 1 on KeyboardInterrupt, Lightning runs its graceful
    shutdown: ptprof's own BaseException is caught by neither `except KeyboardInterrupt` nor `except
    Exception`, and `finally` still runs."""
    s, run, events = _record(tmp_path, "ctrl_c_handler.py", args=(), stop_after_window=True)
    out = s.bundle.stdout_log.read_text()
    assert s.exit_code == 0 and run["stop_reason"] == "window_done"
    assert "user finally ran" in out and "handler ran" not in out
    assert len(s.bundle.trace_files()) == 1

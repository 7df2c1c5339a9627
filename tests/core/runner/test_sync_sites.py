"""Host-sync warnings: the innermost user frame and the innermost library frame are kept
(core/runner/syncsite.py); warnings from torch.compile's own work (dynamo/inductor on the stack) are dropped.
CUDA-free: stand-in package trees play torch's folder and a site-packages library (the real path is
exercised on the GPU machine, bench/device_loops/)."""
from __future__ import annotations

import importlib.util
import inspect
import sys

from core.runner.syncsite import SiteFinder


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tree(tmp_path):
    torch_root = tmp_path / "torch"
    (torch_root / "nn").mkdir(parents=True)
    (torch_root / "_inductor").mkdir()
    (torch_root / "nn" / "module.py").write_text("def to(warn):\n    return warn()\n")
    (torch_root / "_inductor" / "passes.py").write_text("def run(inner, warn):\n    return inner(warn)\n")
    lib = tmp_path / "venv" / "site-packages" / "transformers"
    lib.mkdir(parents=True)
    (lib / "trainer.py").write_text("def _maybe_log_save_evaluate(inner, warn):\n    return inner(warn)\n")
    finder = SiteFinder(str(torch_root), str(tmp_path / "runner"))
    return (finder, _module(torch_root / "nn" / "module.py", "fake_torch_nn"),
            _module(torch_root / "_inductor" / "passes.py", "fake_torch_inductor"),
            _module(lib / "trainer.py", "fake_transformers_trainer"))


def test_sync_inside_torch_points_at_the_user_line(tmp_path):
    finder, nn_mod, _, _ = _tree(tmp_path)

    def showwarning():  # stands for the warnings.showwarning hook: find() walks from its caller
        return finder.find(nn_mod.__file__, 2, sys._getframe(1))

    line = inspect.currentframe().f_lineno + 1
    site = nn_mod.to(showwarning)
    assert (site["file"], site["line"], site["via"]) == (__file__, line, "torch/nn/module.py:2")
    assert site["lib_label"] == "torch/nn/module.py:2 in to"  # the only library frame is torch's


def test_sync_inside_a_library_keeps_both_frames(tmp_path):
    finder, nn_mod, _, trainer = _tree(tmp_path)

    def showwarning():
        return finder.find(nn_mod.__file__, 2, sys._getframe(1))

    line = inspect.currentframe().f_lineno + 1
    site = trainer._maybe_log_save_evaluate(nn_mod.to, showwarning)
    assert (site["file"], site["line"]) == (__file__, line)
    # the innermost frame outside torch wins: the library code that called into torch
    assert site["lib_label"] == "transformers/trainer.py:2 in _maybe_log_save_evaluate"
    assert site["lib_file"] == trainer.__file__ and site["lib_line"] == 2 and site["via"] == "torch/nn/module.py:2"
    assert site["lib_code"] == "return inner(warn)"


def test_sync_in_user_code_is_kept_as_is(tmp_path):
    finder, _, _, _ = _tree(tmp_path)

    def showwarning():
        return finder.find(__file__, 40, sys._getframe(1))

    site = showwarning()
    assert site["file"] == __file__ and site["via"] is None and "lib_file" not in site


def test_sync_during_compilation_is_dropped(tmp_path):
    finder, nn_mod, inductor, _ = _tree(tmp_path)

    def showwarning():
        return finder.find(nn_mod.__file__, 2, sys._getframe(1))

    assert inductor.run(nn_mod.to, showwarning) is None

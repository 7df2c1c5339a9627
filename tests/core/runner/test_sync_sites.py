"""Host-sync warnings raised inside torch's Python code are attributed to the user's frame; warnings
from torch.compile's own work (dynamo/inductor on the stack) are dropped. CUDA-free: a stand-in
package tree plays torch's folder (the real path is exercised on the GPU machine, bench/device_run2.sh)."""
from __future__ import annotations

import importlib.util
import inspect
import types

from core.runner.child import ChildRunner


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fake_torch(tmp_path):
    root = tmp_path / "torch"
    (root / "nn").mkdir(parents=True)
    (root / "_inductor").mkdir()
    (root / "__init__.py").write_text("")
    (root / "nn" / "module.py").write_text("def to(warn):\n    return warn()\n")
    (root / "_inductor" / "passes.py").write_text("def run(inner, warn):\n    return inner(warn)\n")
    fake = types.SimpleNamespace(__file__=str(root / "__init__.py"))
    return fake, _module(root / "nn" / "module.py", "fake_torch_nn"), _module(root / "_inductor" / "passes.py",
                                                                               "fake_torch_inductor")


def test_sync_inside_torch_points_at_the_user_line(tmp_path):
    fake, nn_mod, _ = _fake_torch(tmp_path)
    runner = types.SimpleNamespace(torch=fake)
    torch_file = nn_mod.__file__

    def showwarning():  # stands for the warnings.showwarning hook: _user_site is called from it
        return ChildRunner._user_site(runner, torch_file, 2)

    line = inspect.currentframe().f_lineno + 1
    site = nn_mod.to(showwarning)
    assert site == (__file__, line, "torch/nn/module.py:2")


def test_sync_in_user_code_is_kept_as_is(tmp_path):
    fake, _, _ = _fake_torch(tmp_path)
    assert ChildRunner._user_site(types.SimpleNamespace(torch=fake), "/home/u/train.py", 40) == \
        ("/home/u/train.py", 40, None)


def test_sync_during_compilation_is_dropped(tmp_path):
    fake, nn_mod, inductor = _fake_torch(tmp_path)
    runner = types.SimpleNamespace(torch=fake)

    def showwarning():
        return ChildRunner._user_site(runner, nn_mod.__file__, 2)

    assert inductor.run(nn_mod.to, showwarning) is None

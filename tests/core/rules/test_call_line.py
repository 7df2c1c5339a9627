"""A finding's source line is the call inside the user's function, not its `def` (issue 31: 6 of the
sample's 7 findings pointed at `gpu_workloads.py:95`). Kineto names Python frames by their first line;
the callee frame inside the innermost user frame says what was called, the user's file says where."""
from __future__ import annotations

import json

from core.rules.call_line import callee_name
from core.rules.common import source_of
from core.trace.loader import load

SCRIPT = ("import torch\n\ndef step(x, opt):\n    y = x * 2\n    opt.zero_grad()\n"
          "    loss = y.sum()  # .item() in a comment\n    v = loss.item()\n    return v\n")


def _events(twice: bool = False):
    ev = [
        {"ph": "X", "cat": "python_function", "name": "train.py(3): step", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
        {"ph": "X", "cat": "python_function", "name": "torch/optim/optimizer.py(900): zero_grad", "pid": 1, "tid": 1,
         "ts": 110, "dur": 20},
        {"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 1, "tid": 1, "ts": 112, "dur": 10},
        {"ph": "X", "cat": "python_function", "name": "<built-in method item of Tensor object at 0x7f>", "pid": 1,
         "tid": 1, "ts": 150, "dur": 20},
        {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 152, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 102, "dur": 5},
    ]
    return {"traceEvents": ev}


def _sources(tmp_path, script: str | None):
    if script is not None:
        (tmp_path / "train.py").write_text(script)
    (tmp_path / "t.pt.trace.json").write_text(json.dumps(_events()))
    m = load(tmp_path / "t.pt.trace.json", use_cache=False).models[0]
    return {m.name(r): source_of(m, r) for r in range(len(m.slices.ts_ns)) if m.name(r).startswith("aten::")}


def test_the_source_is_the_calling_line_inside_the_function(tmp_path):
    src = _sources(tmp_path, SCRIPT)
    assert (src["aten::item"].line, src["aten::item"].function) == (7, "step")  # not the def line 3
    assert src["aten::zero_"].line == 5
    assert src["aten::mul"].line == 3  # `*` has no Python frame to search for: the frame's own line


def test_no_guessed_lines(tmp_path):
    assert _sources(tmp_path, None)["aten::item"].line == 3  # the source is not here
    twice = SCRIPT.replace("    return v\n", "    w = y.item()\n    return v + w\n")
    assert _sources(tmp_path, twice)["aten::item"].line == 3  # two lines call item(): which one is unknown


def test_callee_names():
    assert callee_name("<built-in method item of Tensor object at 0x7f>") == "item"
    assert callee_name("<built-in function isinstance>") == "isinstance"
    assert callee_name("torch/optim/optimizer.py(900): zero_grad") == "zero_grad"
    assert callee_name("torch/nn/modules/module.py(1751): _wrapped_call_impl") == ""  # model(x): no name to find

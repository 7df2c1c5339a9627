"""core.rules.compile_info: the runner's compile.json and older shapes, read without raising."""
from __future__ import annotations

import json

from helpers import shared_trace

from core.rules import compile_info as ci


def test_counters_name_the_breaks_when_logs_were_not_captured():
    # what torch._dynamo.utils.counters held for print() + a data-dependent branch + .item() (shared traces)
    counters = json.loads(shared_trace("compile_breaks.dynamo_counters.json").read_text())
    breaks = ci.graph_breaks({"graph_breaks": [], "counters": counters.get("counters", counters)})
    assert breaks and all(b.reason and "\n" not in b.reason and b.count >= 1 for b in breaks)
    branch = next(b for b in breaks if b.reason == "Data-dependent branching")
    assert any("torch.cond" in h for h in branch.hints) and "data-dependent" in branch.explanation


def test_old_and_malformed_shapes():
    old = {"graph_breaks": [{"reason": "print", "user_frame": {"file": "t.py", "line": 3, "function": "f"}}, 7],
           "recompiles": [{"reason": "0/0: L['n'] == 3", "function": "f", "file": "t.py", "line": "x"}, None]}
    (b,) = ci.graph_breaks(old)
    assert (b.reason, b.source.line, b.source.function, b.count) == ("print", 3, "f", 1)
    (r,) = ci.recompiles(old)
    assert r.reasons == ("L['n'] == 3",) and r.frames == (0,) and r.source is None
    assert "'n'" in ci.recompile_fix(r.reasons[0]) and "tensor" in ci.recompile_fix(r.reasons[0])
    assert ci.graph_breaks({"graph_breaks": "oops"}) == [] and ci.recompiles(None) == []


def test_fixes_fit_the_guard():
    assert "mark_dynamic(x, 1)" in ci.recompile_fix("tensor 'x' size mismatch at index 1. expected 128, actual 200")
    assert "drop_last" in ci.recompile_fix("tensor 'x' size mismatch at index 0. expected 64, actual 96")
    assert "dtype" in ci.recompile_fix("tensor 'x' dtype mismatch. expected Float, actual Half")
    assert "TORCH_LOGS=recompiles" in ci.recompile_fix("something else")
    assert ci.readable_function("torch_dynamo_resume_in_forward_at_8") == "forward (after the graph break at line 8)"

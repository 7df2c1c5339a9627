"""non_contiguous_input's kinds of copies and host_sync's printing cause, on real traces.

- gpu_issues / cpu_train plant an NHWC batch `.permute(0, 3, 1, 2)` fed to a conv: the copies are the conv
  weights converted to channels_last, and the evidence must show the permuted input itself.
- gpu_memory's ViewBackward0 copies are backward copies: the fix points at the forward op, not "reorder".
- No shared trace prints a tensor, so a small CPU trace is recorded here (torch CPU, with_stack=True) with
  print(t) / f"{t}", a user's own .contiguous() and an implicit reshape copy.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import no_torch_skip, shared_trace

from core.rules import analyze

pytestmark = no_torch_skip  # the workload below runs torch in a child; nothing here imports it


def _layout(result):
    return [f for f in result.findings if f.rule == "non_contiguous_input"]


@pytest.mark.parametrize("name,dims,strides", [
    ("gpu_issues.pt.trace.json.gz", "[16, 3, 128, 128]", "[49152, 1, 384, 3]"),
    ("cpu_train.pt.trace.json.gz", "[32, 3, 32, 32]", "[3072, 1, 96, 3]"),
])
def test_conv_weight_conversion_names_the_permuted_input(loaded, name, dims, strides):
    result = analyze(loaded(shared_trace(name)))
    conv = [f for f in _layout(result) if "converted to channels_last" in f.title]
    assert len(conv) == 1, [f.title for f in _layout(result)]
    f = conv[0]
    assert "permuted NHWC batch" in f.title
    ev = [e for e in f.evidence if e.get("input_dims") == dims and e.get("input_strides") == strides]
    assert ev, "the planted permuted input must be in the evidence"
    assert any(e["name"].startswith("aten::permute") for e in f.evidence)
    copies = [e for e in f.evidence if e["name"] == "aten::contiguous"]
    assert copies and all(e["converted_to"] == "channels_last" for e in copies)
    # the copied weights are dense (contiguous) tensors, shown apart from the conv input
    assert all(e["copied_dims"] != e["input_dims"] for e in copies)
    assert "channels_last" in f.fix and "contiguous()" in f.fix
    assert f.source is not None  # the permute's user line
    # no other layout finding bills the same copies
    assert not any("cudnn_convolution" in g.title or "_convolution " in g.title for g in _layout(result) if g is not f)


def test_backward_copies_point_at_the_forward_op(loaded):
    result = analyze(loaded(shared_trace("gpu_memory.pt.trace.json.gz")))
    views = [f for f in _layout(result) if "ViewBackward0" in f.title]
    assert views
    for f in views:
        assert "reorder the ops" not in f.fix
        assert "backward" in f.fix and "aten::view" in f.fix
        assert any(e["name"].startswith("forward op of ViewBackward0") for e in f.evidence)
        assert f.source is not None
    # nn.MultiheadAttention's own .contiguous() is library code, named as such (not "called from Python")
    ev = [e for f in _layout(result) for e in f.evidence if e["name"] == "aten::contiguous"]
    assert not any(e.get("asked_by") == "aten::contiguous" for e in ev)
    assert any(str(e.get("asked_by", "")).startswith("torch/nn/functional.py") for e in ev)


WORKLOAD = textwrap.dedent('''
    import sys
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule


    def step(x, w):
        y = (x @ w).relu()
        loss = y.mean()
        print(f"loss {loss}")
        print(y[:2])
        return loss


    def layout(a):
        b = a.transpose(0, 1).contiguous()
        c = a.transpose(0, 1).reshape(-1)
        return b.sum() + c.sum()


    x = torch.randn(64, 32)
    w = torch.randn(32, 16, requires_grad=True)
    a = torch.randn(256, 128)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
        for _ in range(3):
            step(x, w).backward()
            layout(a)
            prof.step()
''')


@pytest.fixture(scope="module")
def printed(tmp_path_factory, loaded):
    d = tmp_path_factory.mktemp("printing")
    script, trace = d / "workload.py", d / "trace.json"
    script.write_text(WORKLOAD)
    subprocess.run([sys.executable, str(script), str(trace)], check=True, capture_output=True, timeout=120)
    return script, analyze(loaded(trace))


def test_printing_a_tensor_is_named_with_the_user_line(printed):
    script, result = printed
    syncs = [f for f in result.findings if f.rule == "host_sync"]
    pr = [f for f in syncs if "printing a tensor" in f.title]
    assert len(pr) == 1, [f.title for f in syncs]
    f = pr[0]
    assert f.hint and "would block on a GPU" in f.title
    assert f.count == 4  # two prints per step, two active steps (not the ~100 ops they run)
    assert f.source is not None and f.source.file.endswith("workload.py") and f.source.function == "step"
    assert "every N steps" in f.fix
    # the ops of printing are not reported again under their own names
    assert not any("is_nonzero" in g.title or "masked_select" in g.title for g in syncs)
    json.dumps(result.to_json())


def test_explicit_contiguous_not_counted_but_implicit_reshape_is(printed):
    _, result = printed
    layout = _layout(result)
    names = {e["name"] for f in layout for e in f.evidence}
    assert "aten::reshape" in names  # a.transpose(0, 1).reshape(-1) had to copy
    assert not any("aten::contiguous" in f.title for f in layout)  # the user's own .contiguous() is the fix
    assert sum(f.count for f in layout) == 2  # one reshape copy per active step


# Recorded on the H200 device (torch 2.11+cu130, with_stack=True): the same step() with print(f"loss {loss}")
# and print(y[0, :3]) of CUDA tensors, 2 active steps.
GPU_PRINT = Path(__file__).parents[2] / "data" / "gpu_print.pt.trace.json.gz"


def test_printing_cuda_tensors_is_the_named_sync_cause(loaded):
    result = analyze(loaded(GPU_PRINT))
    syncs = [f for f in result.findings if f.rule == "host_sync"]
    assert len(syncs) == 1, [f.title for f in syncs]
    f = syncs[0]
    assert "Host sync from printing a tensor (str/print/format)" in f.title and not f.hint
    assert f.count == 4 and f.impact_ns > 0
    assert f.source is not None and f.source.function == "step"
    # every real sync of the step is billed here (none left under item / is_nonzero names)
    assert not any("aten::item" in g.title for g in syncs)

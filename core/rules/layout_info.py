"""What a layout copy is, for non_contiguous_input: memory-format conversion, backward copy, explicit call.

- memory-format conversion: `aten::contiguous(memory_format=channels_last)` inside a convolution. The
  copied tensor (the conv weight) is already dense; cuDNN/oneDNN picks the input's memory format and
  converts the weight to it every call. The trace keeps no "Concrete Inputs", so the target format comes
  from the strides of the clone's `aten::copy_` (its first input is the destination).
- backward copy: a copy under an autograd node (`ViewBackward0`, ...). Its cause is a transpose/permute in
  forward; the fwd->bwd flow names the forward op and its user line.
- explicit call: an `aten::contiguous` with no op above it is a `.contiguous()` written in Python; with
  stacks the innermost Python frame tells user code (a deliberate copy, not counted) from library code.
Per-row Python here only touches unique stride strings and the rows a finding reports.
"""
from __future__ import annotations

import json
import re

import numpy as np

from core.analysis.tree import parents, parse_frame, python_stack
from core.rules import common
from core.trace import event_names
from core.trace.model import FlowKind, Kind

TRANSPOSES = ("aten::transpose", "aten::permute", "aten::t", "aten::swapaxes", "aten::movedim", "aten::mT")
_BACKWARD = re.compile(r"Backward\d*$")


def tensors(text: str) -> list:
    """The per-argument lists of an "Input Dims"/"Input Strides" text ([] when unparsable)."""
    if not text:
        return []
    try:
        out = json.loads(text)
    except ValueError:
        return []
    return out if isinstance(out, list) else []


def contiguous_strides(dims: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= max(int(d), 1)
    return out[::-1]


def channels_last_strides(dims: list[int]) -> list[int] | None:
    """Strides of a channels_last (4-D NHWC) / channels_last_3d (5-D NDHWC) tensor of NC... dims."""
    if len(dims) not in (4, 5):
        return None
    order = [0] + list(range(2, len(dims))) + [1]  # N, spatial..., C from outermost to innermost
    out, acc = [0] * len(dims), 1
    for ax in reversed(order):
        out[ax] = acc
        acc *= max(int(dims[ax]), 1)
    return out


def _same(dims, a, b) -> bool:
    """Equal strides, ignoring size-1 dimensions (their stride is arbitrary)."""
    return len(a) == len(b) == len(dims) and all(d == 1 or x == y for d, x, y in zip(dims, a, b))


def memory_format(dims, strides) -> str | None:
    """"contiguous" / "channels_last" when the strides are that dense layout of dims, else None."""
    if not isinstance(dims, list) or not isinstance(strides, list) or not dims:
        return None
    if _same(dims, strides, contiguous_strides(dims)):
        return "contiguous"
    cl = channels_last_strides(dims)
    return "channels_last" if cl is not None and _same(dims, strides, cl) else None


def format_conversions(m, clones: np.ndarray, askers: np.ndarray) -> np.ndarray:
    """Per clone: the memory format a convolution converts a dense tensor to ("channels_last" /
    "contiguous"), or "" when the copy is of a non-contiguous tensor (or the trace has no strides)."""
    s = m.slices
    out = np.full(len(clones), "", object)
    if not len(clones) or not common.has_shapes(m):
        return out
    par = parents(m)
    copies = common.rows_with_names(m, "aten::copy_", common.exact("aten::copy_"), [Kind.CPU_OP])
    dst = {int(p): int(s.at("input_strides", r)) for p, r in zip(par[copies].tolist(), copies.tolist())}
    conv = common.name_ids(m, "conv-ops", event_names.is_convolution_op)
    is_conv = np.isin(s.name[askers], conv)
    memo: dict[tuple[int, int, int], str] = {}
    for k in np.flatnonzero(is_conv).tolist():
        cl = int(clones[k])
        key = (int(s.at("input_dims", cl)), int(s.at("input_strides", cl)), dst.get(cl, 0))
        if key not in memo:
            dims, src, to = (tensors(m.strings[key[0]]), tensors(m.strings[key[1]]), tensors(m.strings[key[2]]))
            memo[key] = ""
            if dims and src and to:
                a, b = memory_format(dims[0], src[0]), memory_format(dims[0], to[0])
                if a and b and a != b:
                    memo[key] = b
        out[k] = memo[key]
    return out


def conv_input(m, asker: int, copied_dims) -> tuple[list, list] | None:
    """(dims, strides) of the activation a convolution op reads: the first >= 4-D input that is not
    the copied tensor (convolution_backward's inputs are grad_output, input, weight: input is second)."""
    s = m.slices
    dims = tensors(m.strings[int(s.at("input_dims", asker))])
    strides = tensors(m.strings[int(s.at("input_strides", asker))])
    order = list(range(len(dims)))
    if "backward" in m.name(asker) and len(order) > 1:
        order = [1, 0] + order[2:]
    for k in order:
        d = dims[k] if k < len(dims) else None
        if isinstance(d, list) and len(d) >= 4 and d != copied_dims and k < len(strides):
            return d, strides[k]
    return None


def permute_feeding(m, rows: np.ndarray, dims: list, strides: list) -> int:
    """An aten::permute among `rows`' steps whose output is the conv input (dims, strides): its input
    has the conv's dims in N, spatial..., C order and contiguous strides. -1 if none."""
    if memory_format(dims, strides) != "channels_last":
        return -1
    order = [0] + list(range(2, len(dims))) + [1]
    nhwc = [dims[a] for a in order]
    want = json.dumps(nhwc)
    ids = common.name_ids(m, f"permute-in:{want}", lambda t: t.startswith(f"[{want}"))
    perm = common.rows_with_names(m, "aten::permute", common.exact("aten::permute"), [Kind.CPU_OP])
    perm = perm[np.isin(m.slices.at("input_dims", perm), ids)] if len(ids) else perm[:0]
    if not len(perm):
        return -1
    t0 = int(m.slices.ts_ns[rows].min())
    before = perm[m.slices.ts_ns[perm] <= t0]
    return int(before[-1]) if len(before) else int(perm[0])


def backward_nodes(m, rows: np.ndarray) -> np.ndarray:
    """Innermost autograd node (`...Backward0`) above each row, -1 in forward."""
    ids = common.name_ids(m, "autograd-nodes", lambda n: _BACKWARD.search(n) is not None and "::" not in n)
    return common.ancestor_matching(m, rows, ids)


def forward_op(m, node: int) -> int:
    """The forward op that created an autograd node (fwd->bwd flow), -1 when unknown."""
    f = m.flows
    hit = np.flatnonzero((f.dst == int(node)) & (f.kind == FlowKind.FWD_BWD))
    return int(f.src[hit[0]]) if len(hit) else -1


def transpose_after(m, fwd: int, window: int = 3) -> int:
    """A transpose/permute recorded right after forward op `fwd` (next autograd sequence numbers on its
    thread): the op that made the gradient reaching `fwd`'s backward non-contiguous. -1 if none."""
    s = m.slices
    seq = int(s.at("seq", fwd))
    if seq < 0:
        return -1
    rows = common.rows_with_names(m, "transposes", common.exact(*TRANSPOSES), [Kind.CPU_OP])
    rows = rows[(s.track[rows] == s.track[fwd]) & (s.at("seq", rows) > seq) & (s.at("seq", rows) <= seq + window)
                & (s.ts_ns[rows] > s.ts_ns[fwd])]
    return int(rows[0]) if len(rows) else -1


def direct_call_owner(m, row: int) -> str | None:
    """Who called an op that has no op above it: "user" (a frame of user code), the library function
    (e.g. "torch/nn/functional.py: _in_projection_packed"), or None when the trace has no stacks."""
    for fr in python_stack(m, int(row)):
        name = m.name(fr)
        if name.startswith("<built-in"):
            continue
        if not event_names.is_library_frame(name):
            return "user"
        parsed = parse_frame(name)
        return f"{parsed[0]}: {parsed[2]}" if parsed else name
    return None

"""Fixes, titles and evidence of non_contiguous_input findings by the kind of copy (see layout_info).

- conversion: a convolution converts its (dense) weights to the input's memory format every call;
  the evidence is the conv's input layout, the source the permute that made the input NHWC.
- backward copy: the fix points at the forward op (and the transpose/permute after it) by fwd->bwd flow.
- library call: a torch function's own .contiguous() on what the user fed it.
- reshape / default: make the tensor contiguous once where it is created.
"""
from __future__ import annotations

import numpy as np

from core.rules import common, layout_info as li
from core.rules.base import RuleContext, Source

DEFAULT_FIX = ("Produce the tensor in the layout the op wants once, outside the hot loop: e.g. call "
               ".contiguous() (or .to(memory_format=torch.channels_last) for convolutions) when the data is "
               "created instead of feeding a permuted/transposed view; for convolutions keep input and model "
               "in the same memory format (model.to(memory_format=torch.channels_last)).")
RESHAPE_FIX = ("reshape() had to copy because its input was a non-contiguous view (after permute/transpose); "
               "reorder the ops so the view comes first, or make the tensor contiguous once where it is created.")


def _at(src: Source | None) -> str:
    return f" at {src.file}:{src.line} ({src.function})" if src else ""


def _fmt(x) -> str:
    return str(x) if x is not None else "?"


def fix_for(m, g: dict, window: int = 3) -> tuple[str, list[dict], Source | None]:
    """(fix, leading evidence, source or None to keep the default) for a non-conversion group."""
    if g["kind"] == "lib":
        return (f"{g['op']} (torch library code) copies the tensor your code passes it because it is not in "
                "the layout it expects: feed it contiguous / batch-first tensors, or replace the module "
                "(e.g. nn.MultiheadAttention -> a qkv nn.Linear + F.scaled_dot_product_attention on (B, H, T, D) "
                "tensors), or let torch.compile fuse the copy away."), [], None
    nodes = g["node"][g["node"] >= 0]
    if len(nodes):
        return _backward_fix(m, g, int(nodes[0]), window)
    if "reshape" in g["copy_op"]:
        return RESHAPE_FIX, [], None
    return DEFAULT_FIX, [], None


def _backward_fix(m, g: dict, node: int, window: int) -> tuple[str, list[dict], Source | None]:
    s = m.slices
    node_name = m.name(node)
    fwd = li.forward_op(m, node)
    if fwd < 0:
        return (f"These copies run in backward ({node_name}): the gradient reaching it is not contiguous because "
                "of a transpose/permute in forward. Keep tensors in the layout the next op wants in forward "
                "(avoid the transpose/permute), or let torch.compile fuse the copy; a .contiguous() in forward "
                "moves the copy, it does not remove it."), [], None
    src = common.source_of(m, fwd)
    tr = li.transpose_after(m, fwd, window)
    ev = [{"name": f"forward op of {node_name}: {m.name(fwd)}", "ts_ns": int(s.ts_ns[fwd]),
           "dur_ns": int(s.dur_ns[fwd]), "rank": m.rank, "row": int(fwd),
           "input_dims": m.strings[int(s.at("input_dims", fwd))],
           "input_strides": m.strings[int(s.at("input_strides", fwd))]}]
    if tr >= 0:
        ev.append({"name": f"transpose after it in forward: {m.name(tr)}", "ts_ns": int(s.ts_ns[tr]),
                   "dur_ns": int(s.dur_ns[tr]), "rank": m.rank, "row": int(tr),
                   "input_dims": m.strings[int(s.at("input_dims", tr))],
                   "input_strides": m.strings[int(s.at("input_strides", tr))]})
        lib = li.direct_call_owner(m, tr)
        inside = f" inside {lib}" if lib and lib != "user" else ""
        cause = f"the {m.name(tr)}{inside} that follows it in forward{_at(common.source_of(m, tr) or src)}"
    else:
        lib, cause = None, "a transpose/permute after it in forward"
    remedy = ("Remove that transpose/permute by keeping tensors in the layout the next op wants (e.g. batch-first "
              "end to end), or let torch.compile fuse the copy")
    if lib and lib != "user":
        remedy = ("That transpose is torch library code, so the copy comes with the module: use a module whose "
                  "layout needs no transpose (e.g. your own qkv nn.Linear + F.scaled_dot_product_attention on "
                  "(B, H, T, D) tensors instead of nn.MultiheadAttention), or let torch.compile fuse the copy")
    fix = (f"These copies run in backward: {node_name} is the backward of the forward {m.name(fwd)}{_at(src)}, and "
           f"the gradient reaching it is not contiguous because of {cause}. {remedy}; a .contiguous() in forward "
           "moves the copy, it does not remove it.")
    return fix, ev, src


def conversion_finding(ctx: RuleContext, m, i: int, g: dict):
    """The finding for convolutions converting their weights to the input's memory format every call."""
    s = m.slices
    fmt = g["fmt"]
    order = np.argsort(s.ts_ns[g["a"]], kind="stable")
    entry_ev, inputs, seen = [], {}, set()
    for a, cl in zip(g["a"][order].tolist(), g["c"][order].tolist()):
        copied = li.tensors(m.strings[int(s.at("input_dims", cl))])
        got = li.conv_input(m, a, copied[0] if copied else None)
        if got is None:
            continue
        inputs[a] = got
        key = (str(got[0]), str(got[1]))
        if key not in seen:
            seen.add(key)
            entry_ev.append({"name": f"{m.name(a)} input ({li.memory_format(*got) or 'non-contiguous'} in memory)",
                             "ts_ns": int(s.ts_ns[a]), "dur_ns": int(s.dur_ns[a]),
                             "rank": m.rank, "row": int(a), "input_dims": str(got[0]), "input_strides": str(got[1])})
    # the first convolution of the window reads the tensor that brings the format in; the others follow it
    first = int(g["a"][order[0]])
    first_in = inputs.get(first)
    perm = li.permute_feeding(m, g["a"], *first_in) if first_in else -1
    if perm >= 0:
        why = "the input is a permuted NHWC batch"
    elif first_in and li.memory_format(*first_in) == fmt:
        why = f"the input is {fmt} in memory while the model's weights are not"
    else:
        why = "the input and the model are in different memory formats"
    ev = []
    for e in common.evidence(m, g["p"], asked_by=g["op"]):
        a = int(g["a"][np.flatnonzero(g["p"] == e["row"])[0]])
        got = inputs.get(a)
        e["input_dims"], e["input_strides"] = (str(got[0]), str(got[1])) if got else ("", "")
        e["copied_dims"] = m.strings[int(s.at("input_dims", e["row"]))]
        e["copied_strides"] = m.strings[int(s.at("input_strides", e["row"]))]
        e["converted_to"] = fmt
        ev.append(e)
    src = None
    if perm >= 0:
        src = common.source_of(m, perm)
        entry_ev.insert(0, {"name": "aten::permute that makes the input NHWC", "ts_ns": int(s.ts_ns[perm]),
                            "dur_ns": int(s.dur_ns[perm]), "rank": m.rank, "row": int(perm),
                            "input_dims": m.strings[int(s.at("input_dims", perm))],
                            "input_strides": m.strings[int(s.at("input_strides", perm))]})
    src = src or common.source_of(m, first) or common.forward_source(m, first)
    shown = f" ({_fmt(first_in[0])} strides {_fmt(first_in[1])})" if first_in else ""
    if fmt == "channels_last":
        fix = ("Make the input contiguous once where the batch is created (x = x.permute(0, 3, 1, 2).contiguous(), "
               "or build it NCHW), or go channels_last consistently: model.to(memory_format=torch.channels_last) "
               "once and x.contiguous(memory_format=torch.channels_last), so that weights and input agree and "
               "no per-step weight conversion is needed (with bf16/fp16 autocast cuDNN runs NHWC natively).")
    else:
        fix = ("The model is channels_last but the input is not: convert the input once with "
               "x.contiguous(memory_format=torch.channels_last) where the batch is created, or keep the model "
               "in contiguous format; the weights are then not converted every step.")
    rows = np.concatenate([g["p"], g["c"]] + ([np.array([perm])] if perm >= 0 else []))
    return ctx.finding(
        "non_contiguous_input", i,
        title=f"Conv weights converted to {fmt} every step because {why}{shown} ({g['n']}×)",
        count=g["n"], impact_ns=g["cost"], time_ranges=common.ranges_of(m, g["p"]),
        evidence=common.one_shape(entry_ev + ev, keys_from=ev),
        source=src, fix=fix, evidence_rows=rows, fix_rows=rows)

"""FLOPs from recorded shapes (record_shapes=True), achieved TFLOP/s and MFU per step.

Counted ops (the innermost of a nest, so aten::linear -> aten::addmm counts once, as addmm):
  mm / _scaled_mm [M,K]x[K,N]: 2MKN · addmm / _addmm_activation (bias, [M,K], [K,N]): 2MKN
  bmm [B,M,K]x[B,K,N]: 2BMKN · baddbmm (bias, a, b): 2BMKN · matmul: broadcast batch x 2MKN
  linear (x[...,K], w[N,K]): 2·prod(x[:-1])·K·N
  conv (cudnn / mkldnn / miopen / convolution / convN d): 2·N·Cout·prod(out spatial)·(Cin/groups)·prod(kernel);
      the output size comes from the matching convolution_backward (its grad_output), else from the
      stride / padding / dilation re-read from the event's Concrete Inputs (core.trace.rawevent, a few
      distinct shapes at most)
  attention (scaled_dot_product_attention and its flash / efficient / cudnn / math kernels' ops):
      q [B,H,L,E], k [B,H,S,E], v [B,H,S,Ev]: 2BHLS·E + 2BHLS·Ev (full, non-causal count, as
      torch.utils.flop_counter)
Backward: the backward ops' own shapes (autograd's aten::mm calls; convolution_backward = its forward per
gradient computed: grad input and / or grad weight, from its output_mask re-read once per shape, 2 when it
cannot be read; attention backward ops = 2.5x forward:
FlashAttention's 5 matmuls against 2). A step that ran autograd (`autograd::engine::evaluate_function`)
but where no backward op carries shapes gets the documented 2x rule: backward = 2 x forward.
MFU = sum over dtypes of (FLOPs / dense peak of the dtype) / step time, with peaks from
resources/device_peaks.toml keyed by the deviceProperties name; unknown device: TFLOP/s only (NaN MFU).
Ops belong to the step window their CPU call starts in. Step time = the longer of the window and the GPU
span of the work launched from it (first start to last end): a GPU-bound loop's CPU runs ahead, so its
ProfilerStep spans are far shorter than a step (H200 bf16 GEMM loop: 1.6 ms windows, 16.9 ms of GPU work
per step, 17.4 ms unprofiled).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core import resource_files
from core.analysis.derived import cached
from core.analysis.step_windows import StepWindows
from core.analysis.tree import parents
from core.trace.model import FlowKind, Kind, TraceModel

BACKWARD_ROOT = "autograd::engine::evaluate_function"
MAX_RAW_READS = 16  # conv shapes whose output size is re-read from the file (each read inflates up to it)

MM = {"aten::mm": (0, 1), "aten::_scaled_mm": (0, 1), "aten::addmm": (1, 2), "aten::_addmm_activation": (1, 2)}
BMM = {"aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
# conv op -> positions of (stride, padding, dilation) in its arguments (Concrete Inputs)
CONV = {"aten::cudnn_convolution": (3, 2, 4), "aten::mkldnn_convolution": (4, 3, 5),
        "aten::miopen_convolution": (4, 3, 5), "aten::convolution": (3, 4, 5), "aten::_convolution": (3, 4, 5),
        "aten::conv1d": (3, 4, 5), "aten::conv2d": (3, 4, 5), "aten::conv3d": (3, 4, 5),
        "aten::_slow_conv2d_forward": (4, 5, None), "aten::convolution_overrideable": (3, 4, 5)}
CONV_BACKWARD = "aten::convolution_backward"
# attention op -> (q, k, v argument positions, layout "BHLE" / "BLHE", FLOPs multiplier)
_SDPA_FWD = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
             "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
             "aten::_cudnn_attention_forward", "aten::_scaled_dot_product_flash_attention_for_cpu",
             "aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_fused_attention_overrideable")
_SDPA_BWD = ("aten::_scaled_dot_product_flash_attention_backward",
             "aten::_scaled_dot_product_efficient_attention_backward",
             "aten::_scaled_dot_product_cudnn_attention_backward", "aten::_cudnn_attention_backward",
             "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
ATTENTION = ({n: (0, 1, 2, "BHLE", 1.0) for n in _SDPA_FWD}
             | {n: (0, 1, 2, "BLHE", 1.0) for n in ("aten::_flash_attention_forward", "aten::_efficient_attention_forward")}
             | {n: (1, 2, 3, "BHLE", 2.5) for n in _SDPA_BWD}
             | {n: (1, 2, 3, "BLHE", 2.5) for n in ("aten::_flash_attention_backward", "aten::_efficient_attention_backward")})
FLOP_OPS = frozenset(MM) | frozenset(BMM) | frozenset(CONV) | frozenset(ATTENTION) | {
    "aten::matmul", "aten::linear", CONV_BACKWARD}
DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
          "c10::Float8_e5m2fnuz": "fp8"}


@dataclass(frozen=True, slots=True)
class OpFlops:
    """One row per counted (innermost) FLOP op."""

    row: np.ndarray  # int64 slice row
    flops: np.ndarray  # float64
    dtype: np.ndarray  # object: "bf16", "fp32", ... ("" unknown)
    backward: np.ndarray  # bool: runs under autograd
    uncounted: int  # FLOP ops whose shapes did not give a count (conv without an output size, ...)


@dataclass(frozen=True, slots=True)
class StepFlops:
    number: np.ndarray  # int64
    flops: np.ndarray  # float64 per step (NaN: no shapes recorded)
    tflops: np.ndarray  # float64 achieved TFLOP/s (flops / step duration)
    mfu_pct: np.ndarray  # float64 (NaN: unknown device or dtype peak)
    backward_estimated: np.ndarray  # bool: the 2x rule gave the backward FLOPs
    device: str  # deviceProperties name ("" none)
    peak_tflops: dict  # dtype -> dense peak of the device ({} unknown)
    fp32_math: str = "fp32"  # the peak fp32 FLOPs are divided by: "tf32" when the GEMMs / convs ran on TF32

    def __len__(self) -> int:
        return len(self.number)


@lru_cache(maxsize=1)
def peak_table() -> tuple[dict, ...]:
    return tuple(resource_files.load_toml("device_peaks.toml")["device"])


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^0-9a-z]+", text.lower()) if t}


def device_peaks(device_name: str) -> dict:
    """The first device_peaks.toml entry whose `match` words all occur in the name ({} none)."""
    words = _tokens(device_name)
    for entry in peak_table():
        if all(w.lower() in words for w in entry["match"]):
            return entry
    return {}


def model_device_name(model: TraceModel) -> str:
    props = model.meta.device_properties
    wanted = model.devices[0] if model.devices else None
    for p in props:
        if wanted is None or p.get("id") == wanted:
            return str(p.get("name") or "")
    return str(props[0].get("name") or "") if props else ""


def _prod(values) -> int:
    return int(math.prod(int(v) for v in values))


def _mm(a, b) -> float | None:
    if len(a) != 2 or len(b) != 2:
        return None
    return 2.0 * a[0] * a[1] * b[1]


def _bmm(a, b) -> float | None:
    if len(a) != 3 or len(b) != 3:
        return None
    return 2.0 * a[0] * a[1] * a[2] * b[2]


def _matmul(a, b) -> float | None:
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return 2.0 * a[0]
    if len(a) == 1:  # [K] x [..., K, N]
        return 2.0 * _prod(b[:-2]) * b[-2] * b[-1]
    if len(b) == 1:  # [..., M, K] x [K]
        return 2.0 * _prod(a[:-2]) * a[-2] * a[-1]
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    return 2.0 * _prod(batch) * a[-2] * a[-1] * b[-1]


def _linear(x, w) -> float | None:
    if not x or len(w) != 2:
        return None
    return 2.0 * _prod(x[:-1]) * x[-1] * w[0]


def _attention(dims, spec) -> float | None:
    qi, ki, vi, layout, mult = spec
    if len(dims) <= vi or len(dims[qi]) != 4 or len(dims[ki]) != 4 or len(dims[vi]) != 4:
        return None
    q, k, v = dims[qi], dims[ki], dims[vi]
    if layout == "BHLE":
        b, h, lq, e = q
        s_len, ev = k[2], v[3]
    else:
        b, lq, h, e = q
        s_len, ev = k[1], v[3]
    return mult * (2.0 * b * h * lq * s_len * e + 2.0 * b * h * lq * s_len * ev)


def _conv(x, w, out_spatial) -> float:
    return 2.0 * x[0] * w[0] * _prod(out_spatial) * w[1] * _prod(w[2:])


def _conv_out(x, w, stride, padding, dilation) -> tuple | None:
    n_sp = len(x) - 2
    try:
        st = _expand(stride, n_sp, 1, 1)
        pad = _expand(padding, n_sp, 0, 0)
        dil = _expand(dilation, n_sp, 1, 1)
    except (TypeError, ValueError, RecursionError):
        return None
    out = tuple((x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // st[i] + 1 for i in range(n_sp))
    return out if all(o > 0 for o in out) else None


def _expand(value, n: int, default: int, lo: int) -> list[int]:
    """A conv argument (stride / padding / dilation) from Concrete Inputs: ints >= lo (a stride of 0 or
    1e999 is no conv the trace could have run: ValueError)."""
    if value is None or value == "":
        return [default] * n
    v = json.loads(value) if isinstance(value, str) and len(value) < 256 else value
    v = v if isinstance(v, list) else [v]
    if not all(type(x) is int and lo <= x < MAX_DIM for x in v) or len(v) not in (1, n):
        raise ValueError("not a conv argument")
    return v * n if len(v) == 1 else v


def _dtype(types_text: str) -> str:
    """The first known dtype of the op's Input type (a list of strings; null, a number, 1e999, nested lists
    or objects there: unknown)."""
    try:
        types = json.loads(types_text) if types_text else []
    except (ValueError, RecursionError):
        return ""
    for t in types if isinstance(types, list) else ():
        if isinstance(t, str) and t in DTYPES:
            return DTYPES[t]
    return ""


def op_flops(model: TraceModel) -> OpFlops:
    """FLOPs of every counted op of the trace (cached per model)."""
    return cached(model, "op_flops", lambda: _op_flops(model))


def _leaf_candidates(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(innermost FLOP op rows, backward flag per row)."""
    s = model.slices
    st = model.strings
    is_flop = np.zeros(len(st), bool)
    is_flop[st.ids_matching(lambda n: n in FLOP_OPS)] = True
    is_root = np.zeros(len(st), bool)
    is_root[st.ids_matching(lambda n: n.startswith(BACKWARD_ROOT))] = True
    rows = np.flatnonzero(is_flop[s.name] & (s.kind == Kind.CPU_OP))
    par = parents(model)
    leaf = np.ones(len(s), bool)
    backward = np.zeros(len(rows), bool)
    pending = np.ones(len(rows), bool)  # still looking for the nearest FLOP ancestor
    cur = par[rows]
    while True:
        live = cur >= 0
        if not live.any():
            break
        idx = np.flatnonzero(live)
        anc = cur[idx]
        backward[idx] |= is_root[s.name[anc]]
        hit = pending[idx] & is_flop[s.name[anc]]
        leaf[anc[hit]] = False
        pending[idx[hit]] = False
        cur[idx] = par[anc]
    keep = leaf[rows]
    return rows[keep], backward[keep]


MAX_DIM = 1 << 48  # no tensor dimension is larger (a product of a few stays far inside a float64)


def _shape(value) -> tuple:
    """A tensor's dims as Kineto writes them (a list of ints >= 0); () for anything else - a scalar, a JSON
    object, a nested list (a TensorList), strings, booleans, 1e999 or a 400-digit number - which no count
    accepts (every rule needs its tensors' ranks), so the op is counted as unknown."""
    if not isinstance(value, list) or len(value) > 64:
        return ()
    if all(type(v) is int and 0 <= v < MAX_DIM for v in value):
        return tuple(value)
    return ()


def input_shapes(text: str) -> list[tuple]:
    """The Input Dims of an op (JSON text from the trace, not trusted): one shape per input (see _shape)."""
    try:
        dims = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return [_shape(v) for v in dims] if isinstance(dims, list) else []


def _op_flops(model: TraceModel) -> OpFlops:
    """FLOPs once per distinct (op name, input dims): a training loop repeats a few hundred signatures."""
    s = model.slices
    st = model.strings
    rows, backward = _leaf_candidates(model)
    keys = np.stack([s.name[rows].astype(np.int64), s.at("input_dims", rows).astype(np.int64)], axis=1)
    uniq, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    out_of_conv = _conv_outputs_from_backward(model)
    per_key = np.full(len(uniq), np.nan)
    pending_conv: dict[tuple, list[int]] = {}
    rep_rows = rows[first]
    names = st.lookup(uniq[:, 0]) if len(uniq) else []
    for key_index, (row, name, dims_id) in enumerate(zip(rep_rows.tolist(), names, uniq[:, 1].tolist())):
        dims = input_shapes(st[dims_id]) if dims_id > 0 else []
        try:
            per_key[key_index] = _flops_of(model, row, name, dims, out_of_conv, pending_conv, key_index)
        except (TypeError, ValueError, IndexError, ArithmeticError):  # a shape the counts do not fit: unknown
            per_key[key_index] = np.nan
    _fill_conv_from_file(model, rep_rows, names, pending_conv, per_key)
    flops = per_key[inv] if len(rows) else np.zeros(0)
    type_ids = s.at("input_types", rows)
    dtype_of = {int(t): _dtype(st[int(t)]) for t in np.unique(type_ids).tolist()}
    types = np.array([dtype_of[int(t)] for t in type_ids.tolist()], dtype=object)
    counted = ~np.isnan(flops)
    return OpFlops(row=rows[counted], flops=flops[counted], dtype=types[counted], backward=backward[counted],
                   uncounted=int((~counted).sum()))


def _flops_of(model: TraceModel, row: int, name: str, d: list, out_of_conv: dict, pending_conv: dict, j: int):
    """FLOPs of one op signature (NaN: not countable; convs without an output size wait in pending_conv)."""
    if name in MM and len(d) > max(MM[name]):
        return _mm(d[MM[name][0]], d[MM[name][1]]) or np.nan
    if name in BMM and len(d) > max(BMM[name]):
        return _bmm(d[BMM[name][0]], d[BMM[name][1]]) or np.nan
    if name == "aten::matmul" and len(d) >= 2:
        return _matmul(d[0], d[1]) or np.nan
    if name == "aten::linear" and len(d) >= 2:
        return _linear(d[0], d[1]) or np.nan
    if name in ATTENTION:
        return _attention(d, ATTENTION[name]) or np.nan
    if name == CONV_BACKWARD and len(d) >= 3 and len(d[0]) >= 3 and len(d[2]) == len(d[0]):
        return _conv_backward_grads(model, row) * _conv(d[1], d[2], d[0][2:])
    if name in CONV and len(d) >= 2 and len(d[0]) >= 3 and len(d[1]) == len(d[0]):
        key = (tuple(d[0]), tuple(d[1]))
        if key in out_of_conv:
            return _conv(d[0], d[1], out_of_conv[key])
        pending_conv.setdefault(key, []).append(j)
    return np.nan


def _conv_outputs_from_backward(model: TraceModel) -> dict[tuple, tuple]:
    """(input dims, weight dims) -> output spatial size, from convolution_backward's grad_output."""
    s = model.slices
    sid = model.strings.find(CONV_BACKWARD)
    out: dict[tuple, tuple] = {}
    if sid < 0:
        return out
    for dims_id in np.unique(s.at("input_dims", s.name == sid)).tolist():
        d = input_shapes(model.strings[int(dims_id)]) if dims_id > 0 else []
        if len(d) >= 3 and len(d[0]) >= 3:
            out[(d[1], d[2])] = d[0][2:]
    return out


def _concrete_inputs(model: TraceModel, row: int) -> list:
    """The event's Concrete Inputs, re-read from the file ([] when it cannot be)."""
    from core.trace.rawevent import read_event

    offset = int(model.slices.at("src_offset", row))
    ev = read_event(model.path, offset) if offset >= 0 else None
    concrete = ((ev or {}).get("args") or {}).get("Concrete Inputs")
    return concrete if isinstance(concrete, list) else []


def _conv_backward_grads(model: TraceModel, row: int) -> int:
    """How many of grad input / grad weight a convolution_backward computed (its output_mask, argument 10);
    2 when the mask cannot be read (the first layer's input usually needs no gradient: then 1)."""
    concrete = _concrete_inputs(model, row)
    try:
        mask = json.loads(concrete[10].lower()) if len(concrete) > 10 else None
        return int(bool(mask[0])) + int(bool(mask[1]))
    except (ValueError, TypeError, IndexError, AttributeError):
        return 2


def _fill_conv_from_file(model: TraceModel, rows, names, pending: dict, flops: np.ndarray) -> None:
    """Forward-only convs: stride / padding / dilation from the event's Concrete Inputs (one read per shape)."""
    for key, js in list(pending.items())[:MAX_RAW_READS]:
        j = js[0]
        concrete = _concrete_inputs(model, int(rows[j]))
        st_i, pad_i, dil_i = CONV[names[j]]

        def arg(i, concrete=concrete):
            return concrete[i] if i is not None and i < len(concrete) else None

        out = _conv_out(list(key[0]), list(key[1]), arg(st_i), arg(pad_i), arg(dil_i)) if concrete else None
        if out is not None:
            flops[js] = _conv(key[0], key[1], out)


def step_flops(model: TraceModel, windows: StepWindows | None = None) -> StepFlops:
    """FLOPs, TFLOP/s and MFU per step; `windows` defaults to the ProfilerStep windows."""
    from core.analysis.breakdown import default_windows
    windows = default_windows(model) if windows is None else windows
    number = windows.number
    ops = op_flops(model)
    s = model.slices
    dur_s = np.maximum(step_time_ns(model, windows), 1) / 1e9
    device = model_device_name(model)
    entry = device_peaks(device) if device else {}
    peaks = {k: float(v) for k, v in entry.items() if k in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")}
    fp32_math = fp32_math_mode(model)
    if fp32_math == "tf32" and "tf32" in peaks:  # fp32 tensors on TF32 tensor cores: their peak, not FP32's
        peaks = {**peaks, "fp32": peaks["tf32"]}  # (imagenet resnet18: "MFU 66 %" beside "GPU idle 54 %")
    else:
        fp32_math = "fp32"
    n_steps = len(number)
    has_shapes = bool((s.at("input_dims", s.kind == Kind.CPU_OP) > 0).any())
    if not has_shapes:
        nan = np.full(n_steps, np.nan)
        return StepFlops(number, nan, nan.copy(), nan.copy(), np.zeros(n_steps, bool), device, peaks, fp32_math)
    step_of = windows.index_of(s.ts_ns[ops.row])
    inside = step_of >= 0
    op_step, op_flop, op_dtype, op_backward = (step_of[inside], ops.flops[inside], ops.dtype[inside],
                                               ops.backward[inside])
    fwd = np.bincount(op_step[~op_backward], weights=op_flop[~op_backward], minlength=n_steps)
    bwd = np.bincount(op_step[op_backward], weights=op_flop[op_backward], minlength=n_steps)
    ran_autograd = _autograd_steps(model, windows)
    estimated = ran_autograd & (bwd == 0) & (fwd > 0)
    total = fwd + bwd + np.where(estimated, 2.0 * fwd, 0.0)
    # time at peak per dtype (the 2x rule's backward takes the forward's dtype mix)
    scale = np.where(estimated, 3.0, 1.0)
    at_peak_s = np.zeros(n_steps)
    known = np.ones(n_steps, bool)
    for dtype in set(op_dtype.tolist()):
        of_dtype = op_dtype == dtype
        weights = op_flop[of_dtype] * np.where(op_backward[of_dtype], 1.0, scale[op_step[of_dtype]])
        per_step = np.bincount(op_step[of_dtype], weights=weights, minlength=n_steps)
        peak = peaks.get(dtype)
        if peak is None:
            known &= per_step == 0
        else:
            at_peak_s += per_step / (peak * 1e12)
    tflops = total / dur_s / 1e12
    mfu = np.where(known & bool(peaks), 100.0 * at_peak_s / dur_s, np.nan)
    return StepFlops(number, total, tflops, mfu, estimated, device, peaks, fp32_math)


def fp32_math_mode(model: TraceModel) -> str:
    """"tf32" when most of the fp32 GEMM / convolution kernel time ran on TF32 tensor cores (cuBLAS / cuDNN /
    CUTLASS name the math: `..._tf32f32_tf32f32_...`, `cutlass_tensorop_tf32...`), else "fp32". Kernel names,
    not the recorded flags: cuDNN's convolutions use TF32 by default while torch.backends.cuda.matmul does not."""
    from core.analysis.rows import kind_rows
    rows = kind_rows(model, [Kind.KERNEL])
    if not len(rows):
        return "fp32"
    s = model.slices
    ids, inv = np.unique(s.name[rows], return_inverse=True)
    time = np.bincount(inv, weights=s.dur_ns[rows].astype(np.float64), minlength=len(ids))
    tf32 = plain = 0.0
    for k, sid in enumerate(ids.tolist()):
        n = model.strings[int(sid)].lower()
        if not any(w in n for w in ("gemm", "conv", "fprop", "dgrad", "wgrad", "xmma", "cutlass", "cublas")):
            continue
        if "tf32" in n:
            tf32 += time[k]
        elif ("sgemm" in n or "f32f32" in n or "fp32" in n) and not any(w in n for w in ("bf16", "f16", "half")):
            plain += time[k]
    return "tf32" if tf32 > plain else "fp32"


def step_time_ns(model: TraceModel, windows: StepWindows) -> np.ndarray:
    """Per window: max(window duration, GPU span of the GPU work launched by calls starting in the window)."""
    s, flows = model.slices, model.flows
    dur = windows.dur_ns.astype(np.int64)
    link = flows.kind == FlowKind.LAUNCH
    calls, launched = flows.src[link], flows.dst[link]
    if not len(calls) or not len(windows):
        return dur
    step_of = windows.index_of(s.ts_ns[calls])
    inside = step_of >= 0
    step, gpu_rows = step_of[inside], launched[inside]
    first = np.full(len(windows), np.iinfo(np.int64).max, np.int64)
    last = np.full(len(windows), np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, step, s.ts_ns[gpu_rows])
    np.maximum.at(last, step, s.ts_ns[gpu_rows] + s.dur_ns[gpu_rows])
    span = np.where(last > first, last - first, 0)
    return np.maximum(dur, span)


def _autograd_steps(model: TraceModel, windows: StepWindows) -> np.ndarray:
    """Per window: autograd ran in it (an `evaluate_function` started inside)."""
    s = model.slices
    roots = np.isin(s.name, model.strings.ids_matching(lambda n: n.startswith(BACKWARD_ROOT)))
    ts = np.sort(s.ts_ns[roots])
    return np.searchsorted(ts, windows.t1_ns, side="left") > np.searchsorted(ts, windows.t0_ns, side="left")

"""The runner's compile.json (graph breaks and recompiles with reasons and user frames), read tolerantly.

core/runner/compile_capture.py writes (rank 0 only):
    {"graph_breaks": [{"file", "line", "reason", "explanation", "user_frames": [{"file", "line", "function"}, ...],
                       "text", "count", "first_t_ns"}],
     "recompiles": [{"function", "file", "line", "reasons": ["0/0: tensor 'x' size mismatch at index 0. ..."],
                     "t_ns"}],
     "counters": {torch._dynamo.utils.counters}}
Older/hand-written files used {"reason", "user_frame": {...}} per break and {"reason", "count"} per
recompile: both are accepted. Malformed entries are skipped, never raised.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from core.rules.base import Source

_COMPILE_ID = re.compile(r"^\s*(\d+)/(\d+):\s*(.*)$", re.S)
_SIZE = re.compile(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)")
_RESUME_FN = re.compile(r"^torch_dynamo_resume_in_(\w+?)_at_(\d+)$")
_SCALAR = re.compile(r"L\['([^']+)'\]\s*==")


@dataclass(frozen=True, slots=True)
class GraphBreak:
    reason: str
    explanation: str
    hints: tuple[str, ...]
    source: Source | None  # the user's innermost frame at the break
    count: int
    first_t_ns: int | None


@dataclass(frozen=True, slots=True)
class Recompile:
    function: str  # as dynamo names it (resume functions: torch_dynamo_resume_in_forward_at_8)
    source: Source | None  # the recompiled function's def line
    reasons: tuple[str, ...]  # failed guards, compile-id prefix stripped
    frames: tuple[int, ...]  # compiled frame X of each failed guard ("0/0: ..." -> 0), -1 when not given
    t_ns: int | None  # wall clock


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _source(file, line, function) -> Source | None:
    if not file or _int(line) is None:
        return None
    return Source(str(file), int(line), str(function or ""))


def _frame_src(d) -> Source | None:
    return _source(d.get("file"), d.get("line"), d.get("function")) if isinstance(d, dict) else None


def _items(info, key: str) -> list[dict]:
    items = info.get(key) if isinstance(info, dict) else None
    return [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []


def graph_breaks(info) -> list[GraphBreak]:
    out = []
    for d in _items(info, "graph_breaks"):
        frames = [f for f in d.get("user_frames") or () if isinstance(f, dict)]
        src = _frame_src(frames[-1]) if frames else None  # innermost user frame
        if src is None:
            src = _frame_src(d.get("user_frame"))
        if src is None:
            src = _source(d.get("file"), d.get("line"), "")
        text = str(d.get("text") or "")
        hints = tuple(ln.strip()[len("Hint:"):].strip() for ln in text.splitlines() if ln.strip().startswith("Hint:"))
        out.append(GraphBreak(str(d.get("reason") or "").strip(), str(d.get("explanation") or "").strip(), hints,
                              src, max(_int(d.get("count")) or 1, 1), _int(d.get("first_t_ns"))))
    if not out:  # no log capture: the counters still name the reasons
        counters = info.get("counters") if isinstance(info, dict) else None
        for key in ("graph_break", "unimplemented"):
            table = counters.get(key) if isinstance(counters, dict) else None
            for reason, n in (table.items() if isinstance(table, dict) else ()):
                lines = [ln.strip() for ln in str(reason).strip().splitlines()]
                expl = next((ln[len("Explanation:"):].strip() for ln in lines if ln.startswith("Explanation:")), "")
                hints = tuple(ln[len("Hint:"):].strip() for ln in lines if ln.startswith("Hint:"))
                out.append(GraphBreak(lines[0] if lines else "", expl, hints, None, max(_int(n) or 1, 1), None))
    return out


def recompiles(info) -> list[Recompile]:
    out = []
    for d in _items(info, "recompiles"):
        raw = d.get("reasons")
        raw = [str(r) for r in raw] if isinstance(raw, list) else ([str(d["reason"])] if d.get("reason") else [])
        reasons, frames = [], []
        for r in raw:
            m = _COMPILE_ID.match(r)
            reasons.append((m.group(3) if m else r).strip())
            frames.append(int(m.group(1)) if m else -1)
        fn = str(d.get("function") or "")
        out.append(Recompile(fn, _source(d.get("file"), d.get("line"), readable_function(fn)), tuple(reasons),
                             tuple(frames), _int(d.get("t_ns"))))
    return out


def readable_function(fn: str) -> str:
    """`torch_dynamo_resume_in_forward_at_8` -> `forward (after the graph break at line 8)`."""
    m = _RESUME_FN.match(fn)
    return f"{m.group(1)} (after the graph break at line {m.group(2)})" if m else fn


def recompile_fix(reason: str) -> str:
    """A fix that fits the failed guard."""
    m = _SIZE.search(reason)
    if m:
        dim, a, b = m.groups()
        if dim == "0":
            return (f"The batch size changed ({a} → {b}), so the compiled graph's shape guard failed. Keep it fixed: "
                    "DataLoader(drop_last=True) or pad the last batch; or mark the dimension dynamic before the "
                    "first call (torch._dynamo.mark_dynamic(x, 0)) so one graph serves every batch size.")
        return (f"Dimension {dim} changed ({a} → {b}; a sequence length?). Pad to a few fixed lengths (bucketing) "
                f"or mark it dynamic before the first call (torch._dynamo.mark_dynamic(x, {dim})).")
    low = reason.lower()
    if "stride mismatch" in low:
        return "The input's memory layout changed: pass contiguous inputs (x.contiguous()) with the same layout."
    if "dtype mismatch" in low:
        return "The input dtype changed between calls: cast inputs to one dtype before the compiled function."
    if "requires_grad mismatch" in low:
        return "requires_grad changed between calls (e.g. frozen/unfrozen layers): keep it fixed or expect one " \
               "graph per setting."
    if "training" in low:
        return "Switching train()/eval() recompiles: keep separate compiled modules for training and evaluation."
    m = _SCALAR.search(reason)
    if m:
        return (f"The Python value {m.group(1)!r} changed and was baked into the graph: pass it as a tensor, or "
                "keep it constant.")
    return ("Find the guard that failed (TORCH_LOGS=recompiles). Typical causes: a changing batch size or sequence "
            "length (mark_dynamic / pad to fixed shapes / drop_last=True), Python scalars that change each step "
            "(pass them as tensors), switching train/eval or requires_grad.")

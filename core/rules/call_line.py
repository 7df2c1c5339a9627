"""The line inside a user function that makes the call behind a finding.

Kineto's Python frames name each function by its first line (`train.py(95): step`, the frame's line when
it was entered), never the line the call came from, so every op a long training function runs pointed
at its `def` (issue 31: 6 of the sample's 7 findings at `gpu_workloads.py:95`). The frame just inside
the innermost user frame is what that function called (`<built-in method item of Tensor object>`,
`torch/optim/optimizer.py(900): zero_grad`): when the user's file is readable here, the one line of the
function's body that calls that name is the line. Several such lines, an unreadable file or a callee
without a name to look for (a module's `__call__`) keep the frame's line: no guessed lines.
"""
from __future__ import annotations

import re
from pathlib import Path

from core.analysis.tree import parse_frame
from core.trace import event_names
from core.trace.model import TraceModel

MAX_BODY_LINES = 2000
_BUILTIN = re.compile(r"^<built-in (?:method|function) (\w+)")
# callees whose name is not what the user's line spells: a module called as `model(x)`, a wrapper
_ANONYMOUS = {"_wrapped_call_impl", "_call_impl", "__call__", "forward", "wrapper", "inner", "decorate_context",
              "_fn", "fn", "__init__", "__enter__", "__exit__", ""}
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")


def callee_name(frame_name: str) -> str:
    """The name a caller spells for this frame: `item` for `<built-in method item of Tensor ...>`,
    `zero_grad` for `torch/optim/optimizer.py(900): zero_grad`; "" when there is none to search for."""
    m = _BUILTIN.match(frame_name)
    if m:
        name = m.group(1)
    else:
        parsed = parse_frame(frame_name)
        name = parsed[2] if parsed else ""
    return "" if name in _ANONYMOUS or name.startswith("<") else name


def _resolve(file: str, model: TraceModel) -> Path | None:
    p = Path(file)
    cands = [p] if p.is_absolute() else [Path(str(model.path)).parent / p, Path.cwd() / p]
    for c in cands:
        try:
            if c.is_file():
                return c
        except OSError:
            continue
    return None


def body_lines(file: Path, def_line: int) -> list[tuple[int, str]]:
    """(line number, text) of the function whose `def` is at def_line (decorators before it allowed),
    up to its end; [] when the file is not readable or def_line is no def."""
    from core.rules.sync_sites import source_lines
    lines = source_lines(str(file), def_line + MAX_BODY_LINES)  # fewer at the file's end
    start = def_line - 1
    while 0 <= start < len(lines) and lines[start].lstrip().startswith("@"):
        start += 1  # Python 3.8+ frames name the def line; older ones the first decorator
    if not 0 <= start < len(lines):
        return []
    m = _DEF.match(lines[start])
    if not m:
        return []
    indent = len(m.group(1))
    out = []
    for i in range(start + 1, len(lines)):
        text = lines[i]
        body = text.strip()
        if body and not body.startswith("#") and len(text) - len(text.lstrip()) <= indent:
            break
        out.append((i + 1, text))
    return out


def call_line(model: TraceModel, stack: list[int], user_index: int) -> int | None:
    """The line of the user frame stack[user_index] (python_stack order: innermost first) that calls the
    frame inside it, when exactly one line of its body does; else None."""
    if user_index <= 0:
        return None
    name = callee_name(model.name(stack[user_index - 1]))
    if not name:
        return None
    parsed = parse_frame(model.name(stack[user_index]))
    if not parsed:
        return None
    file = _resolve(parsed[0], model)
    if file is None:
        return None
    call = re.compile(rf"(?<![\w]){re.escape(name)}\s*\(")
    hits = [n for n, text in body_lines(file, parsed[1]) if call.search(text.split("#", 1)[0])]
    return hits[0] if len(hits) == 1 else None


def user_call_site(model: TraceModel, row: int) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost user frame enclosing `row`, the line being the call inside
    it when the source tells (see the module docstring), else the frame's own line."""
    from core.trace.query import python_stack
    stack = python_stack(model, row)
    for i, fr in enumerate(stack):
        name = model.name(fr)
        if event_names.is_library_frame(name):
            continue
        parsed = parse_frame(name)
        if parsed:
            line = call_line(model, stack, i)
            return (parsed[0], line, parsed[2]) if line else parsed
    return None

"""The app runs on CPython 3.10 (pyproject requires-python): no 3.11-only stdlib or dataclass options in
core/, gui/ or main.py. A cheap AST guard that runs on the suite's own interpreter; the compatibility job
(tests/core/runner/test_compat_pythons.py, .ci/run) runs the code itself under 3.9/3.10/3.12/3.13."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# stdlib modules / names that appeared in 3.11 or later (the ones a contributor is likely to reach for)
NEW_MODULES = {"tomllib", "wsgiref.types"}
NEW_KEYWORDS = {"weakref_slot"}  # dataclass(...) option, 3.11
NEW_ATTRS = {("typing", "Self"), ("typing", "LiteralString"), ("typing", "Never"), ("typing", "assert_never"),
             ("typing", "reveal_type"), ("typing", "NotRequired"), ("typing", "Required"), ("typing", "override"),
             ("enum", "StrEnum"), ("datetime", "UTC"), ("asyncio", "TaskGroup"), ("asyncio", "timeout"),
             ("contextlib", "chdir"), ("hashlib", "file_digest"), ("itertools", "batched"),
             ("operator", "call"), ("logging", "getLevelNamesMapping")}


def _app_files():
    yield REPO / "main.py"
    for top in ("core", "gui"):
        yield from sorted((REPO / top).rglob("*.py"))


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            out += [f"{where} import {a.name}" for a in node.names if a.name in NEW_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in NEW_MODULES:
                out.append(f"{where} from {node.module} import ...")
            out += [f"{where} from {node.module} import {a.name}" for a in node.names
                    if (node.module, a.name) in NEW_ATTRS]
        elif isinstance(node, ast.keyword) and node.arg in NEW_KEYWORDS:
            out.append(f"{where} {node.arg}=")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and (node.value.id, node.attr) in NEW_ATTRS:
            out.append(f"{where} {node.value.id}.{node.attr}")
        elif isinstance(node, ast.TryStar if hasattr(ast, "TryStar") else ()):
            out.append(f"{where} except*")
    return out


def test_app_source_has_no_python311_only_features():
    # core/compat.py is where the one switch lives (tomllib on 3.11+, tomli before)
    bad = [v for p in _app_files() if p.name != "compat.py" or p.parent.name != "core" for v in _violations(p)]
    assert not bad, "3.11+ only (the app supports 3.10; use core.compat):\n" + "\n".join(bad)


def test_compat_switch_reads_toml():
    import weakref

    from core.compat import Weakrefable, tomllib
    assert tomllib.loads("a = 1") == {"a": 1}
    from core.trace.model import TraceModel, TraceSet
    assert issubclass(TraceModel, Weakrefable) and issubclass(TraceSet, Weakrefable)
    assert "__dict__" not in dir(TraceSet)  # still a slots class
    ts = TraceSet("x", ())
    assert weakref.ref(ts)() is ts

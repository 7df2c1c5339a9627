"""Census of STYLE.md's naming rules in core/ (issue 35 item 4), per module.

- one-letter names: distinct one-letter local names (arguments and assignment / for / with / except targets,
  `_` excepted) bound in each function over 25 lines; a short nested function counts toward the long one
  around it, a long nested function is counted on its own; comprehension and lambda variables are not counted;
  `idiom` = those of them that are the project's two table idioms: `s = model.slices` (95 functions write it)
  and a rule's `for i, m in enumerate(ctx.models)` (21 rules); `other` = the rest, the names to fix;
- interval pairs: two names that hold the starts and ends of intervals side by side (`us, ue`, `a_s, a_e`,
  `s0, s1`, `g_start, g_end`), as an unpacking target or as neighbouring parameters;
- window 4-tuples: `number, t0, t1, synthetic = ...windows(...)` unpackings and functions annotated to
  return `tuple[np.ndarray, np.ndarray, np.ndarray, bool]`.

    python tests/names_census.py [core/analysis ...]     # a table per module, the totals last
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LONG = 25
PAIR_SUFFIXES = (("s", "e"), ("_s", "_e"), ("0", "1"), ("_start", "_end"), ("start", "end"), ("_starts", "_ends"))
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = FUNCS + (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.ClassDef)


def _length(fn) -> int:
    return fn.end_lineno - fn.lineno + 1


def _targets(node) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for elt in node.elts for n in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _args(fn) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names


def _idiom_names(fn) -> set[str]:
    """One-letter names fn binds only by the idioms `s = <model>.slices` / `for i, m in enumerate(ctx.models)`."""
    idiom, other = set(), set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names = _targets(target)
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for k, name in enumerate(names):
                    value = values[k] if len(values) == len(names) else None
                    if len(name) == 1:
                        is_slices = isinstance(value, ast.Attribute) and value.attr == "slices"
                        (idiom if name == "s" and is_slices else other).add(name)
        elif isinstance(node, ast.For):
            names = _targets(node.target)
            is_models = ast.unparse(node.iter) == "enumerate(ctx.models)"
            for name in names:
                if len(name) == 1:
                    (idiom if is_models and names == ["i", "m"] else other).add(name)
    return idiom - other


def _bound_names(fn) -> set[str]:
    """Names bound in fn's scope and in its short nested functions (not in long ones, lambdas, comprehensions)."""
    out = set(_args(fn))
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, FUNCS):
            if _length(node) <= LONG:
                out.update(_args(node))
                stack.extend(ast.iter_child_nodes(node))
            continue
        if isinstance(node, SCOPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _is_pair(a: str, b: str) -> bool:
    for sa, sb in PAIR_SUFFIXES:
        if a.endswith(sa) and b.endswith(sb) and a[:-len(sa)] == b[:-len(sb)]:
            return True
    return False


def _pairs(names: list[str]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in zip(names, names[1:]) if _is_pair(a, b)}


def _returns_window_tuple(fn) -> bool:
    r = fn.returns
    return r is not None and ast.unparse(r).replace(" ", "") == "tuple[np.ndarray,np.ndarray,np.ndarray,bool]"


def census(path: Path) -> Counter:
    tree = ast.parse(path.read_text(), filename=str(path))
    count: Counter = Counter()
    for fn in ast.walk(tree):
        if not isinstance(fn, FUNCS):
            continue
        if _length(fn) > LONG:
            one = {n for n in _bound_names(fn) if len(n) == 1 and n != "_"}
            idiom = one & _idiom_names(fn)
            count["one_letter"] += len(one)
            count["idiom"] += len(idiom)
            count["other"] += len(one - idiom)
        pairs = _pairs(_args(fn))
        for node in ast.walk(fn):
            if node is not fn and isinstance(node, FUNCS):
                continue  # counted as its own function
            if isinstance(node, (ast.Assign, ast.For)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Tuple):
                        pairs |= _pairs(_targets(t))
                        call = getattr(node, "value", None)
                        if (len(t.elts) == 4 and isinstance(call, ast.Call)
                                and ast.unparse(call.func).endswith("windows")):
                            count["window_4tuples"] += 1
        count["interval_pairs"] += len(pairs)
        count["window_4tuples"] += _returns_window_tuple(fn)
    return count


def table(roots: list[Path]) -> dict[str, Counter]:
    files = sorted(p for r in roots for p in (r.rglob("*.py") if r.is_dir() else [r]))
    return {str(p.relative_to(REPO)): census(p) for p in files}


def main(argv: list[str]) -> int:
    roots = [REPO / a for a in argv] or [REPO / "core"]
    rows = table(roots)
    keys = ("one_letter", "idiom", "other", "interval_pairs", "window_4tuples")
    total: Counter = Counter()
    print(f"{'module':48s} " + " ".join(f"{k:>14s}" for k in keys))
    for name, c in sorted(rows.items(), key=lambda kv: -kv[1]["one_letter"]):
        total.update(c)
        if any(c[k] for k in keys):
            print(f"{name:48s} " + " ".join(f"{c[k]:14d}" for k in keys))
    print(f"{'total':48s} " + " ".join(f"{total[k]:14d}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`StringTable.ids_matching` over the strings of many tables at once: ranks of one run share nearly every name,
and the rules ask ~51 name predicates per model; a 128-rank analysis spent 27 % of its time running the same
predicates over the same strings (issue 33).

A process-wide string set gives each distinct string one global id (a table maps its strings once, extended as
it grows). Per predicate - keyed by its code object, defaults and closure contents when those are immutable
values (str, numbers, tuples / frozensets of them); anything else is not memoised - a bool array over the
global ids records the answers; a table's ids are then `flatnonzero(answers[its global ids])`, and only strings
no table had before run the predicate. Bounded: past MAX_STRINGS distinct strings the set starts afresh.
"""
from __future__ import annotations

import threading
import types
from collections import OrderedDict

import numpy as np

MAX_STRINGS = 4_000_000
_lock = threading.Lock()
_index: dict[str, int] = {}
_strings: list[str] = []
_answers: OrderedDict = OrderedDict()  # predicate key -> bool per global id (len = ids evaluated so far)
MAX_PREDICATES = 512  # least recently used first out (the window's search adds one per needle typed)
_epoch = 0  # bumped when the set starts afresh: tables' cached global ids are then stale
_IMMUTABLE = (str, int, float, bool, bytes, type(None))


def _plain(v) -> bool:
    if isinstance(v, _IMMUTABLE):
        return True
    if isinstance(v, (tuple, frozenset)):
        return all(_plain(x) for x in v)
    return False


def key_of(predicate) -> tuple | None:
    """A hashable identity of what the predicate computes, or None when it cannot be told."""
    fn = predicate
    if not isinstance(fn, types.FunctionType):
        return None
    defaults = fn.__defaults__ or ()
    kw = tuple(sorted((fn.__kwdefaults__ or {}).items()))
    try:
        cells = tuple(c.cell_contents for c in (fn.__closure__ or ()))
    except ValueError:  # an empty cell
        return None
    if not (_plain(defaults) and _plain(cells) and all(_plain(v) for _k, v in kw)):
        return None
    return (fn.__code__, defaults, kw, cells)


def _gids(table) -> np.ndarray:
    """The table's global ids (caller holds the lock)."""
    strings = table._strings
    cached = table._gids
    if cached is not None and cached[0] == _epoch and len(cached[1]) == len(strings):
        return cached[1]
    have = cached[1] if cached is not None and cached[0] == _epoch else np.zeros(0, np.int64)
    index = _index
    add = _strings.append
    new = []
    for s in strings[len(have):]:
        g = index.get(s)
        if g is None:
            g = len(_strings)
            index[s] = g
            add(s)
        new.append(g)
    out = np.concatenate([have, np.asarray(new, np.int64)]) if new else have
    table._gids = (_epoch, out)
    return out


def _reset() -> None:
    global _epoch
    _index.clear()
    _strings.clear()
    _answers.clear()
    _epoch += 1


def ids_matching(table, predicate) -> np.ndarray | None:
    """The table's ids matching `predicate`, or None when the predicate cannot be memoised."""
    key = key_of(predicate)
    if key is None:
        return None
    with _lock:
        if len(_strings) + len(table._strings) > MAX_STRINGS:
            _reset()
        gids = _gids(table)
        have = _answers.get(key)
        n = len(_strings)
        done = 0 if have is None else len(have)
        if done < n:
            fresh = np.fromiter((bool(predicate(s)) for s in _strings[done:n]), dtype=bool, count=n - done)
            have = fresh if have is None else np.concatenate([have, fresh])
            _answers[key] = have
            while len(_answers) > MAX_PREDICATES:
                _answers.popitem(last=False)
        _answers.move_to_end(key)
        return np.flatnonzero(have[gids]).astype(np.int32) if len(gids) else np.zeros(0, np.int32)

"""Per-model memo for derived arrays (parents, GPU busy intervals ...): computed once, freed with the model."""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def cached(model, key: str, compute: Callable[[], T]) -> T:
    """`compute()` once per (model, key). Models are immutable, so results never go stale."""
    with _lock:
        per = _memo.get(model)
        if per is not None and key in per:
            return per[key]
    value = compute()
    with _lock:
        _memo.setdefault(model, {})[key] = value
    return value

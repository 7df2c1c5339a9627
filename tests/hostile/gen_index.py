"""Hostile timeline indexes kept in a cache entry (core/trace/index_store.py): each case is a real entry of
the small trace with its index written in, then poisoned one way. INDEX_POISONS lists every class; the core
test (tests/core/trace/test_index_store.py) and the GUI test (test_store_gui.py) walk them all.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hostile.gen_store import _npy, deep_json, fifo_in_place, link_from_elsewhere, make_cache_entry


def make_indexed_entry(root: Path, tag: str) -> tuple[Path, Path, Path]:
    """(trace, cache dir, entry folder): make_cache_entry's, with the model's timeline index written in
    (the small trace is under index_store.STORE_MIN_SLICES: written here directly)."""
    from core.trace import cache, index_store, query
    trace, cdir, entry = make_cache_entry(root, tag)
    old = os.environ.get("PTPROF_CACHE_DIR")
    os.environ["PTPROF_CACHE_DIR"] = str(cdir)
    try:
        model = cache.load(trace)
        index_store.write(entry, query.SliceIndex(model), model)
    finally:
        if old is None:
            os.environ.pop("PTPROF_CACHE_DIR")
        else:
            os.environ["PTPROF_CACHE_DIR"] = old
    return trace, cdir, entry


def _index_meta(entry: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads((entry / "index.json").read_text())
    edit(data)
    (entry / "index.json").write_text(json.dumps(data))


def _edit_index_array(entry: Path, name: str, edit) -> None:
    """Change one index array and write its new fingerprint: only the structural checks can tell."""
    import numpy as np

    from core.trace.cache_check import fingerprint
    f = entry / f"index.{name}.npy"
    arr = edit(np.load(f))
    f.write_bytes(_npy(arr))
    _index_meta(entry, lambda d: d["prints"].__setitem__(name, fingerprint(arr)))


def _set_middle(value):
    def edit(a):
        a = a.copy()
        a[len(a) // 2] = value
        return a
    return edit


def _poison_index(entry: Path, how: str) -> None:
    import numpy as np
    order = entry / "index.order.npy"
    if how == "index_json_fifo":
        (entry / "index.json").unlink()
        os.mkfifo(entry / "index.json")
    elif how == "index_json_not_dict":
        (entry / "index.json").write_text("[1, 2, 3]")
    elif how == "index_json_deep":
        (entry / "index.json").write_text(deep_json(100_000))
    elif how == "index_json_huge":
        (entry / "index.json").write_bytes(b" " * (1 << 20))
    elif how == "index_wrong_n":
        _index_meta(entry, lambda d: d.__setitem__("n", d["n"] + 1))
    elif how == "index_n_depth_zero":
        _index_meta(entry, lambda d: d.__setitem__("n_depth", 0))
    elif how == "index_groups_not_int":
        _index_meta(entry, lambda d: d.__setitem__("groups", "7"))
    elif how == "index_stale":  # an index of another build of the entry's columns
        _index_meta(entry, lambda d: d["built_from"].__setitem__("ts_ns", "0" * 16))
    elif how == "index_array_fifo":
        fifo_in_place(order)
    elif how == "index_array_symlinked":
        link_from_elsewhere(order, entry.parent.parent / "elsewhere-index.npy")
    elif how == "index_array_truncated":
        order.write_bytes(order.read_bytes()[:100])
    elif how == "index_array_retyped":
        _edit_index_array(entry, "order", lambda a: a.astype(np.int64))
    elif how == "index_arrays_swapped":  # same dtype and length: the fingerprints tell
        a, b = entry / "index.ts_ns.npy", entry / "index.run_end_ns.npy"
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
    elif how == "index_order_out_of_range":
        _edit_index_array(entry, "order", _set_middle(1 << 30))
    elif how == "index_order_negative":
        _edit_index_array(entry, "order", _set_middle(-5))
    elif how == "index_ts_lies":
        _edit_index_array(entry, "ts_ns", lambda a: a + 1000)
    elif how == "index_run_end_before_end":
        _edit_index_array(entry, "run_end_ns", lambda a: a - 10**12)
    elif how == "index_bounds_not_increasing":
        _edit_index_array(entry, "bounds", lambda a: a[::-1].copy())
    elif how == "index_bounds_short":
        _edit_index_array(entry, "bounds", lambda a: np.r_[a[:-1], a[-1] - 1])
    elif how == "index_group_ids_out_of_range":
        _edit_index_array(entry, "group_ids", lambda a: np.r_[a[:-1], 1 << 40])
    elif how == "index_rows_in_other_groups":  # a permutation of the rows: every check but the groups' passes
        _edit_index_array(entry, "order", lambda a: a[::-1].copy())
    else:
        raise ValueError(how)


INDEX_POISONS = ("index_json_fifo", "index_json_not_dict", "index_json_deep", "index_json_huge", "index_wrong_n",
                 "index_n_depth_zero", "index_groups_not_int", "index_stale", "index_array_fifo",
                 "index_array_symlinked", "index_array_truncated", "index_array_retyped", "index_arrays_swapped",
                 "index_order_out_of_range", "index_order_negative", "index_ts_lies", "index_run_end_before_end",
                 "index_bounds_not_increasing", "index_bounds_short", "index_group_ids_out_of_range",
                 "index_rows_in_other_groups")


def poisoned_index(root: Path, how: str) -> tuple[Path, Path, Path]:
    """(trace, cache dir, entry folder) of an entry whose kept timeline index is poisoned `how`."""
    trace, cdir, entry = make_indexed_entry(root, f"index_{how}")
    _poison_index(entry, how)
    return trace, cdir, entry

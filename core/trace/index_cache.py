"""The window's timeline indexes and the cache: each model's `query.SliceIndex` opened from its cache entry
when one is kept there (core/trace/index_store.py), else built; and kept with the entry after a load.

The seam between the index (query, index_store) and the cache (cache.py writes an entry's index through
index_store): it imports all three, none of them imports it, so no circle.
"""
from __future__ import annotations

from core.trace import cache
from core.trace.index_store import open_index, worth_storing
from core.trace.model import TraceModel
from core.trace.query import SliceIndex


def view_indexes(trace_set) -> list[SliceIndex]:
    """What a window needs before its first paint, built off the UI thread: each model's SliceIndex
    (opened from its cache entry when kept there: core/trace/index_store.py), and its span (memoised
    on the model) so the view does no pass over every slice."""
    for m in trace_set.models:
        m.span_ns  # noqa: B018 - fills the model's memo
    return [index_for(m) for m in trace_set.models]


def index_for(model: TraceModel) -> SliceIndex:
    """`model`'s timeline index: opened from its cache entry when one is kept there, else built."""
    folder = cache.entry_of(model)
    if folder is not None and worth_storing(model):
        index = open_index(folder, model)
        if index is not None:
            return index
    return SliceIndex(model)


def keep(parsed: list, models: list[TraceModel], indexes: list[SliceIndex | None]) -> None:
    """After the window's load: write the cache entries of the `parsed` (source path, model) pairs with their
    indexes, and add the indexes built for models opened from an entry that had none (an index None:
    nothing to keep). A small model's entry is written now; the big writes wait for the window's after-open
    work (`cache.write_behind`, released by MainWindow)."""
    by_table = {id(m.slices): ix for m, ix in zip(models, indexes)}
    mine = set()
    for src, model in parsed:
        index = by_table.get(id(model.slices))
        mine.add(id(model.slices))
        if cache.model_bytes(model) >= cache.ASYNC_MIN_BYTES:
            cache.write_behind(src, model, index)
        else:
            cache.store(src, model, index)
    for model, index in zip(models, indexes):
        if index is None or id(model.slices) in mine or index.stored or not worth_storing(model):
            continue
        if cache.entry_of(model) is not None:
            cache.write_behind(None, model, index)

"""Merged columns -> TraceModel: time base, tracks, sorting, arg columns (dense or `Sparse`); depth.py
computes depth and GPU lanes, tables.py the other tables.

Fully vectorised over numpy columns. The only per-item Python loops run over tracks (tens) and over
the rows of GPU streams whose kernels overlap (GPU lane assignment).
"""
from __future__ import annotations

import os

import numpy as np

from core.trace import sanitize, tables
from core.trace.alloc import trim
from core.trace.beside import Beside
from core.trace.depth import _is_identity, assign_lanes, compute_depth
from core.trace.kineto import CORRUPT_MARK
from core.trace.limits import limits
from core.trace.merge import Merged, dense, values as merge_values
from core.trace.model import NONE, EventCounts, Kind, SliceTable, StepTable, TraceModel, TrackKind, unknown_categories
from core.trace.sparse import Sparse, from_pairs, pairs, sparsify, values_at
from core.trace.timens import NS_MISSING

TRIM_MIN_ROWS = 16_000_000  # loads this big hand freed heap pages back between stages (alloc.trim)
GPU_TRACK_KINDS = np.array([Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET], dtype=np.int8)
_COLLECTIVE_HINTS = ("nccl:", "gloo:", "c10d::", "record_param_comms")
_DENSE = ("ts_ns", "dur_ns", "track", "name", "cat", "kind")
_FILL = SliceTable.FILL
SLICE_COLUMNS = ("ts_ns", "dur_ns", "track", "name", "cat", "kind", "correlation", "external_id", "stream",
                 "device", "bytes", "grid", "block", "registers", "occupancy", "input_dims", "input_strides",
                 "input_types", "call_stack", "python_id", "python_parent_id", "seq", "src_offset")


def time_base(m: Merged, meta_doc: dict, warnings: list[str] | None = None) -> tuple[int, int]:
    """(origin in file ns, wall-clock ns of that origin). Absolute-µs traces are rebased. The merged times are
    exact int64 ns (core.trace.timens), so every model time is an int64 difference: no float on the way."""
    candidates = [int(a.min()) for a in (m.rows["ts"], m.memory.get("ts", np.zeros(0, np.int64))) if len(a)]
    origin_ns = min(candidates) if candidates else 0
    warnings = [] if warnings is None else warnings
    base_doc = sanitize.base_time_ns(meta_doc.get("baseTimeNanoseconds"), warnings)
    if base_doc is not None:
        return origin_ns, sanitize.wall_clock_ns(base_doc + origin_ns, warnings)
    if origin_ns > 10 ** 17:  # absolute µs since the epoch (older traces)
        return origin_ns, sanitize.wall_clock_ns(origin_ns, warnings)
    return origin_ns, 0


def build_model(m: Merged, meta_doc: dict, path: str, warnings: list[str]) -> TraceModel:
    strings = m.strings
    warnings = _one_truncation_warning(list(warnings) + m.warnings, m.n_events)
    r, a = m.rows, m.args  # consumed (popped) as they are converted: freed memory is reused
    sanitize.drop_bad_times(m, warnings)
    n = len(r["ts"])
    big = n >= TRIM_MIN_ROWS
    if big:  # the chunks' columns were freed by the merge: their pages need not stay under the model
        trim()
    origin_ns, base_unix_ns = time_base(m, meta_doc, warnings)

    def to_ns(t: np.ndarray) -> np.ndarray:
        return t - origin_ns

    dur = r.pop("dur")
    neg = dur < 0
    if neg.any():  # NS_MISSING is negative too
        missing = dur == NS_MISSING
        if missing.any():
            warnings.append(f"{int(missing.sum())} complete events had no duration (shown as instants)")
        if int(neg.sum()) > int(missing.sum()):
            warnings.append(f"{int(neg.sum()) - int(missing.sum())} events had a negative duration (clamped to 0)")
        dur = _writable(dur)
        dur[neg] = 0
        del missing
    del neg
    cols = {"ts_ns": _rebase(r.pop("ts"), origin_ns), "dur_ns": dur,
            "name": r.pop("name"), "cat": r.pop("cat"), "kind": r.pop("kind")}
    del dur
    kind, name = cols["kind"], cols["name"]
    warnings.extend(_unknown_category_warnings(strings, cols["cat"], kind))
    coll_ids = strings.ids_matching(lambda s: s.startswith(_COLLECTIVE_HINTS))
    if len(coll_ids):
        kind[_named_rows(name, kind, coll_ids, Kind.ANNOTATION)] = Kind.COLLECTIVE
    pid, tid = r.pop("pid"), r.pop("tid")
    # device and stream: values on GPU-side rows (and wherever an event carried them), NONE elsewhere -
    # held as pairs over those rows only (`gpu_side`), never as n-row columns (10 GB trace: 220 MB)
    gpu_rows = np.flatnonzero(_KIND_TABLE_GPU_SIDE[kind.view(np.uint8)])
    dev_rows, dev_vals = _arg_pairs(a.pop("device"), np.int16)
    st_rows, st_vals = _arg_pairs(a.pop("stream"), np.int32)
    gpu_side = np.union1d(np.union1d(dev_rows, st_rows), gpu_rows)
    device = values_at(dev_rows, dev_vals, gpu_side, NONE, np.int16)
    stream = values_at(st_rows, st_vals, gpu_side, NONE, np.int32)
    del dev_rows, dev_vals, st_rows, st_vals
    # GPU events: pid is the device, tid the stream, when args lack them
    is_gpu = _KIND_TABLE_GPU_SIDE[kind[gpu_side].view(np.uint8)]
    miss = np.flatnonzero(is_gpu & (device < 0))
    device[miss] = np.clip(pid[gpu_side[miss]], -1, 32767).astype(np.int16)
    miss = np.flatnonzero(is_gpu & (stream < 0))
    stream[miss] = np.clip(tid[gpu_side[miss]], -1, 2**31 - 1).astype(np.int32)

    step_name_ids = strings.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    step_rows = _named_rows(name, kind, step_name_ids, Kind.ANNOTATION)
    track, uniq = _assign_tracks(kind, step_rows, pid, tid, gpu_side, device, stream)
    del pid, tid, step_rows, gpu_rows, miss, is_gpu
    n_tracks = len(uniq)
    cpu_op = strings.find("cpu_op")
    counts = EventCounts(
        events=m.n_events, kernels=int((kind == Kind.KERNEL).sum()), memcpy=int((kind == Kind.MEMCPY).sum()),
        memset=int((kind == Kind.MEMSET).sum()), cpu_ops=int((cols["cat"] == cpu_op).sum()) if cpu_op >= 0 else 0,
        python=int((kind == Kind.PYTHON).sum()), runtime=int((kind == Kind.RUNTIME).sum()),
        memory=len(m.memory.get("ts", ())),
    )
    del kind, name

    # --- sort rows by (track, ts, -dur) ------------------------------------------------------
    cols["track"] = track
    del track
    order = _sort_order(cols["track"], cols["ts_ns"], cols["dur_ns"])
    position = None
    if not _is_identity(order):
        position = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
        position[order] = np.arange(n, dtype=position.dtype)
    at = gpu_side if position is None else position[gpu_side]
    cols["device"] = from_pairs(n, at, device, NONE, np.int16)
    cols["stream"] = from_pairs(n, at, stream, NONE, np.int32)
    del at, gpu_side, device, stream
    # arg columns: one scatter each straight into sorted order; the dense ones (python ids, offsets
    # on with_stack traces) first, so their merged-order arrays are freed before the others grow
    arg_keys = sorted((k for k in SLICE_COLUMNS if k not in cols), key=lambda k: a[k][0] is not None)
    with Beside(_build_threads(n)) as beside:
        # next to the sort and the depth on a second core (1.1 GB trace: -0.25 s); on big loads after
        # the depth, so its temporaries never coexist with the whole model (10 GB: -1.2 GB peak), and
        # without a heap trim before: the columns reuse the pages the sort and the depth freed (10 GB
        # trace: 1.2 GB fewer fresh pages, +140 MB peak)
        scattered = beside.run(_scatter_args, a, arg_keys, n, position)
        if position is not None:
            for k in _DENSE:  # one column at a time, so each old column is freed before the next
                cols[k] = cols[k][order]
        del order, position
        # depth and lanes need only the sorted times
        track_offsets = np.searchsorted(cols["track"], np.arange(n_tracks + 1)).astype(np.int64)
        track_kind = uniq[:, 4].astype(np.int8)
        depth = compute_depth(cols["ts_ns"], cols["dur_ns"], track_offsets, cols["track"])
        gpu_track = np.isin(track_kind, [TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION])
        capped = assign_lanes(cols["ts_ns"], cols["dur_ns"], track_offsets, gpu_track, depth)
        cols.update(scattered.result())
    if capped:
        warnings.append(f"{capped:,} kernels overlap more than {limits()['lanes']['max_lanes']:,} others on "
                        "their stream: they share its last sub-row")
    cols = {k: cols[k] for k in SLICE_COLUMNS}
    nonempty = track_offsets[:-1] < track_offsets[1:]
    max_dur = np.zeros(n_tracks, dtype=np.int64)
    max_depth = np.zeros(n_tracks, dtype=np.int16)
    if n:
        starts = track_offsets[:-1][nonempty]
        max_dur[nonempty] = np.maximum.reduceat(cols["dur_ns"], starts)
        max_depth[nonempty] = np.maximum.reduceat(depth, starts)
    slices = SliceTable(depth=depth, track_offsets=track_offsets, max_dur_ns=max_dur, **cols)

    tracks = tables.track_table(uniq, m.metadata, strings, max_depth)
    flows = tables.flows(slices, m.flows, tracks, to_ns, strings)
    steps = step_table(slices, strings, step_name_ids)
    memory = tables.memory_table(m.memory, to_ns, tracks)
    instants = tables.instant_table(m.instants, to_ns, strings, tracks)
    counters = tables.counter_table(m.counters, to_ns)
    meta = tables.trace_meta(meta_doc, path, base_unix_ns)
    if n == 0:
        warnings.append("the trace holds no complete events")
    return TraceModel(path=path, rank=tables.rank_of(meta, path), strings=strings, slices=slices, tracks=tracks,
                      memory=memory, instants=instants, counters=counters, flows=flows, steps=steps, meta=meta,
                      counts=counts, warnings=tuple(dict.fromkeys(warnings)))


PARALLEL_MIN_ROWS = 500_000  # below this a second thread costs more than it saves


def _build_threads(n: int) -> bool:
    """Scatter the arg columns on a second thread? Only between PARALLEL_MIN_ROWS and the big loads
    (whose peak memory comes first), with two cores, unless PTPROF_WORKERS asks for one thread."""
    from core.trace.parallel import workers_env
    env = workers_env()
    if env is not None and env <= 1:
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        cores = os.cpu_count() or 1
    return cores >= 2 and PARALLEL_MIN_ROWS <= n < TRIM_MIN_ROWS


def _scatter_args(a: dict, keys: list[str], n: int, position: np.ndarray | None) -> dict:
    return {k: _arg_column(k, a.pop(k), n, position) for k in keys}


def _arg_pairs(arg: tuple, dtype) -> tuple[np.ndarray, np.ndarray]:
    """An int arg column from the merge (pairs, or dense values) as ascending (rows, values), NONE dropped."""
    idx, vals = arg
    if idx is None:
        vals = merge_values(vals)
        rows = np.flatnonzero(vals != NONE)
        return rows, vals[rows].astype(dtype, copy=False)
    return pairs(idx, vals, NONE, dtype)


def _arg_column(k: str, arg: tuple, n: int, position: np.ndarray | None) -> np.ndarray | Sparse:
    """One arg column in sorted row order: Sparse pairs when few rows hold it (core/trace/sparse.py), else
    dense. Pairs from the merge are never spread over n rows when they stay pairs; a dense column from the
    merge is checked for how many rows hold a value (one pass)."""
    fill = _FILL.get(k, NONE)
    idx, vals = arg
    if k not in SliceTable.SPARSE_COLUMNS:
        return dense(arg, n, fill, position)
    if idx is not None:
        rows = idx if position is None else position[idx]
        return from_pairs(n, rows, vals, fill, vals.dtype)
    return sparsify(dense(arg, n, fill, position), fill)


def _writable(t: np.ndarray) -> np.ndarray:
    """t itself when it may be changed in place (the merged column the caller gives up), else a copy."""
    return t if t.flags.writeable and t.dtype == np.int64 else t.astype(np.int64)


def _rebase(t: np.ndarray, origin_ns: int) -> np.ndarray:
    """int64 ns as written -> ns from the origin, in place on t (which the caller gives up): no n-sized array
    of fresh pages (10 GB trace: the float µs -> int ns conversion this replaced cost 0.55 s and ~600 MB)."""
    t = _writable(t)
    if origin_ns:
        t -= origin_ns
    return t


_KIND_TABLE_GPU_SIDE = np.zeros(256, dtype=bool)  # kernels, memcpy, memset and GPU annotations
_KIND_TABLE_GPU_SIDE[[int(k) for k in (*GPU_TRACK_KINDS, Kind.GPU_ANNOTATION)]] = True


def _named_rows(name: np.ndarray, kind: np.ndarray, ids: np.ndarray, of_kind: int) -> np.ndarray:
    """Rows of kind `of_kind` whose name id is in `ids` (a bool table by string id: no np.isin)."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(kind == of_kind)
    names = name[rows]
    lut = np.zeros(max(int(ids.max()), int(names.max(initial=0))) + 1, dtype=bool)
    lut[ids] = True
    return rows[lut[names]]


def _assign_tracks(kind, step_rows, pid, tid, gpu_side, device, stream) -> tuple[np.ndarray, np.ndarray]:
    """Track row per slice and the sorted unique track keys (order_class, pid, tid, sub, TrackKind).

    Order: per CPU thread its steps, ops, python rows; then GPU streams (annotations after their
    stream); profiler spans last. A slice's track is a function of its (kind, pid, tid, device,
    stream, is it a ProfilerStep); events of one thread come in long runs of equal values, so the
    rows are cut into runs where any of them changes (a step row is a run of its own) and the track
    keys are worked out per run, not per row. `device` and `stream` are the values at the ascending
    rows `gpu_side`; every other row has NONE for both.
    """
    n = len(kind)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros((0, 5), np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(pid[1:], pid[:-1], out=change[1:])
    for col in (tid, kind):
        change[1:] |= col[1:] != col[:-1]
    _pair_changes(change, gpu_side, device, stream)
    after = step_rows + 1
    change[step_rows] = True
    change[after[after < n]] = True
    run_start = np.flatnonzero(change)
    k, p, t = kind[run_start], pid[run_start], tid[run_start]
    on_step = np.zeros(len(run_start), dtype=bool)
    on_step[np.searchsorted(run_start, step_rows)] = True  # step rows start their runs
    tc = np.full(len(run_start), TrackKind.CPU_THREAD, dtype=np.int64)
    tc[np.isin(k, GPU_TRACK_KINDS)] = TrackKind.GPU_STREAM
    tc[k == Kind.GPU_ANNOTATION] = TrackKind.GPU_ANNOTATION
    tc[(p < 0) & (tc == TrackKind.CPU_THREAD)] = TrackKind.SPANS
    # python frames and ProfilerStep spans get their own rows per thread: both overlap cpu ops
    # partially (prof.step() runs inside python frames and optimizer hooks), which breaks nesting.
    cpu = tc == TrackKind.CPU_THREAD
    tc[cpu & (k == Kind.PYTHON)] = TrackKind.PYTHON
    tc[cpu & on_step] = TrackKind.STEPS
    is_gpu_side = (tc == TrackKind.GPU_STREAM) | (tc == TrackKind.GPU_ANNOTATION)
    track_pid = np.where(is_gpu_side, values_at(gpu_side, device, run_start, NONE, np.int64), p)
    track_tid = np.where(is_gpu_side, values_at(gpu_side, stream, run_start, NONE, np.int64), t)
    order_class = np.where(tc == TrackKind.SPANS, 3, np.where(is_gpu_side, 1, 0))
    sub = np.select([tc == TrackKind.STEPS, tc == TrackKind.CPU_THREAD, tc == TrackKind.PYTHON,
                     tc == TrackKind.GPU_ANNOTATION], [0, 1, 2, 1], 0)
    # one int64 per run, ordered like the tuple (order_class, pid, tid, sub, tclass)
    pu, pinv = np.unique(track_pid, return_inverse=True)
    tu, tinv = np.unique(track_tid, return_inverse=True)
    code = (((order_class * len(pu) + pinv.reshape(-1)) * len(tu) + tinv.reshape(-1)) * 4 + sub) * 8 + tc
    ucode, inv = np.unique(code, return_inverse=True)
    uniq = np.stack([ucode // 8 // 4 // len(tu) // len(pu), pu[ucode // 8 // 4 // len(tu) % len(pu)],
                     tu[ucode // 8 // 4 % len(tu)], ucode // 8 % 4, ucode % 8], axis=1)
    run_of_row = _running_count(change)
    run_of_row -= 1
    return inv.reshape(-1).astype(np.int32)[run_of_row], uniq


def _pair_changes(change: np.ndarray, rows: np.ndarray, *cols: np.ndarray) -> None:
    """change[r] |= some column's value at r differs from its value at r - 1, for columns that hold values
    only at the ascending unique `rows` (NONE elsewhere): only those rows and the rows right after them
    can differ from the row before."""
    if not len(rows):
        return
    n = len(change)
    prev_held = np.zeros(len(rows), dtype=bool)  # is row r - 1 one of `rows`?
    prev_held[1:] = rows[1:] == rows[:-1] + 1
    next_held = np.zeros(len(rows), dtype=bool)
    next_held[:-1] = prev_held[1:]
    differs = np.zeros(len(rows), dtype=bool)  # at r (in rows) vs r - 1
    holds = np.zeros(len(rows), dtype=bool)  # a value other than NONE at r
    for v in cols:
        prev = np.full(len(rows), NONE, dtype=v.dtype)
        prev[1:][prev_held[1:]] = v[:-1][prev_held[1:]]
        differs |= v != prev
        holds |= v != NONE
    change[rows[differs & (rows >= 1)]] = True
    after = rows + 1  # NONE at r + 1 (not in rows) vs a value at r
    change[after[holds & ~next_held & (after < n)]] = True


CUMSUM_BLOCK = 1 << 22


def _running_count(flags: np.ndarray) -> np.ndarray:
    """np.cumsum of a bool column as int32 (int64 past 2**31 rows), in blocks of 4M rows: numpy's
    cumsum holds the GIL throughout (37M rows: ~100 ms that the window waited when a trace loaded
    in its thread); between blocks it can switch."""
    n = len(flags)
    out = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    carry = 0
    for lo in range(0, n, CUMSUM_BLOCK):
        part = out[lo:lo + CUMSUM_BLOCK]
        np.cumsum(flags[lo:lo + CUMSUM_BLOCK], dtype=out.dtype, out=part)
        part += carry
        carry = int(part[-1])
    return out


def _sort_order(track: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Row order by (track, ts, -dur).

    Rows arrive nearly in that order (each thread's events are written in time order), so one stable
    sort of a combined (track, ts) key (timsort: ~30 ms for 3M rows vs ~900 ms for a 3-key lexsort)
    and a lexsort of only the rows that tie on (track, ts) do it.
    """
    n = len(ts_ns)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(ts_ns.min()), int(ts_ns.max())
    span_bits = max(1, (hi - lo + 1).bit_length())
    if span_bits + int(track.max()).bit_length() >= 62:
        return np.lexsort((-dur_ns, ts_ns, track))
    key = track.astype(np.int64)  # (track << span_bits) | (ts - lo), built in place
    key <<= span_bits
    key += ts_ns
    key -= lo
    order = np.argsort(key, kind="stable")
    ks = key[order]
    del key
    tie = np.flatnonzero(ks[1:] == ks[:-1])
    if len(tie):
        in_tie = np.zeros(len(ks), dtype=bool)
        in_tie[tie] = in_tie[tie + 1] = True
        rows = np.flatnonzero(in_tie)  # positions in tie groups, ascending
        sub = order[rows]
        order[rows] = sub[np.lexsort((-dur_ns[sub], ks[rows]))]
    return order


def _unknown_category_warnings(strings, cat: np.ndarray, kind: np.ndarray) -> list[str]:
    """One load warning per category no Kineto version writes (an accelerator we do not know yet: its
    events are kept as other slices, so the trace must not silently read as CPU-only)."""
    ids, counts = np.unique(cat[kind == Kind.OTHER], return_counts=True)
    by_name = {strings[int(i)]: int(k) for i, k in zip(ids, counts)}
    return [f"{by_name[c]} events of unknown category '{c}' (not counted as GPU work: if it is an "
            "accelerator's, its kernels are missing from every GPU number)" for c in unknown_categories(by_name)]


def _one_truncation_warning(warnings: list[str], n_events: int) -> list[str]:
    """The loader (file cut) and the salvage of the last chunk both notice a truncation: say it once,
    with the whole file's count. Skipped corrupt events (one mark each) become one warning."""
    offsets = [int(w[len(CORRUPT_MARK):]) for w in warnings if w.startswith(CORRUPT_MARK)]
    if offsets:
        warnings = [w for w in warnings if not w.startswith(CORRUPT_MARK)]
        offsets.sort()
        where = ", ".join(f"{o:,}" for o in offsets[:5]) + (", ..." if len(offsets) > 5 else "")
        warnings.append(f"{len(offsets):,} corrupt event{'s' if len(offsets) > 1 else ''} skipped "
                        f"(at byte offset{'s' if len(offsets) > 1 else ''} {where} of the JSON); "
                        "the rest was read")
    if not any(w.startswith("file is truncated") for w in warnings):
        return warnings
    rest = [w for w in warnings if not w.startswith("file is truncated")]
    return [f"file is truncated (crashed run?): loaded {n_events:,} complete events, the rest was cut off"] + rest


def step_table(slices: SliceTable, strings, step_name_ids: np.ndarray) -> StepTable:
    srows = _named_rows(slices.name, slices.kind, step_name_ids, Kind.ANNOTATION)
    srows = srows[np.argsort(slices.ts_ns[srows], kind="stable")]
    numbers = []
    for sid in slices.name[srows].tolist():
        tail = strings[sid][len("ProfilerStep#"):]
        numbers.append(int(tail) if tail.isascii() and tail.isdigit() and len(tail) <= 18 else -1)
    return StepTable(number=np.array(numbers, dtype=np.int64), ts_ns=slices.ts_ns[srows],
                     dur_ns=slices.dur_ns[srows], slice=srows.astype(np.int64))

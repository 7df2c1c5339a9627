"""Raw decoded events -> TraceModel: time base, tracks, sorting, depth/lanes, flows, steps, memory.

Everything here is vectorised over numpy columns except the few per-event list comprehensions that
pull fields out of decoded Structs (and the B/E pairing and GPU lane assignment on overlapping
streams, which touch only the rows that need it).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from core.trace.kineto import Event, RawEvents
from core.trace.model import (
    CATEGORY_KIND, NONE, CounterTable, EventCounts, FlowKind, FlowTable, InstantTable, Kind,
    MemoryTable, SliceTable, StepTable, TraceMeta, TraceModel, TrackKind, TrackTable,
)
from core.trace.strings import StringTable

GPU_TRACK_KINDS = np.array([Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET], dtype=np.int8)
_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_RE = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)
_BOGUS_INSTANTS = {"Record Window End"}
_COLLECTIVE_HINTS = ("nccl:", "gloo:", "c10d::", "record_param_comms")
_OPTION_KEYS = ("with_stack", "profile_memory", "record_shapes", "with_flops", "with_modules")
_VERSION_KEYS = ("cuda_driver_version", "cuda_runtime_version", "cupti_version", "hip_runtime_version",
                 "roctracer_version", "torch_version", "cuda_version")
_KNOWN_TOP = {"schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName",
              "displayTimeUnit", "trace_id", *_OPTION_KEYS, *_VERSION_KEYS}


def _f64(values, count: int) -> np.ndarray:
    return np.fromiter(values, dtype=np.float64, count=count)


def _i64(values, count: int) -> np.ndarray:
    return np.fromiter(values, dtype=np.int64, count=count)


class _IdMap:
    """Maps int-or-str pids/tids to int64 (strings get stable negative ids)."""

    def __init__(self) -> None:
        self.strs: dict[str, int] = {}

    def __call__(self, values: list) -> np.ndarray:
        try:
            return np.array(values, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            out = np.empty(len(values), dtype=np.int64)
            for i, v in enumerate(values):
                if isinstance(v, int):
                    out[i] = v
                else:
                    out[i] = self.strs.setdefault(str(v), -1 - len(self.strs))
            return out


def pair_begin_end(raw: RawEvents) -> tuple[list[Event], int]:
    """Turn B/E pairs into complete events (per pid/tid stack, in file order). Returns (events, unmatched)."""
    if not raw.begins and not raw.ends:
        return [], 0
    merged = sorted(
        [(e.ts or 0.0, 0, i, e) for i, e in enumerate(raw.begins)] + [(e.ts or 0.0, 1, i, e) for i, e in enumerate(raw.ends)],
        key=lambda t: (t[0], t[1]))
    stacks: dict[tuple, list[Event]] = {}
    out: list[Event] = []
    unmatched = 0
    for ts, is_end, _, e in merged:
        key = (e.pid, e.tid)
        if not is_end:
            stacks.setdefault(key, []).append(e)
            continue
        st = stacks.get(key)
        if not st:
            unmatched += 1
            continue
        b = st.pop()
        out.append(Event(ph="X", cat=b.cat, name=b.name or e.name, pid=b.pid, tid=b.tid, ts=b.ts,
                         dur=max(0.0, ts - (b.ts or 0.0)), id=b.id, args=b.args or e.args))
    unmatched += sum(len(s) for s in stacks.values())
    return out, unmatched


def build_model(raw: RawEvents, meta_doc: dict, path: str, warnings: list[str], total_events: int) -> TraceModel:
    strings = StringTable()
    warnings = list(warnings)
    ids = _IdMap()

    paired, unmatched = pair_begin_end(raw)
    events = raw.complete + paired if paired else raw.complete
    if unmatched:
        warnings.append(f"{unmatched} begin/end events without a partner were dropped")
    n = len(events)

    # --- basic columns -----------------------------------------------------------------------
    ts_us = _f64((e.ts for e in events), n)
    dur_raw = [e.dur for e in events]
    missing_dur = sum(1 for d in dur_raw if d is None)
    dur_us = _f64((0.0 if d is None else d for d in dur_raw), n)
    if missing_dur:
        warnings.append(f"{missing_dur} complete events had no duration (shown as instants)")
    neg = dur_us < 0
    if neg.any():
        warnings.append(f"{int(neg.sum())} events had a negative duration (clamped to 0)")
        dur_us[neg] = 0.0
    cat = strings.intern_many([e.cat for e in events])
    name = strings.intern_many([e.name for e in events])
    kind_of_cat = np.zeros(len(strings), dtype=np.int8)
    for s, k in CATEGORY_KIND.items():
        sid = strings.find(s)
        if sid >= 0:
            kind_of_cat[sid] = k
    kind = kind_of_cat[cat]
    # cpu-side collectives (record_function names) get their own kind for comm rules
    coll_ids = strings.ids_matching(lambda s: s.startswith(_COLLECTIVE_HINTS))
    if len(coll_ids):
        kind[np.isin(name, coll_ids) & (kind == Kind.ANNOTATION)] = Kind.COLLECTIVE
    pid = ids([e.pid for e in events])
    tid = ids([e.tid for e in events])

    # --- time base ---------------------------------------------------------------------------
    mem_ts = _f64((e.ts for e in raw.memory), len(raw.memory))
    origin_candidates = [ts_us.min()] if n else []
    if len(mem_ts):
        origin_candidates.append(mem_ts.min())
    origin_us = float(min(origin_candidates)) if origin_candidates else 0.0
    base_ns_doc = meta_doc.get("baseTimeNanoseconds")
    if isinstance(base_ns_doc, (int, float)) and base_ns_doc > 0:
        base_unix_ns = int(base_ns_doc) + int(round(origin_us * 1000.0))
    elif origin_us > 1e14:  # absolute µs since the epoch (older traces)
        base_unix_ns = int(round(origin_us * 1000.0))
    else:
        base_unix_ns = 0

    def to_ns(t_us: np.ndarray) -> np.ndarray:
        return np.rint((t_us - origin_us) * 1000.0).astype(np.int64)

    ts_ns = to_ns(ts_us)
    dur_ns = np.rint(dur_us * 1000.0).astype(np.int64)

    # --- per-kind arg columns (only the rows that carry them) ---------------------------------
    correlation = np.full(n, NONE, dtype=np.int64)
    external_id = np.full(n, NONE, dtype=np.int64)
    stream = np.full(n, NONE, dtype=np.int32)
    device = np.full(n, NONE, dtype=np.int16)
    nbytes = np.full(n, NONE, dtype=np.int64)
    grid = np.zeros(n, dtype=np.int32)
    block = np.zeros(n, dtype=np.int32)
    registers = np.full(n, NONE, dtype=np.int32)
    occupancy = np.full(n, np.nan, dtype=np.float32)
    input_dims = np.zeros(n, dtype=np.int32)
    input_strides = np.zeros(n, dtype=np.int32)
    input_types = np.zeros(n, dtype=np.int32)
    call_stack = np.zeros(n, dtype=np.int32)
    python_id = np.full(n, NONE, dtype=np.int64)
    python_parent_id = np.full(n, NONE, dtype=np.int64)
    seq = np.full(n, NONE, dtype=np.int64)

    def take(rows: np.ndarray, attr: str, out: np.ndarray) -> None:
        if not len(rows):
            return
        vals = [getattr(events[i].args, attr, None) if events[i].args is not None else None for i in rows.tolist()]
        out[rows] = np.fromiter((NONE if v is None else v for v in vals), dtype=np.int64, count=len(vals)).astype(out.dtype)

    def take_raw(rows: np.ndarray, attr: str, out: np.ndarray) -> None:
        if not len(rows):
            return
        vals = []
        for i in rows.tolist():
            a = events[i].args
            v = getattr(a, attr, None) if a is not None else None
            vals.append(bytes(v).decode("utf-8", "replace") if v else None)
        out[rows] = strings.intern_many(vals)

    is_python = kind == Kind.PYTHON
    is_python_row = is_python
    py_rows = np.flatnonzero(is_python)
    take(py_rows, "python_id", python_id)
    take(py_rows, "python_parent_id", python_parent_id)
    other_rows = np.flatnonzero(~is_python)
    take(other_rows, "external_id", external_id)
    gpu_mask = np.isin(kind, GPU_TRACK_KINDS)
    gpu_rows = np.flatnonzero(gpu_mask | (kind == Kind.GPU_ANNOTATION))
    launch_rows = np.flatnonzero(gpu_mask | (kind == Kind.RUNTIME) | (kind == Kind.DRIVER))
    take(launch_rows, "correlation", correlation)
    take(gpu_rows, "stream", stream)
    take(gpu_rows, "device", device)
    memrows = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    take(memrows, "bytes", nbytes)
    krows = np.flatnonzero(kind == Kind.KERNEL)
    take(krows, "registers", registers)
    if len(krows):
        occ = [getattr(events[i].args, "occupancy", None) if events[i].args is not None else None for i in krows.tolist()]
        occupancy[krows] = np.array([np.nan if v is None else v for v in occ], dtype=np.float32)
    take_raw(krows, "grid", grid)
    take_raw(krows, "block", block)
    op_rows = np.flatnonzero((kind == Kind.CPU_OP) | (kind == Kind.COLLECTIVE) | (kind == Kind.ANNOTATION))
    take(op_rows, "seq", seq)
    take_raw(op_rows, "input_dims", input_dims)
    take_raw(op_rows, "input_strides", input_strides)
    take_raw(op_rows, "input_types", input_types)
    cs = [(i, events[i].args.call_stack) for i in op_rows.tolist()
          if events[i].args is not None and events[i].args.call_stack]
    if cs:
        rows, texts = zip(*cs)
        call_stack[np.array(rows)] = strings.intern_many(texts)

    # GPU events: pid is the device, tid the stream, when args lack them
    dev_missing = gpu_rows[device[gpu_rows] < 0]
    device[dev_missing] = np.clip(pid[dev_missing], -1, 32767).astype(np.int16)
    st_missing = gpu_rows[stream[gpu_rows] < 0]
    stream[st_missing] = np.clip(tid[st_missing], -1, 2**31 - 1).astype(np.int32)

    # --- tracks ------------------------------------------------------------------------------
    tclass = np.full(n, TrackKind.CPU_THREAD, dtype=np.int64)
    tclass[gpu_mask] = TrackKind.GPU_STREAM
    tclass[kind == Kind.GPU_ANNOTATION] = TrackKind.GPU_ANNOTATION
    tclass[(pid < 0) & (tclass == TrackKind.CPU_THREAD)] = TrackKind.SPANS
    # python frames and ProfilerStep spans get their own rows per thread: both overlap cpu ops
    # partially (prof.step() runs inside python frames and optimizer hooks), which breaks nesting.
    cpu = tclass == TrackKind.CPU_THREAD
    tclass[cpu & is_python_row] = TrackKind.PYTHON
    step_name_ids = strings.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    tclass[cpu & np.isin(name, step_name_ids) & (kind == Kind.ANNOTATION)] = TrackKind.STEPS
    is_cpu_side = np.isin(tclass, [TrackKind.CPU_THREAD, TrackKind.PYTHON, TrackKind.STEPS, TrackKind.SPANS])
    track_pid = np.where(is_cpu_side, pid, device.astype(np.int64))
    track_tid = np.where(is_cpu_side, tid, stream.astype(np.int64))
    # order: per CPU thread its steps, ops, python rows; then GPU streams (annotations after their
    # stream); profiler spans last
    order_class = np.where(tclass == TrackKind.SPANS, 3, np.where(is_cpu_side, 0, 1))
    sub = np.select([tclass == TrackKind.STEPS, tclass == TrackKind.CPU_THREAD, tclass == TrackKind.PYTHON,
                     tclass == TrackKind.GPU_ANNOTATION], [0, 1, 2, 1], 0)
    keys = np.stack([order_class, track_pid, track_tid, sub, tclass], axis=1) if n else np.zeros((0, 5), np.int64)
    uniq, track = np.unique(keys, axis=0, return_inverse=True)
    track = track.reshape(-1).astype(np.int32)
    n_tracks = len(uniq)

    # --- sort rows by (track, ts, -dur) ------------------------------------------------------
    order = np.lexsort((-dur_ns, ts_ns, track))
    cols = dict(ts_ns=ts_ns, dur_ns=dur_ns, track=track, name=name, cat=cat, kind=kind,
                correlation=correlation, external_id=external_id, stream=stream, device=device,
                bytes=nbytes, grid=grid, block=block, registers=registers, occupancy=occupancy,
                input_dims=input_dims, input_strides=input_strides, input_types=input_types,
                call_stack=call_stack, python_id=python_id, python_parent_id=python_parent_id, seq=seq)
    cols = {k: v[order] for k, v in cols.items()}
    track_offsets = np.searchsorted(cols["track"], np.arange(n_tracks + 1)).astype(np.int64)
    track_kind = uniq[:, 4].astype(np.int8) if n_tracks else np.zeros(0, np.int8)
    depth = compute_depth(cols["ts_ns"], cols["dur_ns"], track_offsets)
    gpu_track = np.isin(track_kind, [TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION])
    assign_lanes(cols["ts_ns"], cols["dur_ns"], track_offsets, gpu_track, depth)
    ends = cols["ts_ns"] + cols["dur_ns"]
    nonempty = track_offsets[:-1] < track_offsets[1:]
    max_dur = np.zeros(n_tracks, dtype=np.int64)
    max_depth = np.zeros(n_tracks, dtype=np.int16)
    if n:
        starts = track_offsets[:-1][nonempty]
        max_dur[nonempty] = np.maximum.reduceat(cols["dur_ns"], starts)
        max_depth[nonempty] = np.maximum.reduceat(depth, starts)
    slices = SliceTable(depth=depth, track_offsets=track_offsets, max_dur_ns=max_dur, **cols)

    # --- track table -------------------------------------------------------------------------
    tracks = _track_table(uniq, raw.metadata, strings, max_depth, ids)

    # --- flows ---------------------------------------------------------------------------------
    flows = _flows(slices, raw.flows, tracks, ids, origin_us)

    # --- steps ---------------------------------------------------------------------------------
    step_ids = strings.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    srows = np.flatnonzero(np.isin(slices.name, step_ids) & (slices.kind == Kind.ANNOTATION))
    srows = srows[np.argsort(slices.ts_ns[srows], kind="stable")]
    numbers = np.array([int(_STEP_RE.match(strings[i]).group(1)) if _STEP_RE.match(strings[i]) else -1
                        for i in slices.name[srows].tolist()], dtype=np.int64)
    steps = StepTable(number=numbers, ts_ns=slices.ts_ns[srows], dur_ns=slices.dur_ns[srows], slice=srows.astype(np.int64))

    # --- memory, instants, counters ------------------------------------------------------------
    memory = _memory(raw.memory, to_ns, tracks, ids)
    instants = _instants(raw.instants, to_ns, strings, tracks, ids)
    counters = _counters(raw.counters, to_ns, strings)

    meta = _meta(meta_doc, path, base_unix_ns)
    rank = rank_of(meta, path)
    counts = EventCounts(
        events=total_events,
        kernels=int((kind == Kind.KERNEL).sum()), memcpy=int((kind == Kind.MEMCPY).sum()),
        memset=int((kind == Kind.MEMSET).sum()), cpu_ops=int((cat == strings.find("cpu_op")).sum()) if strings.find("cpu_op") >= 0 else 0,
        python=int(is_python.sum()), runtime=int((kind == Kind.RUNTIME).sum()), memory=len(raw.memory),
    )
    if n == 0:
        warnings.append("the trace holds no complete events")
    return TraceModel(path=path, rank=rank, strings=strings, slices=slices, tracks=tracks, memory=memory,
                      instants=instants, counters=counters, flows=flows, steps=steps, meta=meta,
                      counts=counts, warnings=tuple(dict.fromkeys(warnings)))


def compute_depth(ts: np.ndarray, dur: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Nesting depth per row for rows sorted by (track, ts, -dur), fully vectorised.

    depth(i) = number of earlier rows on the same track still open at ts(i). Rows on one track are
    mapped to disjoint key ranges so that one global sort + searchsorted serves all tracks.
    """
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    n_tracks = len(offsets) - 1
    counts = np.diff(offsets)
    track = np.repeat(np.arange(n_tracks), counts)
    end = ts + dur
    nonempty = counts > 0
    tmin = np.zeros(n_tracks, dtype=np.int64)
    tmax = np.zeros(n_tracks, dtype=np.int64)
    tmin[nonempty] = np.minimum.reduceat(ts, offsets[:-1][nonempty])
    tmax[nonempty] = np.maximum.reduceat(end, offsets[:-1][nonempty])
    width = np.where(nonempty, tmax - tmin + 1, 0)
    shift = np.concatenate([[0], np.cumsum(width)[:-1]]) - tmin
    start_key = ts + shift[track]
    end_key = np.sort(end + shift[track])
    ended = np.searchsorted(end_key, start_key, side="right") - offsets[track]
    # zero-duration rows at the same ts sort last in their (track, ts) group; those after row i
    # were counted by searchsorted but are not before i.
    pos = np.arange(n, dtype=np.int64)
    zero = dur == 0
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (ts[1:] != ts[:-1]) | (track[1:] != track[:-1])
    gid = np.cumsum(new_group) - 1
    gstart = np.flatnonzero(new_group)
    gend = np.append(gstart[1:], n)
    zeros_in_group = np.add.reduceat(zero.astype(np.int64), gstart)
    zeros_after = np.where(zero, gend[gid] - pos, zeros_in_group[gid])
    before = pos - offsets[track]
    depth = before - (ended - zeros_after)
    return np.clip(depth, 0, 32767).astype(np.int16)


def assign_lanes(ts, dur, offsets, gpu_track, depth) -> None:
    """GPU tracks: depth := sub-row so that overlapping events on one stream are all kept."""
    for t in np.flatnonzero(gpu_track).tolist():
        a, b = int(offsets[t]), int(offsets[t + 1])
        if b - a == 0:
            continue
        s = ts[a:b]
        e = s + dur[a:b]
        prev_end = np.maximum.accumulate(e)
        overlap = np.flatnonzero(s[1:] < prev_end[:-1])
        if not len(overlap):
            depth[a:b] = 0
            continue
        lanes_end: list[int] = []
        out = np.zeros(b - a, dtype=np.int16)
        for i, (si, ei) in enumerate(zip(s.tolist(), e.tolist())):
            for lane, le in enumerate(lanes_end):
                if le <= si:
                    lanes_end[lane] = ei
                    out[i] = lane
                    break
            else:
                out[i] = len(lanes_end)
                lanes_end.append(ei)
        depth[a:b] = out


def _track_table(uniq: np.ndarray, metadata: list[Event], strings: StringTable, max_depth, ids: _IdMap) -> TrackTable:
    proc_names: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    for e in metadata:
        a = e.args
        if a is None:
            continue
        p = int(ids([e.pid])[0])
        t = int(ids([e.tid])[0])
        if e.name == "process_name" and a.name:
            proc_names[p] = a.name
        elif e.name == "thread_name" and a.name:
            thread_names[(p, t)] = a.name
        elif e.name == "thread_sort_index" and a.sort_index is not None:
            thread_sort[(p, t)] = a.sort_index
    n = len(uniq)
    labels = []
    sort_index = np.zeros(n, dtype=np.int64)
    dev = np.full(n, NONE, dtype=np.int16)
    for i in range(n):
        _, p, t, _, k = (int(x) for x in uniq[i])
        if k in (TrackKind.CPU_THREAD, TrackKind.PYTHON, TrackKind.STEPS):
            base = thread_names.get((p, t)) or f"thread {t}"
            labels.append(base if k == TrackKind.CPU_THREAD else f"{base} · {'python' if k == TrackKind.PYTHON else 'steps'}")
            sort_index[i] = thread_sort.get((p, t), t)
        elif k == TrackKind.SPANS:
            labels.append("profiler spans")
        else:
            dev[i] = p
            sort_index[i] = t
            labels.append(f"GPU {p} · stream {t}" + (" · annotations" if k == TrackKind.GPU_ANNOTATION else ""))
    return TrackTable(
        kind=(uniq[:, 4] if n else np.zeros(0)).astype(np.int8),
        pid=(uniq[:, 1] if n else np.zeros(0)).astype(np.int64),
        tid=(uniq[:, 2] if n else np.zeros(0)).astype(np.int64),
        device=dev, label=strings.intern_many(labels), sort_index=sort_index, max_depth=max_depth,
    )


def _cpu_track_lookup(tracks: TrackTable):
    cpu = np.flatnonzero(tracks.kind == TrackKind.CPU_THREAD)
    table = {(int(tracks.pid[i]), int(tracks.tid[i])): int(i) for i in cpu}
    return table


def _flows(slices: SliceTable, flow_events: list[Event], tracks: TrackTable, ids: _IdMap, origin_us: float) -> FlowTable:
    src_parts, dst_parts, kind_parts = [], [], []
    # CPU launch -> GPU event by correlation id
    corr = slices.correlation
    launch = np.flatnonzero(((slices.kind == Kind.RUNTIME) | (slices.kind == Kind.DRIVER)) & (corr >= 0))
    gpu = np.flatnonzero(np.isin(slices.kind, GPU_TRACK_KINDS) & (corr >= 0))
    if len(launch) and len(gpu):
        lo = launch[np.argsort(corr[launch], kind="stable")]
        lc = corr[lo]
        pos = np.searchsorted(lc, corr[gpu])
        pos_c = np.minimum(pos, len(lc) - 1)
        ok = lc[pos_c] == corr[gpu]
        src_parts.append(lo[pos_c[ok]])
        dst_parts.append(gpu[ok])
        kind_parts.append(np.full(int(ok.sum()), FlowKind.LAUNCH, dtype=np.int8))
    # forward -> backward from "fwdbwd" flow events: both ends sit at the start of an op on a CPU thread
    fb = [e for e in flow_events if e.cat == "fwdbwd" and e.id is not None and e.ts is not None]
    if fb:
        lookup = _cpu_track_lookup(tracks)
        by_id: dict = {}
        for e in fb:
            t = lookup.get((int(ids([e.pid])[0]), int(ids([e.tid])[0])), -1)
            if t < 0:
                continue
            a, b = int(slices.track_offsets[t]), int(slices.track_offsets[t + 1])
            ts_ns = int(round((e.ts - origin_us) * 1000.0))
            i = a + int(np.searchsorted(slices.ts_ns[a:b], ts_ns))
            # first row starting there that is an op (skip python frames)
            while i < b and slices.ts_ns[i] == ts_ns and slices.kind[i] not in (Kind.CPU_OP, Kind.COLLECTIVE):
                i += 1
            if i >= b or slices.ts_ns[i] != ts_ns:
                continue
            by_id.setdefault(e.id, [None, None])[0 if e.ph == "s" else 1] = i
        pairs = [(s, f) for s, f in by_id.values() if s is not None and f is not None]
        if pairs:
            arr = np.array(pairs, dtype=np.int64)
            src_parts.append(arr[:, 0])
            dst_parts.append(arr[:, 1])
            kind_parts.append(np.full(len(arr), FlowKind.FWD_BWD, dtype=np.int8))
    if not src_parts:
        return FlowTable(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8))
    return FlowTable(np.concatenate(src_parts).astype(np.int64), np.concatenate(dst_parts).astype(np.int64),
                     np.concatenate(kind_parts))


def _memory(events: list[Event], to_ns, tracks: TrackTable, ids: _IdMap) -> MemoryTable:
    n = len(events)
    def col(attr, dtype, default=NONE):
        return np.fromiter((default if (e.args is None or getattr(e.args, attr) is None) else getattr(e.args, attr)
                            for e in events), dtype=dtype, count=n)
    ts = to_ns(_f64((e.ts for e in events), n))
    lookup = _cpu_track_lookup(tracks)
    pids = ids([e.pid for e in events]) if n else np.zeros(0, np.int64)
    tids = ids([e.tid for e in events]) if n else np.zeros(0, np.int64)
    track = np.fromiter((lookup.get((p, t), -1) for p, t in zip(pids.tolist(), tids.tolist())), dtype=np.int32, count=n)
    order = np.argsort(ts, kind="stable")
    return MemoryTable(
        ts_ns=ts[order], device=col("device_id", np.int16)[order], device_type=col("device_type", np.int8)[order],
        bytes=col("mem_bytes", np.int64, 0)[order], total_allocated=col("total_allocated", np.int64, 0)[order],
        total_reserved=col("total_reserved", np.int64, 0)[order], addr=col("addr", np.int64, 0)[order],
        track=track[order],
    )


def _instants(events: list[Event], to_ns, strings: StringTable, tracks: TrackTable, ids: _IdMap) -> InstantTable:
    events = [e for e in events if e.name not in _BOGUS_INSTANTS]
    n = len(events)
    lookup = _cpu_track_lookup(tracks)
    track = np.fromiter((lookup.get((int(ids([e.pid])[0]), int(ids([e.tid])[0])), -1) for e in events), dtype=np.int32, count=n)
    ts = to_ns(_f64((e.ts for e in events), n))
    order = np.argsort(ts, kind="stable")
    return InstantTable(ts_ns=ts[order], track=track[order], name=strings.intern_many([e.name for e in events])[order])


def _counters(events: list[Event], to_ns, strings: StringTable) -> CounterTable:
    # "C" events carry their values in args; our typed Args keeps none of them, so the tolerant
    # decoder is not needed: counter events are rare in Kineto traces and skipped here.
    return CounterTable(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64))


def _meta(doc: dict, path: str, base_unix_ns: int) -> TraceMeta:
    dp = doc.get("deviceProperties")
    di = doc.get("distributedInfo")
    sv = doc.get("schemaVersion")
    return TraceMeta(
        trace_name=str(doc.get("traceName") or Path(path).name),
        schema_version=sv if isinstance(sv, int) else None,
        base_unix_ns=base_unix_ns,
        device_properties=tuple(p for p in dp if isinstance(p, dict)) if isinstance(dp, list) else (),
        distributed_info=di if isinstance(di, dict) else None,
        profiler_options={k: doc[k] for k in _OPTION_KEYS if k in doc},
        versions={k: doc[k] for k in _VERSION_KEYS if k in doc},
        extra={k: v for k, v in doc.items() if k not in _KNOWN_TOP},
    )


def rank_of(meta: TraceMeta, path: str) -> int:
    di = meta.distributed_info
    if di and isinstance(di.get("rank"), int):
        return di["rank"]
    m = _RANK_RE.search(Path(path).name)
    return int(m.group(1)) if m else 0

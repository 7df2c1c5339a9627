"""The model's side tables from merged columns: tracks, flows, memory, instants, counters, meta."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from core.trace.columns import PH_FLOW_S
from core.trace.devprops import device_props
from core.trace.model import (
    NONE,
    CounterTable,
    FlowKind,
    FlowTable,
    InstantTable,
    Kind,
    MemoryTable,
    SliceTable,
    TraceMeta,
    TrackKind,
    TrackTable,
)
from core.trace.strings import StringTable

_RANK_RE = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)
_BOGUS_INSTANTS = ("Record Window End",)  # Kineto's end marker; its ts is often far outside the trace
_GPU_KINDS = np.array([Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET], dtype=np.int8)
_OPTION_KEYS = ("with_stack", "profile_memory", "record_shapes", "with_flops", "with_modules")
_VERSION_KEYS = ("cuda_driver_version", "cuda_runtime_version", "cupti_version", "hip_runtime_version",
                 "roctracer_version", "torch_version", "cuda_version")
_KNOWN_TOP = {"schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName",
              "displayTimeUnit", "trace_id", *_OPTION_KEYS, *_VERSION_KEYS}


def track_table(uniq: np.ndarray, metadata: list[tuple], strings: StringTable, max_depth) -> TrackTable:
    thread_names: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    for name, p, t, arg_name, sort_index, _labels in metadata:
        if name == "thread_name" and arg_name:
            thread_names[(p, t)] = arg_name
        elif name == "thread_sort_index" and isinstance(sort_index, int) and -2**62 < sort_index < 2**62:
            thread_sort[(p, t)] = sort_index
    n = len(uniq)
    labels = []
    sort_index = np.zeros(n, dtype=np.int64)
    dev = np.full(n, NONE, dtype=np.int16)
    rows = uniq.tolist()
    gpu_pids = {p for _, p, _, _, k in rows if k in (TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION)}
    gpu_streams = {(p, t) for _, p, t, _, k in rows if k == TrackKind.GPU_STREAM}
    for i, (_, p, t, _, k) in enumerate(rows):
        if k == TrackKind.CPU_THREAD and p in gpu_pids:
            # non-work records on a device's pid: CUPTI's sync records (cuda_sync), per stream or device-wide
            labels.append(f"GPU {p} · stream {t} · syncs" if (p, t) in gpu_streams else f"GPU {p} · syncs")
            sort_index[i] = t
        elif k in (TrackKind.CPU_THREAD, TrackKind.PYTHON, TrackKind.STEPS):
            base = thread_names.get((p, t)) or f"thread {t}"
            labels.append(base if k == TrackKind.CPU_THREAD else f"{base} · {'python' if k == TrackKind.PYTHON else 'steps'}")
            sort_index[i] = thread_sort.get((p, t), t)
        elif k == TrackKind.SPANS:
            labels.append("profiler spans")
        else:
            dev[i] = p
            sort_index[i] = t
            labels.append(f"GPU {p} · stream {t}" + (" · annotations" if k == TrackKind.GPU_ANNOTATION else ""))
    return TrackTable(kind=uniq[:, 4].astype(np.int8), pid=uniq[:, 1].astype(np.int64),
                      tid=uniq[:, 2].astype(np.int64), device=dev, label=strings.intern_many(labels),
                      sort_index=sort_index, max_depth=max_depth)


def cpu_track_of(tracks: TrackTable, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """CPU_THREAD track row for each (pid, tid), -1 where that thread has no track."""
    out = np.full(len(pid), -1, dtype=np.int32)
    for i in np.flatnonzero(tracks.kind == TrackKind.CPU_THREAD).tolist():
        out[(pid == tracks.pid[i]) & (tid == tracks.tid[i])] = i
    return out


def flows(slices: SliceTable, fl: dict, tracks: TrackTable, to_ns, strings: StringTable) -> FlowTable:
    src_parts, dst_parts, kind_parts = [], [], []
    # CPU launch -> GPU event by correlation id
    # only the rows that carry a correlation id (a sparse column's own rows: no pass over every slice)
    has = slices.present_rows("correlation")
    corr_of = slices.at("correlation", has)
    has_kind = slices.kind[has]
    keep = corr_of >= 0
    is_launch = keep & ((has_kind == Kind.RUNTIME) | (has_kind == Kind.DRIVER))
    is_gpu = keep & np.isin(has_kind, _GPU_KINDS)
    launch, launch_corr = has[is_launch], corr_of[is_launch]
    gpu, gpu_corr = has[is_gpu], corr_of[is_gpu]
    if len(launch) and len(gpu):
        srt = np.argsort(launch_corr, kind="stable")
        lo, lc = launch[srt], launch_corr[srt]
        pos = np.minimum(np.searchsorted(lc, gpu_corr), len(lc) - 1)
        ok = lc[pos] == gpu_corr
        src_parts.append(lo[pos[ok]])
        dst_parts.append(gpu[ok])
        kind_parts.append(np.full(int(ok.sum()), FlowKind.LAUNCH, dtype=np.int8))
    pair = _fwd_bwd(slices, fl, tracks, to_ns, strings)
    if pair is not None:
        src_parts.append(pair[0])
        dst_parts.append(pair[1])
        kind_parts.append(np.full(len(pair[0]), FlowKind.FWD_BWD, dtype=np.int8))
    if not src_parts:
        return FlowTable(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8))
    return FlowTable(np.concatenate(src_parts).astype(np.int64), np.concatenate(dst_parts).astype(np.int64),
                     np.concatenate(kind_parts))


def _fwd_bwd(slices: SliceTable, fl: dict, tracks: TrackTable, to_ns, strings: StringTable):
    """forward -> backward from "fwdbwd" flow events: both ends sit at the start of an op."""
    if not len(fl.get("ts", ())):
        return None
    sel = np.flatnonzero((fl["cat"] == strings.find("fwdbwd")) & (fl["id"] != NONE))
    if not len(sel):
        return None
    t = cpu_track_of(tracks, fl["pid"][sel], fl["tid"][sel])
    ok = t >= 0
    sel, t = sel[ok], t[ok]
    if not len(sel):
        return None
    ts_ns = to_ns(fl["ts"][sel])
    off = slices.track_offsets
    # per CPU track binary search on its ts range; ops (not annotations) starting exactly there
    rows = np.full(len(sel), -1, dtype=np.int64)
    for tr in np.flatnonzero(np.bincount(t)).tolist():  # unique tracks (np.unique would import numpy.ma: 14 ms)
        m = t == tr
        a, b = int(off[tr]), int(off[tr + 1])
        tts = slices.ts_ns[a:b]
        i = np.searchsorted(tts, ts_ns[m])
        res = np.full(len(i), -1, dtype=np.int64)
        for _ in range(4):  # skip annotations starting at the same ts
            ok = (i < b - a)
            ic = np.minimum(i, b - a - 1)
            hit = ok & (tts[ic] == ts_ns[m]) & (res < 0)
            kinds = slices.kind[a + ic]
            is_op = (kinds == Kind.CPU_OP) | (kinds == Kind.COLLECTIVE)
            res[hit & is_op] = a + ic[hit & is_op]
            i = np.where(hit & ~is_op, i + 1, b - a)
        rows[m] = res
    good = rows >= 0
    ids, phs, rows = fl["id"][sel][good], fl["ph"][sel][good], rows[good]
    start = phs == PH_FLOW_S
    s_ids, s_rows = ids[start], rows[start]
    f_ids, f_rows = ids[~start], rows[~start]
    # last start / last finish per id wins (as a dict would); then join on id
    s_u, s_last = _last_per_id(s_ids)
    f_u, f_last = _last_per_id(f_ids)
    common, si, fi = np.intersect1d(s_u, f_u, assume_unique=True, return_indices=True)
    if not len(common):
        return None
    return s_rows[s_last[si]], f_rows[f_last[fi]]


def _last_per_id(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rev = ids[::-1]
    u, first_in_rev = np.unique(rev, return_index=True)
    return u, len(ids) - 1 - first_in_rev


def memory_table(mem: dict, to_ns, tracks: TrackTable) -> MemoryTable:
    if not mem or not len(mem.get("ts", ())):
        z = np.zeros(0, np.int64)
        return MemoryTable(ts_ns=z, device=np.zeros(0, np.int16), device_type=np.zeros(0, np.int8), bytes=z,
                           total_allocated=z, total_reserved=z, addr=z, track=np.zeros(0, np.int32))
    ts = to_ns(mem["ts"])
    order = np.argsort(ts, kind="stable")
    track = cpu_track_of(tracks, mem["pid"], mem["tid"])
    return MemoryTable(ts_ns=ts[order], device=mem["device_id"][order], device_type=mem["device_type"][order],
                       bytes=mem["mem_bytes"][order], total_allocated=mem["total_allocated"][order],
                       total_reserved=mem["total_reserved"][order], addr=mem["addr"][order], track=track[order])


def instant_table(ins: dict, to_ns, strings: StringTable, tracks: TrackTable) -> InstantTable:
    if not ins or not len(ins.get("ts", ())):
        return InstantTable(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))
    bogus = np.array([strings.find(s) for s in _BOGUS_INSTANTS], dtype=np.int32)
    keep = ~np.isin(ins["name"], bogus)
    ts = to_ns(ins["ts"][keep])
    track = cpu_track_of(tracks, ins["pid"][keep], ins["tid"][keep])
    order = np.argsort(ts, kind="stable")
    return InstantTable(ts_ns=ts[order], track=track[order], name=ins["name"][keep][order])


def counter_table(c: dict, to_ns) -> CounterTable:
    if not c or not len(c.get("ts", ())):
        return CounterTable(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64))
    ts = to_ns(c["ts"])
    order = np.lexsort((ts, c["series"]))
    return CounterTable(ts_ns=ts[order], series=c["series"][order].astype(np.int32), value=c["value"][order])


def trace_meta(doc: dict, path: str, base_unix_ns: int) -> TraceMeta:
    from core.trace import strcap
    doc = strcap.clean(doc)  # names as the events' are: cut, no lone surrogates
    dp = doc.get("deviceProperties")
    di = doc.get("distributedInfo")
    sv = doc.get("schemaVersion")
    return TraceMeta(
        trace_name=str(doc.get("traceName") or Path(path).name),
        schema_version=sv if isinstance(sv, int) else None,
        base_unix_ns=base_unix_ns,
        device_properties=device_props(dp),
        distributed_info=di if isinstance(di, dict) else None,
        profiler_options={k: doc[k] for k in _OPTION_KEYS if k in doc},
        versions={k: doc[k] for k in _VERSION_KEYS if k in doc},
        extra={k: v for k, v in doc.items() if k not in _KNOWN_TOP},
    )


def rank_of(meta: TraceMeta, path: str) -> int:
    di = meta.distributed_info
    if di and isinstance(di.get("rank"), int) and not isinstance(di["rank"], bool) and 0 <= di["rank"] < 2**31:
        return di["rank"]
    m = _RANK_RE.search(Path(path).name)
    return int(m.group(1)) if m and len(m.group(1)) <= 9 else 0

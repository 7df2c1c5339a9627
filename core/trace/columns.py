"""One chunk of decoded events -> compact numpy columns + a chunk-local string table.

This is what worker processes run (core.trace.parallel): they return `ChunkColumns` (numpy arrays,
a list of unique strings, a few metadata tuples), never lists of Structs, so little crosses the
process boundary. Columns come out of the Structs with C-level passes
(`np.fromiter(map(attrgetter(field), events))`), and per-kind arg columns are taken only on the
rows of the kinds that carry them and shipped sparse as (row index, value) pairs.

pid / tid / flow ids that are strings ("Spans", "Traces") are encoded as STR_CODE_BASE - string id
(core.trace.colvals: the string table and value converters);
the parent (core.trace.merge) turns them into small negative ids after remapping strings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

import msgspec
import numpy as np

from core.trace import strcap

# the string table and value converters live in core.trace.colvals; re-exported for callers
from core.trace.colvals import (  # noqa: F401
    STR_CODE_BASE,
    _add_series,
    _kind_mask,
    _kinds,
    _narrow,
    _pick,
    _Strings,
    float_col,
    int_col,
)
from core.trace.kineto import CounterEvent, Event, _fast_counter_args
from core.trace.model import NONE, Kind
from core.trace.strcap import CUT_WARNING, MAX_STRING_BYTES, cap_strings, cap_text, is_long, is_unicode
from core.trace.timens import NS_MISSING, ns_col

# phase codes
PH_X, PH_B, PH_E, PH_INSTANT, PH_FLOW_S, PH_FLOW_F, PH_FLOW_T, PH_META, PH_COUNTER, PH_OTHER = range(10)


class _PhaseCodes(dict):
    def __missing__(self, key):
        return PH_OTHER


_PH = _PhaseCodes({"X": PH_X, "B": PH_B, "E": PH_E, "i": PH_INSTANT, "I": PH_INSTANT, "R": PH_INSTANT,
                   "n": PH_INSTANT, "s": PH_FLOW_S, "f": PH_FLOW_F, "t": PH_FLOW_T, "M": PH_META,
                   "C": PH_COUNTER})

# arg columns: name -> (dtype, kinds whose rows carry it); "str" columns hold string ids
_GPU = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
_OPS = (Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE)
INT_ARGS: dict[str, tuple[type, tuple]] = {
    "python_id": (np.int64, (Kind.PYTHON,)),
    "python_parent_id": (np.int64, (Kind.PYTHON,)),
    "external_id": (np.int64, (Kind.OTHER, Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.CPU_OP, Kind.RUNTIME,
                               Kind.DRIVER, Kind.ANNOTATION, Kind.GPU_ANNOTATION, Kind.TRACE, Kind.COLLECTIVE)),
    "correlation": (np.int64, (*_GPU, Kind.RUNTIME, Kind.DRIVER)),
    "stream": (np.int32, (*_GPU, Kind.GPU_ANNOTATION)),
    "device": (np.int16, (*_GPU, Kind.GPU_ANNOTATION)),
    "bytes": (np.int64, (Kind.MEMCPY, Kind.MEMSET)),
    "registers": (np.int32, (Kind.KERNEL,)),
    "seq": (np.int64, _OPS),
}
FLOAT_ARGS = {"occupancy": (np.float32, (Kind.KERNEL,))}
STR_ARGS = {"grid": (Kind.KERNEL,), "block": (Kind.KERNEL,), "input_dims": _OPS, "input_strides": _OPS,
            "input_types": _OPS, "call_stack": _OPS}
# a missing arg reads as this; an arg column may come dense: (None, values over every row, this fill
# on rows without it) - the scanner's form when most rows carry it (python ids, offsets)
ARG_FILL = {**{k: NONE for k in INT_ARGS}, **{k: np.nan for k in FLOAT_ARGS}, **{k: 0 for k in STR_ARGS},
            "src_offset": NONE}
MEMORY_ARGS = {"device_id": np.int16, "device_type": np.int8, "mem_bytes": np.int64,
               "total_allocated": np.int64, "total_reserved": np.int64, "addr": np.int64}


@dataclass
class ChunkColumns:
    """Columns of one chunk. String columns hold ids into `strings` (chunk-local, 0 = "")."""

    strings: list[str]
    rows: dict[str, np.ndarray]  # X/B/E events: ph, ts, dur, name, cat, kind, pid, tid (ts / dur: int64 ns,
    # exact, core.trace.timens sentinels; every table's ts likewise)
    args: dict[str, tuple[np.ndarray, np.ndarray]]  # sparse arg columns: (row index, value)
    instants: dict[str, np.ndarray]  # ts, name, pid, tid
    memory: dict[str, np.ndarray]  # ts, pid, tid + MEMORY_ARGS
    flows: dict[str, np.ndarray]  # ph, id, ts, pid, tid, cat
    counters: dict[str, np.ndarray]  # ts, series, value
    metadata: list[tuple] = field(default_factory=list)  # (name, pid, tid, arg name, sort_index, labels)
    n_events: int = 0
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    cut: int = 0  # strings the C scanner cut to MAX_STRING_BYTES
    from_scanner: bool = False  # strings from the C scanner: valid UTF-8 (it refuses lone surrogates)

    def __post_init__(self) -> None:
        """Strings longer than MAX_STRING_BYTES cut to it, as the C scanner cuts them (the Python path's and
        the metadata's; the merge folds strings that became equal), with one warning."""
        cut = self.cut + cap_strings(self.strings)
        if any(is_long(t) or not is_unicode(t) for m in self.metadata for t in (m[0], m[3], m[5]) if t):
            cut += sum(is_long(t) for m in self.metadata for t in (m[0], m[3], m[5]))

            def fix(t):
                return strcap.text(cap_text(t))
            self.metadata = [(fix(m[0]), m[1], m[2], fix(m[3]), m[4], fix(m[5])) for m in self.metadata]
        if cut:
            self.warnings.append(CUT_WARNING)
        if not self.from_scanner and strcap.fix_surrogates(self.strings):  # the scanner refuses them
            self.warnings.append("names holding lone surrogates (\\ud800-\\udfff escapes) are shown with \ufffd")


def as_sparse(name: str, arg: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(row index, value) pairs of an arg column that may be dense (see ARG_FILL)."""
    idx, vals = arg
    if idx is not None:
        return idx, vals
    if hasattr(vals, "concat"):  # merge.DenseParts
        vals = vals.concat()
    keep = ~np.isnan(vals) if name in FLOAT_ARGS else vals != ARG_FILL[name]
    return np.flatnonzero(keep).astype(np.int32), vals[keep]



def events_to_columns(events: list[Event], counter_args: dict[int, dict] | None, warnings: list[str],
                      chunk=None, st: _Strings | None = None) -> ChunkColumns:
    """Columns of decoded events. counter_args None: decode them from `chunk` if there are any.
    `st`: the string table to add to (shared by the pieces of one chunk, core.trace.pieces)."""
    st = _Strings() if st is None else st
    n = len(events)
    ph = np.fromiter(map(_PH.__getitem__, map(attrgetter("ph"), events)), dtype=np.int8, count=n)
    ts = ns_col(list(map(attrgetter("ts"), events)))  # exact int64 ns (core/trace/timens.py)
    has_ts = ts != NS_MISSING
    timed = (ph <= PH_INSTANT) | (ph == PH_COUNTER)
    skipped = int((timed & ~has_ts).sum() + (ph == PH_OTHER).sum())

    # --- X / B / E rows -------------------------------------------------------------------------
    ridx = np.flatnonzero((ph <= PH_E) & has_ts)
    rev = _pick(events, ridx)
    cat = st.col(rev, "cat")
    kind = _kinds(cat, st.strs)
    rows = {
        "ph": ph[ridx], "ts": ts[ridx], "dur": ns_col(list(map(attrgetter("dur"), rev))),
        "name": st.col(rev, "name"), "cat": cat, "kind": kind,
        "pid": st.codes(rev, "pid"), "tid": st.codes(rev, "tid"),
    }
    args = list(map(attrgetter("args"), rev))
    sparse: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    picked: dict[tuple, tuple] = {}

    def rows_of(kinds: tuple) -> tuple[np.ndarray, tuple]:
        if kinds not in picked:
            idx = np.flatnonzero(_kind_mask(kinds)[kind]).astype(np.int32)
            picked[kinds] = (idx, _pick(args, idx))
        return picked[kinds]

    for name, (dtype, kinds) in INT_ARGS.items():
        idx, sub = rows_of(kinds)
        vals = int_col(sub, dtype, attr=name)
        keep = vals != NONE
        sparse[name] = (idx[keep], vals[keep])
    for name, (dtype, kinds) in FLOAT_ARGS.items():
        idx, sub = rows_of(kinds)
        vals = float_col(sub, dtype, attr=name)
        keep = ~np.isnan(vals)
        sparse[name] = (idx[keep], vals[keep])
    for name, kinds in STR_ARGS.items():
        idx, sub = rows_of(kinds)
        sub = list(map(attrgetter(name), sub))
        if not any(sub):  # all missing (call_stack usually is): nothing to intern
            vals = np.zeros(len(sub), dtype=np.int32)
        else:
            vals = st.col(sub) if name == "call_stack" else st.raw_col(sub)
        keep = vals != 0
        sparse[name] = (idx[keep], vals[keep])

    # --- instants, [memory] ------------------------------------------------------------------------
    iidx = np.flatnonzero((ph == PH_INSTANT) & has_ts)
    iev = _pick(events, iidx)
    iname = st.col(iev, "name")
    mem_sid = st.ids.get("[memory]", -1)
    is_mem = iname == mem_sid
    mev = _pick(iev, np.flatnonzero(is_mem))
    margs = list(map(attrgetter("args"), mev))
    memory = {"ts": ts[iidx[is_mem]], "pid": st.codes([e.pid for e in mev]), "tid": st.codes([e.tid for e in mev])}
    for name, dtype in MEMORY_ARGS.items():
        memory[name] = int_col(margs, dtype, missing=NONE if name.startswith("device") else 0, attr=name)
    oev = _pick(iev, np.flatnonzero(~is_mem))
    instants = {"ts": ts[iidx[~is_mem]], "name": iname[~is_mem],
                "pid": st.codes([e.pid for e in oev]), "tid": st.codes([e.tid for e in oev])}

    # --- flows -----------------------------------------------------------------------------------
    fidx = np.flatnonzero((ph >= PH_FLOW_S) & (ph <= PH_FLOW_T) & has_ts)
    fev = _pick(events, fidx)
    flows = {"ph": ph[fidx], "ts": ts[fidx], "id": st.codes([e.id for e in fev]),
             "pid": st.codes([e.pid for e in fev]), "tid": st.codes([e.tid for e in fev]),
             "cat": st.col([e.cat for e in fev])}

    # --- counters ("C": every numeric arg is one series "<name>/<key>") ----------------------------
    c_ts, c_series, c_val = [], [], []
    c_rows = np.flatnonzero((ph == PH_COUNTER) & has_ts)
    if counter_args is None:
        counter_args = _fast_counter_args(chunk) if len(c_rows) and chunk is not None else {}
    for i in c_rows.tolist():
        _add_series(counter_args.get(i), int(ts[i]), events[i].name, c_ts, c_series, c_val)
    counters = {"ts": np.array(c_ts, dtype=np.int64), "series": st.col(c_series),
                "value": np.array(c_val, dtype=np.float64)}

    # --- metadata (few) --------------------------------------------------------------------------
    meta = []
    for i in np.flatnonzero(ph == PH_META).tolist():
        e = events[i]
        pt = st.codes([e.pid, e.tid])
        meta.append((e.name, int(pt[0]), int(pt[1]), e.args.name or "", e.args.sort_index, e.args.labels or ""))

    return ChunkColumns(strings=st.strs, rows=rows, args=sparse, instants=instants, memory=memory, flows=flows,
                        counters=counters, metadata=meta, n_events=n, skipped=skipped, warnings=warnings)


# --- the C scanner (core/trace/_scan.c): the same columns without a Python object per event ------
try:
    from core.trace import _scan
except ImportError:  # not built (no compiler at install time): the msgspec path does all the work
    _scan = None

_DISABLED = False  # tests flip it to compare both paths


def scan_available() -> bool:
    return _scan is not None and not _DISABLED


def scan_columns(buf, a: int, b: int, file_offsets: bool = True) -> ChunkColumns | None:
    """Columns of the events in buf[a:b) (`{...}, {...}`, optionally inside `[` `]`) through the C
    scanner; None when it is not built or the range needs the Python path (anything that is not
    strictly valid JSON of the expected shape: that path handles it exactly as before).
    `file_offsets`: buf is the file's whole JSON text, so event offsets in it are file offsets
    (False for a copy of a chunk: the slices' src_offset stays unknown)."""
    if not scan_available():
        return None
    raw = _scan.scan(buf, a, b, MAX_STRING_BYTES)
    if raw is None:
        return None
    strings: list[str] = raw["strings"]
    n = raw["n"]
    rc, oc = raw["rows"], raw["other"]  # the scanner splits the X/B/E events with a ts from the rest

    def col(name, dtype):  # the other events: instants, flows, counters, metadata, rows without a ts
        return np.frombuffer(oc[name], dtype=dtype)

    def rcol(name, dtype):
        """A column of the rows, in file order: no selection needed. The row columns stay views of the
        scanner's buffers: the merge copies them straight into the merged columns."""
        return np.frombuffer(rc[name], dtype=dtype)

    ph = col("ph", np.int8)
    ts = col("ts", np.int64)  # exact int64 ns, as core.trace.timens reads them
    has_ts = ts != NS_MISSING
    timed = (ph <= PH_INSTANT) | (ph == PH_COUNTER)
    skipped = int((timed & ~has_ts).sum() + (ph == PH_OTHER).sum())  # rows all have a ts and a known phase
    spans = col("spans", np.int64).reshape(-1, 3)
    name, pid, tid = col("name", np.int32), col("pid", np.int64), col("tid", np.int64)

    # --- X / B / E rows ---
    cat = rcol("cat", np.int32)
    kind = _kinds(cat, strings)
    n_rows = len(cat)
    rows = {"ph": rcol("ph", np.int8), "ts": rcol("ts", np.int64), "dur": rcol("dur", np.int64),
            "name": rcol("name", np.int32), "cat": cat, "kind": kind, "pid": rcol("pid", np.int64),
            "tid": rcol("tid", np.int64)}
    sparse: dict[str, tuple] = {}
    picked: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def arg(key: str, kinds: tuple, dtype, src_dtype) -> tuple:
        """(row index, value) pairs; dense (None, values) when most rows are of `kinds`: no index
        column and no copy (with_stack traces: ~97 % of the rows carry the python ids)."""
        if kinds not in picked:
            mask = _kind_mask(kinds)[kind]
            picked[kinds] = (mask, np.flatnonzero(mask).astype(np.int32))
        mask, idx = picked[kinds]
        fill = ARG_FILL[key]
        dense = 2 * len(idx) > n_rows
        vals = rcol(key, src_dtype) if dense else rcol(key, src_dtype)[idx]
        with np.errstate(over="ignore"):  # float32 args beyond range become inf silently, as float_col
            vals = _narrow(vals, dtype) if src_dtype is np.int64 else vals.astype(dtype, copy=False)
        if dense and vals.base is not None:  # still the scanner's buffer: a compact, writable copy
            vals = vals.copy()
        if dense:
            if len(idx) < n_rows:
                vals[~mask] = fill
            return None, vals
        keep = ~np.isnan(vals) if src_dtype is np.float64 else vals != fill
        return idx[keep], vals[keep]

    for key, (dtype, kinds) in INT_ARGS.items():
        sparse[key] = arg(key, kinds, dtype, np.int64)
    for key, (dtype, kinds) in FLOAT_ARGS.items():
        sparse[key] = arg(key, kinds, dtype, np.float64)
    for key, kinds in STR_ARGS.items():
        sparse[key] = arg(key, kinds, np.int32, np.int32)
    # where each event starts in the buffer: the Details panel re-reads the one selected event
    # with every arg (the model keeps only the args rules and panels use)
    if file_offsets:
        sparse["src_offset"] = (None, rcol("offset", np.int64).copy())  # kept per chunk: compact

    # --- instants, [memory] ---
    iidx = np.flatnonzero((ph == PH_INSTANT) & has_ts)
    iname = name[iidx]
    try:
        mem_sid = strings.index("[memory]")
    except ValueError:
        mem_sid = -1
    is_mem = iname == mem_sid
    midx, oidx = iidx[is_mem], iidx[~is_mem]
    memory = {"ts": ts[midx], "pid": pid[midx], "tid": tid[midx]}
    for key, dtype in MEMORY_ARGS.items():
        memory[key] = _narrow(col(key, np.int64)[midx], dtype)
    instants = {"ts": ts[oidx], "name": iname[~is_mem], "pid": pid[oidx], "tid": tid[oidx]}

    # --- flows ---
    fidx = np.flatnonzero((ph >= PH_FLOW_S) & (ph <= PH_FLOW_T) & has_ts)
    flows = {"ph": ph[fidx], "ts": ts[fidx], "id": col("id", np.int64)[fidx], "pid": pid[fidx],
             "tid": tid[fidx], "cat": col("cat", np.int32)[fidx]}

    # --- counters and metadata: few events, free-form args: decoded from their own bytes ---
    st = None
    c_ts, c_series, c_val, meta = [], [], [], []
    mv = memoryview(buf)
    for i, s, e in spans.tolist():
        if ph[i] == PH_COUNTER:
            if not has_ts[i]:
                continue
            # as kineto._fast_counter_args: typed decode, args decoded on their own; args that do not
            # decode (e.g. an out-of-range number the scanner only skipped) are dropped, not fatal
            try:
                raw_args = msgspec.json.decode(mv[s:e], type=CounterEvent).args
                args = msgspec.json.decode(raw_args) if raw_args else None
            except (msgspec.DecodeError, RecursionError):
                continue
            if not isinstance(args, dict):
                continue
            _add_series(args, int(ts[i]), strings[name[i]], c_ts, c_series, c_val)
        else:
            try:
                ev = msgspec.json.decode(mv[s:e], type=Event)
            except (msgspec.DecodeError, RecursionError):
                return None  # let the Python path read this chunk (it has a tolerant decoder)
            meta.append((ev.name, int(pid[i]), int(tid[i]), ev.args.name or "", ev.args.sort_index,
                         ev.args.labels or ""))
    if c_series:
        st = _Strings()
        st.strs = strings
        st.ids = dict(zip(strings, range(len(strings))))
        st.ids[None] = 0
        series = st.col(c_series)
    else:
        series = np.zeros(0, dtype=np.int32)
    counters = {"ts": np.array(c_ts, dtype=np.int64), "series": series,
                "value": np.array(c_val, dtype=np.float64)}
    return ChunkColumns(strings=strings, rows=rows, args=sparse, instants=instants, memory=memory, flows=flows,
                        counters=counters, metadata=meta, n_events=n, skipped=skipped, warnings=[], cut=raw["cut"],
                        from_scanner=True)

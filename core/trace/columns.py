"""One chunk of decoded events -> compact numpy columns + a chunk-local string table.

This is what worker processes run (core.trace.parallel): they return `ChunkColumns` (numpy arrays,
a list of unique strings, a few metadata tuples), never lists of Structs, so little crosses the
process boundary. Columns come out of the Structs with C-level passes
(`np.fromiter(map(attrgetter(field), events))`), and per-kind arg columns are taken only on the
rows of the kinds that carry them and shipped sparse as (row index, value) pairs.

pid / tid / flow ids that are strings ("Spans", "Traces") are encoded as STR_CODE_BASE - string id;
the parent (core.trace.merge) turns them into small negative ids after remapping strings.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

import msgspec
import numpy as np

from core.trace.kineto import CounterEvent, Event, _fast_counter_args
from core.trace import strcap
from core.trace.strcap import CUT_WARNING, MAX_STRING_BYTES, cap_strings, cap_text, is_long, is_unicode
from core.trace.model import CATEGORY_KIND, NONE, Kind

STR_CODE_BASE = -(1 << 60)  # pid/tid/flow-id codes <= this are strings: STR_CODE_BASE - string id

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
    rows: dict[str, np.ndarray]  # X/B/E events: ph, ts, dur, name, cat, kind, pid, tid
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


class _Strings:
    __slots__ = ("strs", "ids")

    def __init__(self) -> None:
        self.strs: list[str] = [""]
        self.ids: dict = {"": 0, None: 0}

    def col(self, values, attr: str | None = None) -> np.ndarray:
        """int32 ids of the strings in `values` (or of attribute `attr` of each item).

        One C-level pass: dict.setdefault hands out provisional ids from a counter (increasing in
        order of first appearance); new strings are then renumbered densely with searchsorted.
        """
        ids, strs = self.ids, self.strs
        n = len(values)
        base, old = len(strs), len(ids)
        it = values if attr is None else map(attrgetter(attr), values)
        raw = np.fromiter(map(ids.setdefault, it, itertools.count(base)), dtype=np.int64, count=n)
        if len(ids) > old:
            new = list(ids)[old:]
            provisional = np.fromiter(map(ids.__getitem__, new), dtype=np.int64, count=len(new))
            ids.update(zip(new, itertools.count(base)))  # dense final ids, in order of first appearance
            strs.extend(new)
            fresh = raw >= base
            raw[fresh] = base + np.searchsorted(provisional, raw[fresh])
        return raw.astype(np.int32)

    def raw_col(self, raws) -> np.ndarray:
        """Ids of msgspec.Raw values, interned as their JSON text.

        One join + decode + split instead of bytes() per value (2-3x faster): \x01 cannot occur in
        JSON text, so it separates the values safely.
        """
        if not len(raws):
            return np.zeros(0, dtype=np.int32)
        texts = b"\x01".join(raws).decode("utf-8", "replace").split("\x01")
        if len(texts) != len(raws):  # pragma: no cover - only for invalid JSON that got through
            texts = [bytes(r).decode("utf-8", "replace") for r in raws]
        return self.col(texts)

    def codes(self, values, attr: str | None = None) -> np.ndarray:
        """int64 column of ints; strings (and oddities) become STR_CODE_BASE - string id."""
        try:
            it = values if attr is None else map(attrgetter(attr), values)
            out = np.fromiter(it, dtype=np.int64, count=len(values))
            odd = np.flatnonzero((out <= -(1 << 59)) | (out >= (1 << 62)))
            for i in odd.tolist():  # ints outside the code range are strings too (as in _code)
                out[i] = self._code(int(out[i]))
            return out
        except (TypeError, ValueError, OverflowError):
            if attr is not None:
                values = list(map(attrgetter(attr), values))
            # rare (a "Spans"/"Traces" pid among ints): only the odd values take the slow path
            return np.fromiter([v if type(v) is int and -(1 << 59) < v < (1 << 62) else self._code(v)
                                for v in values], dtype=np.int64, count=len(values))

    def _code(self, v) -> int:
        if v is None:
            return NONE
        if isinstance(v, int) and not isinstance(v, bool) and -(1 << 59) < v < (1 << 62):
            return v
        return STR_CODE_BASE - int(self.col([str(v)])[0])


_KIND_MASKS: dict[tuple, np.ndarray] = {}


def as_sparse(name: str, arg: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(row index, value) pairs of an arg column that may be dense (see ARG_FILL)."""
    idx, vals = arg
    if idx is not None:
        return idx, vals
    if hasattr(vals, "concat"):  # merge.DenseParts
        vals = vals.concat()
    keep = ~np.isnan(vals) if name in FLOAT_ARGS else vals != ARG_FILL[name]
    return np.flatnonzero(keep).astype(np.int32), vals[keep]


def _kind_mask(kinds: tuple) -> np.ndarray:
    """bool lookup table over kind codes: True for `kinds` (cheaper than np.isin per piece)."""
    mask = _KIND_MASKS.get(kinds)
    if mask is None:
        mask = _KIND_MASKS[kinds] = np.zeros(256, dtype=bool)
        mask[np.asarray(kinds, dtype=np.int64)] = True
    return mask


def _pick(seq, idx: np.ndarray):
    if len(idx) == len(seq):
        return seq
    if len(idx) == 0:
        return ()
    if len(idx) == 1:
        return (seq[int(idx[0])],)
    return itemgetter(*idx.tolist())(seq)


def _int_via_float(values: list, missing: int) -> np.ndarray | None:
    """None -> missing through a float64 array (C speed); None if a value is not exact in float64."""
    try:
        f = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    nan = np.isnan(f)
    if np.abs(np.where(nan, 0.0, f)).max(initial=0.0) >= 2.0 ** 53:
        return None
    f[nan] = missing
    return f.astype(np.int64)


def int_col(values, dtype=np.int64, missing: int = NONE, attr: str | None = None) -> np.ndarray:
    """int column of `values` (or of attribute `attr` of each item); None/odd values -> missing."""
    out = None
    try:
        it = values if attr is None else map(attrgetter(attr), values)
        out = np.fromiter(it, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):  # JSON null or a huge number
        if attr is not None:
            values = list(map(attrgetter(attr), values))
        out = _int_via_float(values, missing)
    if out is None:
        out = np.fromiter((missing if not isinstance(v, int) or abs(v) >= (1 << 63) else v for v in values),
                          dtype=np.int64, count=len(values))
    if dtype is not np.int64:
        info = np.iinfo(dtype)
        out = np.clip(out, info.min, info.max)
    return out.astype(dtype, copy=False)


def float_col(values, dtype=np.float64, attr: str | None = None) -> np.ndarray:
    """float column of `values` (or of attribute `attr` of each item); None -> NaN."""
    try:
        it = values if attr is None else map(attrgetter(attr), values)
        col = np.fromiter(it, dtype=np.float64, count=len(values))
    except (TypeError, ValueError):
        if attr is not None:
            values = list(map(attrgetter(attr), values))
        col = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    with np.errstate(over="ignore"):  # 1e300 in a float32 column is inf, silently (as on the scanner path)
        return col.astype(dtype, copy=False)


def _kinds(cat: np.ndarray, strings: list[str]) -> np.ndarray:
    """Kind of each row from its category string id (one lookup per distinct category)."""
    lut = np.zeros(len(strings), dtype=np.int8)
    for sid in np.flatnonzero(np.bincount(cat, minlength=len(strings))).tolist():
        lut[sid] = CATEGORY_KIND.get(strings[sid], Kind.OTHER)
    return lut[cat]


def _add_series(args: dict | None, ts: float, name: str, c_ts: list, c_series: list, c_val: list) -> None:
    """A counter event ("C"): every numeric arg is one sample of series "<name>/<arg key>"."""
    for key, v in (args or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            c_ts.append(ts)
            c_series.append(f"{name}/{key}")
            c_val.append(float(v))


def events_to_columns(events: list[Event], counter_args: dict[int, dict] | None, warnings: list[str],
                      chunk=None, st: _Strings | None = None) -> ChunkColumns:
    """Columns of decoded events. counter_args None: decode them from `chunk` if there are any.
    `st`: the string table to add to (shared by the pieces of one chunk, core.trace.pieces)."""
    st = _Strings() if st is None else st
    n = len(events)
    ph = np.fromiter(map(_PH.__getitem__, map(attrgetter("ph"), events)), dtype=np.int8, count=n)
    ts = float_col(events, attr="ts")
    has_ts = ~np.isnan(ts)
    timed = (ph <= PH_INSTANT) | (ph == PH_COUNTER)
    skipped = int((timed & ~has_ts).sum() + (ph == PH_OTHER).sum())

    # --- X / B / E rows -------------------------------------------------------------------------
    ridx = np.flatnonzero((ph <= PH_E) & has_ts)
    rev = _pick(events, ridx)
    cat = st.col(rev, "cat")
    kind = _kinds(cat, st.strs)
    rows = {
        "ph": ph[ridx], "ts": ts[ridx], "dur": float_col(rev, attr="dur"),
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
        e = events[i]
        _add_series(counter_args.get(i), e.ts, e.name, c_ts, c_series, c_val)
    counters = {"ts": np.array(c_ts, dtype=np.float64), "series": st.col(c_series),
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
    ts = col("ts", np.float64)
    has_ts = ~np.isnan(ts)
    timed = (ph <= PH_INSTANT) | (ph == PH_COUNTER)
    skipped = int((timed & ~has_ts).sum() + (ph == PH_OTHER).sum())  # rows all have a ts and a known phase
    spans = col("spans", np.int64).reshape(-1, 3)
    name, pid, tid = col("name", np.int32), col("pid", np.int64), col("tid", np.int64)

    # --- X / B / E rows ---
    cat = rcol("cat", np.int32)
    kind = _kinds(cat, strings)
    n_rows = len(cat)
    rows = {"ph": rcol("ph", np.int8), "ts": rcol("ts", np.float64), "dur": rcol("dur", np.float64),
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
            _add_series(args, float(ts[i]), strings[name[i]], c_ts, c_series, c_val)
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
    counters = {"ts": np.array(c_ts, dtype=np.float64), "series": series,
                "value": np.array(c_val, dtype=np.float64)}
    return ChunkColumns(strings=strings, rows=rows, args=sparse, instants=instants, memory=memory, flows=flows,
                        counters=counters, metadata=meta, n_events=n, skipped=skipped, warnings=[], cut=raw["cut"],
                        from_scanner=True)


def _narrow(vals: np.ndarray, dtype) -> np.ndarray:
    """int64 -> dtype, clipped like int_col."""
    if dtype is np.int64:
        return vals
    info = np.iinfo(dtype)
    return np.clip(vals, info.min, info.max).astype(dtype)

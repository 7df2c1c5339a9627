"""Python values -> numpy columns: the chunk-local string table and the int/float converters.

Shared by both decode paths of core.trace.columns (the msgspec path converts Structs with C-level
passes; the scanner path narrows its int64 columns) and by core.trace.pieces. `STR_CODE_BASE`: pid /
tid / flow ids that are strings ("Spans", "Traces") are encoded as STR_CODE_BASE - string id.
"""
from __future__ import annotations

import itertools
from operator import attrgetter, itemgetter

import numpy as np

from core.trace.model import CATEGORY_KIND, NONE, Kind

STR_CODE_BASE = -(1 << 60)  # pid/tid/flow-id codes <= this are strings: STR_CODE_BASE - string id



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


def _add_series(args: dict | None, ts: int, name: str, c_ts: list, c_series: list, c_val: list) -> None:
    """A counter event ("C"): every numeric arg is one sample of series "<name>/<arg key>"."""
    for key, v in (args or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            c_ts.append(ts)
            c_series.append(f"{name}/{key}")
            c_val.append(float(v))


def _narrow(vals: np.ndarray, dtype) -> np.ndarray:
    """int64 -> dtype, clipped like int_col."""
    if dtype is np.int64:
        return vals
    info = np.iinfo(dtype)
    return np.clip(vals, info.min, info.max).astype(dtype)

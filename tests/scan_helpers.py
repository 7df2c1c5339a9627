"""The scanner's columns and the msgspec path's side by side, in one comparable form (tests/core/trace/test_scan*.py)."""
from __future__ import annotations

import math

from core.trace import columns
from core.trace.columns import STR_CODE_BASE, events_to_columns, scan_columns
from core.trace.tolerant import decode_events


def _canon(cc):
    """ChunkColumns with string ids and string codes replaced by the strings themselves."""
    s = cc.strings

    def strs(ids):
        return [s[int(i)] for i in ids]

    def codes(v):
        return [("str", s[STR_CODE_BASE - int(x)]) if x <= STR_CODE_BASE else int(x) for x in v]

    out = {}
    for table in ("rows", "instants", "memory", "flows", "counters"):
        for k, v in getattr(cc, table).items():
            if k in ("name", "cat", "series"):
                out[f"{table}.{k}"] = strs(v)
            elif k in ("pid", "tid", "id"):
                out[f"{table}.{k}"] = codes(v)
            else:
                out[f"{table}.{k}"] = (str(v.dtype), [("nan",) if isinstance(x, float) and math.isnan(x) else x
                                                      for x in v.tolist()])
    for k, arg in cc.args.items():
        idx, vals = columns.as_sparse(k, arg)  # the scanner ships mostly-present args dense
        if k == "src_offset":  # the scanner's only (checked in test_edge_cases_match_the_python_path)
            continue
        out[f"args.{k}"] = (idx.tolist(), strs(vals) if k in columns.STR_ARGS else
                            [("nan",) if isinstance(x, float) and math.isnan(x) else x for x in vals.tolist()],
                            str(vals.dtype))
    out["metadata"] = [(m[0], *codes(m[1:3]), *m[3:]) for m in cc.metadata]
    out["n"] = (cc.n_events, cc.skipped, cc.warnings)
    return out


def _both(events_text: bytes):
    chunk = b"[" + events_text + b"]"
    events, cargs, warnings = decode_events(chunk, last=True)
    slow = events_to_columns(events, cargs, warnings, chunk)
    fast = scan_columns(chunk, 0, len(chunk))
    return fast, slow

"""Events with impossible times (NaN / Infinity / 1e300 µs, or days away from the rest) are dropped
before the model is built, with one counted warning: they would otherwise overflow the int64 ns
columns or stretch the timeline to nothing. Same for the header's baseTimeNanoseconds."""
from __future__ import annotations

import math

import numpy as np

from core.trace.limits import limits
from core.trace.merge import Merged, values

_SIDE_TABLES = ("instants", "memory", "flows", "counters")


def drop_bad_times(m: Merged, warnings: list[str]) -> None:
    """Remove, in place, rows and side-table events whose ts is not finite or lies more than
    max_span_us from the median ts, and rows whose dur is infinite or longer than max_span_us."""
    span_us = float(limits()["time"]["max_span_us"])
    abs_us = float(limits()["time"]["max_abs_us"])
    ts_all = [t for t in (m.rows["ts"], *(getattr(m, k).get("ts", np.zeros(0)) for k in _SIDE_TABLES)) if len(t)]
    if not ts_all:
        return
    with np.errstate(invalid="ignore"):  # the common case, a few ms on 3M rows: nothing to drop
        lo, hi = min(float(t.min()) for t in ts_all), max(float(t.max()) for t in ts_all)
        longest = float(np.nanmax(m.rows["dur"])) if len(m.rows["dur"]) and not np.isnan(m.rows["dur"]).all() else 0.0
    if math.isfinite(lo) and math.isfinite(hi) and hi - lo <= span_us and longest <= span_us \
            and max(abs(lo), abs(hi)) <= abs_us:
        return
    finite = [t[np.isfinite(t) & (np.abs(t) <= abs_us)] for t in ts_all]
    finite = [t for t in finite if len(t)]
    ref = float(np.median(np.concatenate(finite))) if finite else 0.0
    dropped = 0
    with np.errstate(invalid="ignore", over="ignore"):
        ts, dur = m.rows["ts"], m.rows["dur"]
        keep = np.isfinite(ts) & (np.abs(ts - ref) <= span_us) & (np.abs(ts) <= abs_us) & ~(dur > span_us) \
            & ~np.isinf(dur)
        if not keep.all():
            dropped += int((~keep).sum())
            _filter_rows(m, keep)
        for table in _SIDE_TABLES:
            cols = getattr(m, table)
            t = cols.get("ts")
            if t is None or not len(t):
                continue
            ok = np.isfinite(t) & (np.abs(t - ref) <= span_us) & (np.abs(t) <= abs_us)
            if not ok.all():
                dropped += int((~ok).sum())
                for k in list(cols):
                    cols[k] = cols[k][ok]
    if dropped:
        warnings.append(f"{dropped:,} events with impossible times (NaN, Infinity, past the year 2096 or more "
                        f"than {span_us / 86400e6:g} days from the rest) were dropped")


def _filter_rows(m: Merged, keep: np.ndarray) -> None:
    for k in list(m.rows):
        m.rows[k] = m.rows[k][keep]
    new_index = np.cumsum(keep) - 1
    for k, (idx, val) in list(m.args.items()):
        if idx is None:  # a dense arg column (merge.Merged): one value per row
            m.args[k] = (None, values(val)[keep])
            continue
        ok = keep[idx]
        m.args[k] = (new_index[idx[ok]].astype(idx.dtype), val[ok])


def base_time_ns(value, warnings: list[str]) -> int | None:
    """The header's baseTimeNanoseconds when it is a plausible wall-clock time, else None (warned)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        warnings.append("baseTimeNanoseconds is not a number: wall-clock times are unknown")
        return None
    if isinstance(value, float) and not math.isfinite(value) or not 0 < value < 2**62:
        if value != 0:
            warnings.append(f"baseTimeNanoseconds {str(value)[:32]} is not a plausible time: ignored")
        return None
    return int(value)


def wall_clock_ns(value: int, warnings: list[str]) -> int:
    """The trace start as wall-clock ns when it is representable (0 <= value < 2^62), else 0 (unknown)."""
    if 0 <= value < 2**62:
        return value
    warnings.append("the trace's times are not plausible wall-clock times: its start is unknown")
    return 0

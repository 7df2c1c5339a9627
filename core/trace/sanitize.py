"""Events with impossible times (NaN / Infinity / 1e300 µs, or days away from the rest) are dropped
before the model is built, with one counted warning: they would otherwise overflow the int64 ns
columns or stretch the timeline to nothing. Same for the header's baseTimeNanoseconds."""
from __future__ import annotations

import math

import numpy as np

from core.trace.limits import limits
from core.trace.merge import Merged, values
from core.trace.timens import NS_LOW

_SIDE_TABLES = ("instants", "memory", "flows", "counters")


def drop_bad_times(m: Merged, warnings: list[str]) -> None:
    """Remove, in place, rows and side-table events whose ts lies beyond max_abs_us or more than max_span_us
    from the median ts, and rows whose dur is longer than max_span_us or was read as beyond +-2^62 ns.
    Times are int64 ns (core.trace.timens): 1e300 / Infinity µs arrive as NS_HIGH / NS_LOW."""
    span = int(limits()["time"]["max_span_us"]) * 1000
    abs_ns = int(limits()["time"]["max_abs_us"]) * 1000
    ts_all = [t for t in (m.rows["ts"], *(getattr(m, k).get("ts", np.zeros(0, np.int64)) for k in _SIDE_TABLES))
              if len(t)]
    if not ts_all:
        return
    lo, hi = min(int(t.min()) for t in ts_all), max(int(t.max()) for t in ts_all)  # the common case: a few ms
    dur = m.rows["dur"]
    longest = int(dur.max()) if len(dur) else 0
    low_dur = len(dur) and int(dur.min()) <= NS_LOW and bool((dur == NS_LOW).any())  # (NS_MISSING is lower)
    if hi - lo <= span and longest <= span and not low_dur and max(abs(lo), abs(hi)) <= abs_ns:
        return

    def plausible(t: np.ndarray) -> np.ndarray:
        return (t >= -abs_ns) & (t <= abs_ns)

    held = [t[plausible(t)] for t in ts_all]
    held = [t for t in held if len(t)]
    ref = int(np.median(np.concatenate(held))) if held else 0
    dropped = 0

    def near(t: np.ndarray) -> np.ndarray:
        ok = plausible(t)
        return ok & (np.abs(np.where(ok, t, ref) - ref) <= span)  # |t|, |ref| <= 4e18: no int64 wrap

    ts = m.rows["ts"]
    keep = near(ts) & (dur <= span) & (dur != NS_LOW)
    if not keep.all():
        dropped += int((~keep).sum())
        _filter_rows(m, keep)
    for table in _SIDE_TABLES:
        cols = getattr(m, table)
        t = cols.get("ts")
        if t is None or not len(t):
            continue
        ok = near(t)
        if not ok.all():
            dropped += int((~ok).sum())
            for k in list(cols):
                cols[k] = cols[k][ok]
    if dropped:
        warnings.append(f"{dropped:,} events with impossible times (NaN, Infinity, past the year 2096 or more "
                        f"than {span / 86400e9:g} days from the rest) were dropped")


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

"""A host whose wall clock is off by PTPROF_TEST_SKEW_S seconds (time.time / time.time_ns only)."""
import os
import time

_SKEW = float(os.environ.get("PTPROF_TEST_SKEW_S") or 0)
if _SKEW:
    _time_ns, _time = time.time_ns, time.time
    time.time_ns = lambda: _time_ns() + int(_SKEW * 1e9)
    time.time = lambda: _time() + _SKEW

"""How many ranks may be mapped at once: a memory budget, so a run of big ranks does not put every worker's
peak on the machine at the same moment.

A rank's map peaks at about PEAK_PER_INFLATED_BYTE x its JSON (the inflated text, the scanner's columns,
the model, the rules' temporaries: a 833 MB rank peaked at 1.5-1.8 GB in a worker). The pool admits a task
while the estimates in flight stay within the budget (always one at least): small ranks run one per worker,
ranks the size of gpu_big_stack one at a time on a 24 GB machine. Budget: PTPROF_MAP_MEMORY_BYTES, else an
eighth of the machine's memory, at most half of what is available now, at least 1.5 GB.
"""
from __future__ import annotations

import os

PEAK_PER_INFLATED_BYTE = 2.0
FLOOR = 3 << 29  # 1.5 GiB


def total_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def budget_bytes() -> int:
    raw = os.environ.get("PTPROF_MAP_MEMORY_BYTES", "").strip()
    if raw:
        try:
            return max(1, int(float(raw)))
        except ValueError:
            pass
    from core.trace.limits import _mem_available_bytes
    total, avail = total_memory(), _mem_available_bytes()
    b = total // 8 if total else FLOOR
    if avail:
        b = min(b, avail // 2)
    return max(b, FLOOR)


def estimate_peak(path: str) -> int:
    """A rank's map peak from its file: the inflated size (gzip trailer, ratio floors: gui.load_process's
    rule, here without Qt) x PEAK_PER_INFLATED_BYTE."""
    from pathlib import Path
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError:
        return 0
    name = p.name.lower()
    if name.endswith((".gz", ".gzip")):
        from core.trace.io import isize
        inflated = max(isize(p) or 0, 8 * size)
    elif name.endswith(".xz"):
        inflated = 16 * size
    else:
        inflated = size
    return int(inflated * PEAK_PER_INFLATED_BYTE)

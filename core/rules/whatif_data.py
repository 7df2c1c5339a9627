"""DataLoader throughput for the what-ifs (issue 28): how many workers the run had, how many cores it may use,
and the period at which the loop gets batches after the loader's fix.

The workers' throughput is not in the trace (they are other processes); the bundle says it: the runner's
`loader_schedule` notice carries `workers` (num_workers of the deepest DataLoader), run.json
`environment.cpus` the CPUs the script may run on. The fix's worker count: num_workers=0 -> min(8, cpus - 1);
N workers -> min(max(8, 2N), cpus - 1) (one core stays with the training loop). A batch takes
L = W x the window's mean step with W workers (each worker delivers one batch per round), or the in-process
`__next__` time with none; after the fix the loop gets one every L / W' (never faster than its own step).
H100 pairs (tests/data/device/pairs2): num_workers 0 -> 6 measured 131.7 ms saved, 2 -> 8 177.2 ms.
"""
from __future__ import annotations

import numpy as np

from core.analysis.critical_path import replay_input
from core.analysis.intervals import Intervals
from core.analysis.loader_facts import bundle_loader_facts
from core.analysis.rows import named_rows_matching
from core.trace import event_names
from core.trace.model import Kind, TraceModel

TARGET_WORKERS = 8


def fix_workers(workers: int, cpus: int | None) -> int:
    want = TARGET_WORKERS if workers <= 0 else max(TARGET_WORKERS, 2 * workers)
    return max(1, min(want, cpus - 1)) if cpus and cpus > 1 else want


def _next_rows(model: TraceModel) -> np.ndarray:
    return named_rows_matching(model, event_names.is_dataloader_next,
                               [Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON])


def period_after_fix(model: TraceModel, path: str | None) -> tuple[float | None, str]:
    """(ns between batches once the loader is fixed, how it was derived)."""
    t = replay_input(model).times
    rows = _next_rows(model)
    if not len(t) or t.synthetic or not len(rows):
        return None, ""
    s = model.slices
    single = any("_SingleProcessDataLoaderIter" in model.name(int(r)) for r in rows[:5])
    workers, cpus = bundle_loader_facts(path)
    if single:
        loading = Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])
        load = float(np.mean(loading.covered(t.cpu_t0_ns, t.cpu_t1_ns)))
        w_new = fix_workers(0, cpus)
        return load / w_new, (f"a batch takes {load / 1e6:.2f} ms to load in the loop; num_workers={w_new} "
                              f"({'cores unknown' if not cpus else f'{cpus} CPUs'}) deliver one every "
                              f"{load / w_new / 1e6:.2f} ms")
    w = workers or 2
    w_new = fix_workers(w, cpus)
    from core.analysis.unprofiled import data_period_ns
    period = data_period_ns(model) or float(np.mean(t.effective_ns))
    load = period * w
    return load / w_new, (f"{w}{'' if workers else ' (assumed)'} workers deliver a batch every {period / 1e6:.2f} ms "
                          f"(over a round of the workers); num_workers={w_new} "
                          f"({'cores unknown' if not cpus else f'{cpus} CPUs'}): every {load / w_new / 1e6:.2f} ms")

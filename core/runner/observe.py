"""What the script sets up, seen from inside (user's interpreter: stdlib + torch; Python 3.9): the autocast
devices (trace metadata), the CPUs it may use, the CUPTI teardown, and the DataLoader prefetch depth for the
default schedule.

DataLoader:

A DataLoader with workers starts prefetching `num_workers x prefetch_factor` batches when its iterator is
created, while the script still sets up (model build, CUDA start, the first step's autotune). The first steps
are then served from that queue: on pytorch/examples imagenet (`-j 4 --dummy`, H100) the recorded steps took
31.5 ms where the loop runs 107 ms/step once the queue has drained. So when an iterator with workers exists at
the first step, the window waits until that queue has drained (twice its depth: the workers refill it while
it drains) and records at least one batch of every worker (a starved loader stalls once per round of the
workers: a shorter window sees no stall or only stalls).
"""
from __future__ import annotations

import os

MAX_WAIT = 64  # steps: a deeper queue still gets its window
MAX_ACTIVE = 16


class LoaderWatch:
    def __init__(self) -> None:
        self.queue = 0  # deepest num_workers x prefetch_factor of the iterators seen
        self.workers = 0
        self.moved = ""  # the notice when the schedule was changed
        self._frozen = None

    def install(self, torch) -> None:
        try:
            cls = torch.utils.data.DataLoader
        except AttributeError:
            return
        original = cls.__iter__
        watch = self

        def __iter__(dl_self):
            try:
                nw = int(getattr(dl_self, "num_workers", 0) or 0)
                if nw > 0:
                    pf = getattr(dl_self, "prefetch_factor", None)
                    watch.seen(nw, int(pf) if pf else 2)
            except Exception:
                pass
            return original(dl_self)
        cls.__iter__ = __iter__

    def notice(self) -> dict:
        return {"message": self.moved, "workers": self.workers, "queue": self.queue}

    def seen(self, workers: int, prefetch: int) -> None:
        self.workers = max(self.workers, workers)
        self.queue = max(self.queue, workers * prefetch)

    def schedule(self, wait: int, warmup: int, active: int, repeat: int):
        """The schedule of the first profiler, fixed at its first call (the profiler is made once)."""
        if self._frozen is None:
            w, a = wait, active
            if self.queue:
                w = max(wait, min(2 * self.queue, MAX_WAIT))
                # whole rounds of the workers: a starved loader stalls once per round
                a = max(active, min(-(-active // self.workers) * self.workers, MAX_ACTIVE))
            if (w, a) != (wait, active):
                self.moved = (f"DataLoader with {self.workers} workers x {self.queue // max(self.workers, 1)} "
                              f"prefetched batches: the window starts after {w} steps (the prefetched batches "
                              f"used up) and records {a} steps (a batch of every worker)")
            self._frozen = (w, warmup, a, repeat)
        return self._frozen


def patch_autocast(torch, seen: set) -> None:
    """Record each autocast context's device:dtype when entered (trace metadata `ptprof.autocast`)."""
    cls = getattr(getattr(torch, "amp", None), "autocast", None) or torch.autocast
    original = cls.__enter__

    def __enter__(ac_self):
        seen.add(str(getattr(ac_self, "device", "?")) + ":" + str(getattr(ac_self, "fast_dtype", "")))
        return original(ac_self)
    cls.__enter__ = __enter__


def cpus() -> int:
    """CPUs this process may run on (DataLoader workers share them)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cupti_teardown(repeat: int) -> None:
    """Kineto leaves CUPTI attached after the profiler stops unless TEARDOWN_CUPTI=1: every later step of the
    script ran 1.15-1.3x slower on the H100 pairs (tests/data/device/pairs2). Set before `import torch`, for
    one cycle only: a CUPTI re-init after a teardown can crash with CUDA graphs (torch/_inductor's FIXME)."""
    if repeat == 1 and "TEARDOWN_CUPTI" not in os.environ:
        os.environ["TEARDOWN_CUPTI"] = "1"

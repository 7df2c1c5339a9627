"""GPU sampler thread: polls a GpuBackend at a fixed rate into one RingBuffer per GPU and nvml.csv.

nvml.csv columns: t_unix_ns,gpu,<backend.COLUMNS> (blank = not supported), which
core/trace/extras.py reads as counter series "gpu<N>/<column>" aligned by wall clock.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.gpu.backend import COLUMNS, GpuBackend
from core.gpu.ring import RingBuffer

log = logging.getLogger(__name__)
CSV_HEADER = "t_unix_ns,gpu," + ",".join(COLUMNS) + "\n"
SLOW_EVERY_S = 1.0  # PCIe throughput and per-process memory (costly NVML calls) at most once a second


class Sampler:
    def __init__(self, backend: GpuBackend, rate_hz: float = 10.0, history_s: float = 600.0,
                 csv_path: str | Path | None = None, pids: Callable[[], set[int]] | None = None):
        self.backend = backend
        self.interval_s = 1.0 / rate_hz
        self.capacity = max(16, int(history_s * rate_hz))
        self.csv_path = Path(csv_path) if csv_path else None
        self._pids = pids
        self.rings: dict[int, RingBuffer] = {}
        self.names = backend.device_names() if backend.available else []
        for i, _ in enumerate(self.names):
            self.rings[i] = RingBuffer(self.capacity, len(COLUMNS))
        self.samples = 0
        self.busy_s = 0.0  # CPU time of the sampler thread (sampling + csv): its cost
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fh = None

    @property
    def available(self) -> bool:
        return bool(self.backend.available and self.rings)

    @property
    def reason(self) -> str:
        return self.backend.reason if not self.backend.available else ("" if self.rings else "no GPU")

    def start(self) -> "Sampler":
        if not self.available:
            return self
        if self.csv_path is not None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            self._fh = open(os.open(self.csv_path, flags, 0o644), "w", buffering=1 << 16)  # never through a link
            self._fh.write(CSV_HEADER)
        self._thread = threading.Thread(target=self._loop, name="ptprof-gpu-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _loop(self) -> None:
        next_t = time.monotonic()
        last_slow = -math.inf
        last_flush = time.monotonic()
        while not self._stop.is_set():
            t_start = time.monotonic()
            cpu0 = time.thread_time()
            slow = t_start - last_slow >= SLOW_EVERY_S
            if slow:
                last_slow = t_start
            self.sample_once(slow)
            if self._fh is not None and t_start - last_flush > 1.0:
                self._fh.flush()
                last_flush = t_start
            self.busy_s += time.thread_time() - cpu0
            next_t += self.interval_s
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind (slow NVML): skip ticks instead of bursting
                next_t = time.monotonic()
                delay = 0
            self._stop.wait(delay)

    def sample_once(self, slow: bool = False) -> None:
        pids = None
        if slow and self._pids is not None:
            try:
                pids = self._pids()
            except Exception:
                pids = None
        try:
            rows = self.backend.sample(pids, slow)
        except Exception as exc:  # a flaky driver must not kill the run's monitoring
            self.errors += 1
            if self.errors <= 3:
                log.warning("GPU sampling failed: %s", exc)
            return
        t_ns = time.time_ns()
        self.samples += 1
        for gpu, values in rows:
            ring = self.rings.get(gpu)
            if ring is not None:
                ring.append(t_ns, values)
            if self._fh is not None:
                self._fh.write(f"{t_ns},{gpu}," + ",".join("" if v != v else f"{v:g}" for v in values) + "\n")

    def cpu_fraction(self, wall_s: float) -> float:
        """Share of one core spent sampling over `wall_s` seconds."""
        return self.busy_s / wall_s if wall_s > 0 else 0.0


def group_pids(pgid: int, running_only: bool = False) -> set[int]:
    """PIDs of a process group (Linux /proc); the run's processes for per-process GPU memory.

    running_only: skip zombies (exited, not yet reaped)."""
    out = set()
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and not (running_only and fields[0] == "Z"):
            out.add(int(d.name))
    return out

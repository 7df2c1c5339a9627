"""MirrorSampler: the live GPU rings of a remote run, fed from the nvml.csv bytes the follower receives.

It stands where core.gpu.sampler.Sampler stands for a local run (the live panel and the status line read
`available`, `reason`, `names`, `rings`), but samples nothing itself: the host's nvidia-smi does, and
each row arrives through the SSH stream. The rows of nvml.csv carry the host's wall clock (as the bundle
keeps them); the rings hold them on this desktop's clock (`clock_offset_ns`, desktop - host, measured at
connect: RemoteSession), so the live plot never mixes the two clocks. `latencies_ns` keeps, per row, the
time from the sample's stamp to its arrival here: the live plot's per-sample latency.
"""
from __future__ import annotations

import collections
import math
import threading
import time

from core.gpu.backend import COLUMNS
from core.gpu.ring import RingBuffer

NAN = float("nan")


class MirrorSampler:
    def __init__(self, names: list[str], reason: str, rate_hz: float = 10.0, history_s: float = 600.0,
                 clock_offset_ns: int = 0):
        self.names = list(names)
        self.clock_offset_ns = clock_offset_ns
        self._reason = reason
        capacity = max(16, int(history_s * rate_hz))
        self.rings = {i: RingBuffer(capacity, len(COLUMNS)) for i in range(len(self.names))}
        self.samples = 0
        self.bad_rows = 0
        self.latencies_ns: collections.deque = collections.deque(maxlen=10_000)
        self._partial = b""
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return bool(self.rings)

    @property
    def reason(self) -> str:
        return "" if self.rings else (self._reason or "no GPU telemetry on this host")

    def feed(self, data: bytes) -> None:
        """New bytes of the host's nvml.csv (any cut); complete rows go into the rings."""
        with self._lock:
            lines = (self._partial + data).split(b"\n")
            self._partial = lines.pop()[-4096:]
        now = time.time_ns()
        for line in lines:
            row = self.parse(line)
            if row is None:
                continue
            t_ns, gpu, values = row
            t_ns += self.clock_offset_ns  # the host's stamp on this desktop's clock
            ring = self.rings.get(gpu)
            if ring is None:
                self.bad_rows += 1
                continue
            ring.append(t_ns, values)
            self.samples += 1
            self.latencies_ns.append(now - t_ns)

    def parse(self, line: bytes):
        cells = line.decode("ascii", "replace").strip().split(",")
        if len(cells) != 2 + len(COLUMNS) or not cells[0].isdigit() or len(cells[0]) > 19 \
                or not cells[1].isdigit() or len(cells[1]) > 4:
            if cells and cells[0] != "t_unix_ns":
                self.bad_rows += 1
            return None
        values = []
        for cell in cells[2:]:
            try:
                v = float(cell) if cell else NAN
            except ValueError:
                v = NAN
            values.append(v if math.isfinite(v) else NAN)
        return int(cells[0]), int(cells[1]), tuple(values)

    def stop(self) -> None:
        pass

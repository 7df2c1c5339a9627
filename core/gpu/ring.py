"""Fixed-size numpy ring buffer of timed sample rows; one writer thread, readers take snapshots."""
from __future__ import annotations

import threading

import numpy as np


class RingBuffer:
    def __init__(self, capacity: int, n_cols: int):
        if capacity < 1 or n_cols < 1:
            raise ValueError("capacity and n_cols must be >= 1")
        self.capacity = capacity
        self._t = np.zeros(capacity, dtype=np.int64)
        self._v = np.full((capacity, n_cols), np.nan, dtype=np.float64)
        self._n = 0  # rows ever written
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return min(self._n, self.capacity)

    @property
    def total(self) -> int:
        """Rows ever appended (a reader can tell whether anything new arrived)."""
        return self._n

    def append(self, t_ns: int, row) -> None:
        with self._lock:
            i = self._n % self.capacity
            self._t[i] = t_ns
            self._v[i] = row
            self._n += 1

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns[n], values[n, n_cols]) oldest first; copies, safe to keep."""
        with self._lock:
            n, cap = self._n, self.capacity
            if n <= cap:
                return self._t[:n].copy(), self._v[:n].copy()
            i = n % cap
            return np.concatenate((self._t[i:], self._t[:i])), np.concatenate((self._v[i:], self._v[:i]))

    def last(self) -> tuple[int, np.ndarray] | None:
        with self._lock:
            if self._n == 0:
                return None
            i = (self._n - 1) % self.capacity
            return int(self._t[i]), self._v[i].copy()

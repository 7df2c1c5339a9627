"""Running a progress generator to its end: each long operation is a generator (`iter_load`, `iter_write_report`,
`iter_snapshot_report`, `iter_analyze_set`) that yields progress for the window and returns its result; its
plain twin for the CLI and the API is `result_of(iter_x(...))`."""
from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

R = TypeVar("R")


def result_of(gen: Generator[object, None, R]) -> R:
    """What `gen` returns, its progress dropped."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value

"""The cache's packed entry file (columns.bin): every column's bytes in one file at 8-aligned offsets, and
its read-only memory map (core/trace/cache.py decides when an entry is packed and when it is mapped)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from core.trace.cache_check import packed_dtype


def map_packed(path: Path, max_bytes: int):
    """The packed file memory-mapped read-only (a regular file only, never a link, never blocking); the
    descriptor is closed at once (the mapping keeps its own)."""
    import mmap
    import stat as stat_
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat_.S_ISREG(st.st_mode) or st.st_size > max_bytes or st.st_size == 0:
            raise ValueError(f"{path.name}: not a regular file of the packed size")
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


ALIGN = 8


def write_packed(path: Path, files: dict[str, np.ndarray]) -> dict[str, list[int]]:
    """Every column's bytes in one file, each at an offset aligned to 8; returns {stem: [offset, count]}
    (the dtype of each is the schema's: cache_check.packed_dtype)."""
    layout: dict[str, list[int]] = {}
    offset = 0
    with open(path, "wb") as fh:
        for stem, arr in files.items():
            if arr.dtype != packed_dtype(stem):  # the reader takes the schema's: never reinterpret bytes
                raise ValueError(f"{stem}: dtype {arr.dtype}, the cache schema says {packed_dtype(stem)}")
            data = np.ascontiguousarray(arr)
            layout[stem] = [offset, len(arr)]
            if data.nbytes:
                fh.write(memoryview(data).cast("B"))  # no bytes copy of a big column
            pad = -data.nbytes % ALIGN
            fh.write(b"\0" * pad)
            offset += data.nbytes + pad
    return layout

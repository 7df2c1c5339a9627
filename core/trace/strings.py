"""String interning: every name, category and raw arg text is stored once; id 0 is ""."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from core.trace import shared_match


class StringTable:
    """Append-only pool of strings with dense int32 ids (Perfetto's StringPool)."""

    __slots__ = ("_strings", "_ids", "_gids")

    def __init__(self, strings: Iterable[str] = ("",)) -> None:
        self._strings: list[str] = list(strings)
        if not self._strings or self._strings[0] != "":
            self._strings.insert(0, "")
        self._ids: dict[str, int] = {s: i for i, s in enumerate(self._strings)}
        self._gids = None  # this table's ids in the process-wide string set (core/trace/shared_match.py)

    def __getstate__(self):
        return self._strings  # never the process-wide ids: they mean nothing in another process

    def __setstate__(self, strings) -> None:
        self._strings = list(strings)
        self._ids = {s: i for i, s in enumerate(self._strings)}
        self._gids = None

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, sid: int) -> str:
        return self._strings[int(sid)]

    def intern(self, s: str | None) -> int:
        if not s:
            return 0
        sid = self._ids.get(s)
        if sid is None:
            sid = len(self._strings)
            self._strings.append(s)
            self._ids[s] = sid
        return sid

    def intern_many(self, values: Iterable[str | None]) -> np.ndarray:
        ids = self._ids
        strings = self._strings
        out = []
        append = out.append
        for s in values:
            sid = ids.get(s) if s else 0
            if sid is None:
                sid = len(strings)
                strings.append(s)
                ids[s] = sid
            append(sid)
        return np.asarray(out, dtype=np.int32)

    def find(self, s: str) -> int:
        """Id of `s`, or -1 when it was never interned."""
        return self._ids.get(s, -1)

    def ids_matching(self, predicate) -> np.ndarray:
        """Ids of all strings for which predicate(str) is true (for vectorised name filters). A predicate whose
        result depends only on its code, defaults and closure (nearly all: the rules' name filters) is evaluated
        once per distinct string in this process, whatever the number of tables (ranks) that hold it."""
        got = shared_match.ids_matching(self, predicate)
        if got is not None:
            return got
        return np.fromiter((i for i, s in enumerate(self._strings) if predicate(s)), dtype=np.int32)

    def ids_containing(self, needle: str, case: bool = False) -> np.ndarray:
        if case:
            return self.ids_matching(lambda s: needle in s)
        low = needle.lower()
        return self.ids_matching(lambda s: low in s.lower())

    def to_list(self) -> list[str]:
        return list(self._strings)

    def lookup(self, ids: np.ndarray) -> list[str]:
        strings = self._strings
        return [strings[i] for i in np.asarray(ids).tolist()]

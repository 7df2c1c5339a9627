"""Bounds on what a snapshot pickle may cost, checked in one pass over its opcodes before the C unpickler
builds anything.

A pickle is a program: one LONG_BINPUT with index 2**31 makes the C unpickler allocate a 16 GiB memo
table, 10 MB of MEMOIZE opcodes a 10 M-entry one, 2 MB of `]` and `a` a million-deep nest, an 84-byte
PUT a 2.3 GB table. `scan_opcodes` walks the opcodes once without creating an object, keeping the
unpickler's stack as a depth per slot and its marks, and refuses (SnapshotBoundError, one line):
more than MAX_OBJECTS objects; a memo index beyond the objects created so far, or written with more than
MAX_TEXT_ARG characters, or more memo stores than objects (the pickler numbers its memo 0, 1, 2 ... and
memoises an object once); nesting deeper than MAX_DEPTH; more than MAX_STACK items on the stack; an
integer wider than MAX_INT_BYTES (a snapshot's numbers are 64-bit: str() of a 4,301-digit one raises).
It stops at STOP and at an opcode that names a class or function: the restricted unpickler raises there,
so what follows never runs.

The walk is C (core/snapshot/_pickscan.h, built into core.trace._scan: ~1 s per GB); `_scan_python` is
its line-by-line twin for an install without a compiler (~100x slower, same answers: the tests run both).
What the unpickled object may cost the reader (shared references: n devices sharing one ring, n segments
sharing one block list) is bounded where it is read (load.py `_check_rows`), not by walking the graph.
"""
from __future__ import annotations

import time

MAX_OBJECTS = 100_000_000  # objects the pickle may create (a 1 GB snapshot of 3.4 M allocations: 16 M)
MAX_DEPTH = 100  # a snapshot nests 6 levels (dict > list > dict > list > dict > scalar)
MAX_STACK = 1 << 22  # items on the unpickler's stack at once (the pickler batches 1,000 per MARK)
MAX_INT_BYTES = 32  # LONG1 / LONG4 width; 10**40 (17 bytes) passes, 10**5000 does not
MAX_TEXT_ARG = 80  # characters of a protocol-0 INT / LONG / PUT / GET argument
MAX_SECONDS = 300.0  # the pure-Python walk's deadline
_CHECK_EVERY = 1 << 16


class SnapshotBoundError(ValueError):
    """The pickle would cost more than any real memory snapshot: refused, with a one-line reason."""


def deadline_after(seconds: float = MAX_SECONDS) -> float:
    return time.monotonic() + seconds


def scan_opcodes(data, deadline: float | None = None) -> None:
    """Refuse (SnapshotBoundError) a pickle past the bounds above; return None when within them."""
    from core.trace.columns import _scan  # the C accelerator, None when not built
    if _scan is not None and hasattr(_scan, "pickle_bounds"):
        reason = _scan.pickle_bounds(data, MAX_OBJECTS, MAX_DEPTH, MAX_STACK, MAX_INT_BYTES, MAX_TEXT_ARG)
    else:
        reason = _scan_python(data, deadline if deadline is not None else deadline_after())
    if reason is not None:
        raise SnapshotBoundError(reason)


# opcode -> how its argument is laid out: >= 0 fixed bytes; the negative codes follow pickletools
_NL, _LEN1, _LEN4S, _LEN4U, _LEN8 = -1, -2, -3, -4, -5
_ARG = {
    ord("I"): _NL, ord("J"): 4, ord("K"): 1, ord("M"): 2, ord("L"): _NL, 0x8A: _LEN1, 0x8B: _LEN4S,
    ord("S"): _NL, ord("T"): _LEN4S, ord("U"): _LEN1, ord("B"): _LEN4U, ord("C"): _LEN1, 0x8E: _LEN8,
    0x96: _LEN8, ord("N"): 0, 0x88: 0, 0x89: 0, ord("V"): _NL, 0x8C: _LEN1, ord("X"): _LEN4U, 0x8D: _LEN8,
    ord("F"): _NL, ord("G"): 8, ord("]"): 0, ord("a"): 0, ord("e"): 0, ord("l"): 0, ord(")"): 0, ord("t"): 0,
    0x85: 0, 0x86: 0, 0x87: 0, ord("}"): 0, ord("d"): 0, ord("s"): 0, ord("u"): 0, 0x8F: 0, 0x90: 0, 0x91: 0,
    ord("0"): 0, ord("2"): 0, ord("("): 0, ord("1"): 0, ord("g"): _NL, ord("h"): 1, ord("j"): 4,
    ord("p"): _NL, ord("q"): 1, ord("r"): 4, 0x94: 0, 0x80: 1, ord("."): 0, 0x95: 8,
}
_SCALAR = {ord(c) for c in "FILSVJKMGNTUBCX"} | {0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x96}
_EMPTY = {ord(c) for c in "]})"} | {0x8F}
_FROM_MARK = {ord(c) for c in "ldt"} | {0x91}
_INTO_MARK = {ord(c) for c in "eu"} | {0x90}
_TUPLE_N = {0x85: 1, 0x86: 2, 0x87: 3}
_REFS = {ord("g"), ord("h"), ord("j")}
_INDEX_CAP = 10**18


class _Walk:
    """The C walk's state, in Python."""

    def __init__(self) -> None:
        self.objects = 0
        self.stores = 0
        self.depth: list[int] = []
        self.marks: list[int] = []

    def push(self, depth: int) -> None:
        if len(self.depth) >= MAX_STACK:
            raise SnapshotBoundError(f"pickle keeps more than {MAX_STACK} items on its stack at once "
                                     "(not a real snapshot)")
        if depth > MAX_DEPTH:
            _too_deep()
        self.depth.append(depth)

    def new(self, depth: int) -> None:
        self.objects += 1
        if self.objects > MAX_OBJECTS:
            raise SnapshotBoundError(f"pickle creates more than {MAX_OBJECTS} objects (not a real snapshot)")
        self.push(depth)

    def pop_to_mark(self) -> int:
        base = min(self.marks.pop() if self.marks else 0, len(self.depth))
        inner = max(self.depth[base:], default=0)
        del self.depth[base:]
        return inner

    def raise_top(self, inner: int) -> None:
        if not self.depth:
            return
        if inner + 1 > MAX_DEPTH:
            _too_deep()
        self.depth[-1] = max(self.depth[-1], inner + 1)

    def memo(self, index: int) -> None:
        self.stores += 1
        if self.stores > self.objects + 1:
            raise SnapshotBoundError(f"pickle memoises more often than it creates objects ({self.stores} times; "
                                     "not a real snapshot)")
        if index > self.objects + 1:
            raise SnapshotBoundError(f"pickle memo index {index} is beyond the {self.objects} objects created "
                                     "so far (not a real snapshot)")


def _too_deep() -> None:
    raise SnapshotBoundError(f"pickle nests deeper than {MAX_DEPTH} levels (not a real snapshot)")


def _scan_python(data, deadline: float) -> str | None:  # noqa: C901 - one opcode table, as in the C walk
    view = memoryview(data).cast("B")
    n = len(view)
    w = _Walk()
    i = ops = 0
    try:
        while i < n:
            op = view[i]
            i += 1
            ops += 1
            if not ops % _CHECK_EVERY and time.monotonic() > deadline:
                return f"reading it takes longer than {MAX_SECONDS:.0f} s (far beyond any real snapshot)"
            kind = _ARG.get(op)
            if kind is None or op == 0x2E:  # not plain data (the unpickler refuses it) or STOP
                return None
            if kind == _NL:
                nl = data.find(b"\n", i) if hasattr(data, "find") else bytes(view[i:]).find(b"\n") + i
                if nl < 0 or nl < i:
                    return None
                arg = nl - i
                if op in (ord("I"), ord("L")) and arg > MAX_TEXT_ARG:
                    return f"pickle holds an integer of {arg} characters (a memory snapshot's numbers are 64-bit)"
                if op in (ord("p"), ord("g")) and arg > MAX_TEXT_ARG:
                    return f"pickle memo index written with {arg} characters (not a real snapshot)"
                text = bytes(view[i:nl])
                i = nl + 1
                if op == ord("p"):
                    index = 0
                    for c in text:  # as the C walk reads it: digits only, saturating at _INDEX_CAP
                        if 48 <= c <= 57 and index < _INDEX_CAP:
                            index = index * 10 + c - 48
                    w.memo(min(index, _INDEX_CAP))
                elif op == ord("g"):
                    w.push(0)
                else:
                    w.new(0)
                continue
            if kind == _LEN1 or kind in (_LEN4S, _LEN4U) or kind == _LEN8:
                width = 1 if kind == _LEN1 else 4 if kind in (_LEN4S, _LEN4U) else 8
                if i + width > n:
                    return None
                length = int.from_bytes(view[i:i + width], "little", signed=kind == _LEN4S)
                if length < 0:
                    return None
                if op in (0x8A, 0x8B):
                    if length > MAX_INT_BYTES:
                        return (f"pickle holds an integer of {length * 8} bits "
                                "(a memory snapshot's numbers are 64-bit)")
                    if length > n - i - width:
                        return None
                elif length > n - i - width:
                    return f"pickle is truncated (an argument of {length} bytes runs past its end)"
                i += width + length
                w.new(0)
                continue
            if i + kind > n:
                return None
            arg_at = i
            i += kind
            if op in _SCALAR:
                w.new(0)
            elif op in _EMPTY:
                w.new(1)
            elif op == ord("("):
                if len(w.marks) >= MAX_DEPTH:
                    _too_deep()
                w.marks.append(len(w.depth))
            elif op == ord("0"):
                if w.depth:
                    w.depth.pop()
            elif op == ord("1"):
                w.pop_to_mark()
            elif op == ord("2"):
                w.push(w.depth[-1] if w.depth else 0)
            elif op == ord("a"):
                w.raise_top(w.depth.pop() if w.depth else 0)
            elif op == ord("s"):
                inner = max((w.depth.pop() for _ in range(min(2, len(w.depth)))), default=0)
                w.raise_top(inner)
            elif op in _INTO_MARK:
                w.raise_top(w.pop_to_mark())
            elif op in _FROM_MARK:
                w.new(w.pop_to_mark() + 1)
            elif op in _TUPLE_N:
                inner = max((w.depth.pop() for _ in range(min(_TUPLE_N[op], len(w.depth)))), default=0)
                w.new(inner + 1)
            elif op in _REFS:
                w.push(0)
            elif op == ord("q"):
                w.memo(view[arg_at])
            elif op == ord("r"):
                w.memo(int.from_bytes(view[arg_at:arg_at + 4], "little"))
            elif op == 0x94:
                w.memo(w.stores)
            # PROTO, FRAME: nothing to keep
    except SnapshotBoundError as exc:
        return str(exc)
    return None

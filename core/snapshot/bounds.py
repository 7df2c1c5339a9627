"""Bounds on what a snapshot pickle may cost, checked before and after the C unpickler runs.

A pickle is a program: 391 bytes of memo references can describe a "billion laughs" object graph, one
LONG_BINPUT with index 2**31 makes the unpickler allocate a 16 GiB memo table, a 400 KB file of shared
references expands to gigabytes in the code that walks it. So, in this order:
1. `scan_opcodes` walks the opcodes without building anything (no object is created, no global is
   resolved) and bounds the objects created (MAX_OBJECTS), the memo (MAX_MEMO) and the time (the
   deadline). It stops at an opcode that names a class or function (_REFUSED): the restricted
   unpickler raises there, so what follows never runs.
2. The C unpickler (iterative, fast) builds the plain containers - it can no longer exceed those bounds.
3. `measure` walks the result once per distinct object (iterative: no recursion on 2,000-deep lists):
   its depth (MAX_DEPTH) and its *expanded* size, where a shared reference counts the whole size of
   what it shares (MAX_EXPANDED), because that is what the snapshot reader walks. The one exception
   matches the reader: a `frames` list is interned by identity (load.py _Interner), so a shared frames
   list counts once.
Each bound is a `SnapshotBoundError` with a one-line reason. Real snapshots (a 100k-entry trace ring per
device, ~60 frames a stack) stay one to two orders of magnitude below every bound.
"""
from __future__ import annotations

import time

MAX_OBJECTS = 50_000_000  # objects the pickle may create (a full 8-GPU ring is ~10 M)
MAX_MEMO = MAX_OBJECTS  # highest memo index a PUT may name (the C unpickler sizes its memo table by it)
MAX_EXPANDED = 50_000_000  # containers + scalars reached, shared references counted by their expanded size
MAX_DEPTH = 100  # a snapshot nests 6 levels (dict > list > dict > list > dict > scalar)
MAX_SECONDS = 300.0  # scan + unpickle + measure
_CHECK_EVERY = 1 << 16


class SnapshotBoundError(ValueError):
    """The pickle would cost more than any real memory snapshot: refused, with a one-line reason."""


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
# opcodes that create no object (references, stack and memo bookkeeping, framing, mutation of a container)
_NO_OBJECT = {ord(c) for c in "aesu012(1ghjpqr."} | {0x90, 0x94, 0x80, 0x95}
_REFUSED = {ord("c"): "a global (class or function)", 0x93: "a global (class or function)",
            ord("i"): "a class instance", ord("o"): "a class instance", ord("R"): "a function call",
            ord("b"): "object state", 0x81: "a class instance", 0x92: "a class instance",
            0x82: "an extension registry entry", 0x83: "an extension registry entry",
            0x84: "an extension registry entry", ord("P"): "persistent ids", ord("Q"): "persistent ids",
            0x97: "out-of-band buffers", 0x98: "out-of-band buffers"}


def deadline_after(seconds: float = MAX_SECONDS) -> float:
    return time.monotonic() + seconds


def _check_time(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise SnapshotBoundError(f"reading it takes longer than {MAX_SECONDS:.0f} s (far beyond any real snapshot)")


def scan_opcodes(data, deadline: float) -> int:
    """Walk the opcodes up to the first STOP; returns the objects the pickle creates. Refuses (never
    executes) anything that is not plain data. A malformed stream is left to the unpickler's own error."""
    view = memoryview(data).cast("B")
    n = len(view)
    i = 0
    objects = 0
    ops = 0
    arg_of = _ARG.get
    no_object = _NO_OBJECT
    while i < n:
        op = view[i]
        i += 1
        ops += 1
        kind = arg_of(op)
        if kind is None:
            # a global, call, instance, extension, persistent id or buffer (_REFUSED), or an unknown opcode:
            # the restricted unpickler stops there with its own one-line error naming what was asked for,
            # so nothing after this point ever runs and the scan can stop
            return objects
        if op not in no_object:
            objects += 1
        if kind >= 0:
            if op == 0x72 and i + 4 <= n:  # LONG_BINPUT
                _check_memo(int.from_bytes(view[i:i + 4], "little"))
            i += kind
        elif kind == _NL:
            end = bytes(view[i:i + 64]).find(b"\n") if op == 0x70 else -1
            if end >= 0:  # PUT <decimal>\n
                try:
                    index = int(bytes(view[i:i + end]))
                except ValueError:
                    return objects  # the unpickler reports the malformed PUT
                _check_memo(index)
            nl = _find_newline(view, i)
            if nl < 0:
                return objects
            i = nl + 1
        elif kind == _LEN1:
            if i >= n:
                return objects
            i += 1 + view[i]
        elif kind in (_LEN4S, _LEN4U):
            if i + 4 > n:
                return objects
            length = int.from_bytes(view[i:i + 4], "little", signed=kind == _LEN4S)
            if length < 0:
                return objects
            i += 4 + length
        else:
            if i + 8 > n:
                return objects
            i += 8 + int.from_bytes(view[i:i + 8], "little")
        if op == 0x2E:  # STOP
            return objects
        if objects > MAX_OBJECTS:
            raise SnapshotBoundError(f"pickle creates more than {MAX_OBJECTS:,} objects (not a real snapshot)")
        if not ops % _CHECK_EVERY:
            _check_time(deadline)
    return objects


def _find_newline(view: memoryview, start: int) -> int:
    found = bytes(view[start:start + 4096]).find(b"\n")  # text arguments are short numbers and names
    if found >= 0:
        return start + found
    return view.obj.find(b"\n", start) if hasattr(view.obj, "find") else -1


def _check_memo(index: int) -> None:
    if index > MAX_MEMO:
        raise SnapshotBoundError(f"pickle memo index {index:,} is beyond {MAX_MEMO:,} (not a real snapshot)")


def measure(obj, deadline: float) -> int:
    """Expanded size of the unpickled object graph (see the module docstring); refuses past the bounds.
    Iterative post-order over distinct containers: each container's scalars are counted in one pass
    (a list comprehension picks out its container children), so the cost is ~50 ns per value."""
    if type(obj) not in _CONTAINERS:
        return 1
    sizes: dict[int, int] = {}  # id -> expanded size of a finished container
    pending: dict[int, tuple[int, list]] = {}  # id -> (scalar count, container children) until it exits
    on_path: set[int] = set()
    frames_seen: set[int] = set()
    stack: list[tuple[object, int]] = [(obj, 1)]  # depth > 0: enter; depth 0: exit
    done = 0
    while stack:
        node, depth = stack.pop()
        nid = id(node)
        if depth == 0:  # exit: all children are sized
            scalars, kids = pending.pop(nid)
            size = 1 + scalars
            for kid in kids:
                size += sizes[id(kid)]
            if size > MAX_EXPANDED:
                _too_big()
            sizes[nid] = size
            on_path.discard(nid)
            done += 1
            if not done % _CHECK_EVERY:
                _check_time(deadline)
            continue
        if nid in sizes:
            continue
        if nid in on_path:
            raise SnapshotBoundError("pickle holds a container that contains itself (not a real snapshot)")
        if depth > MAX_DEPTH:
            raise SnapshotBoundError(f"pickle nests deeper than {MAX_DEPTH} levels (not a real snapshot)")
        if type(node) is dict:
            values = list(node.values())
            kids = [v for v in values if type(v) in _CONTAINERS]
            kids += [k for k in node if type(k) in _CONTAINERS]  # tuple keys (repr'd by the settings)
            frames = node.get("frames")
            if type(frames) is list:  # interned by identity (load.py): a shared frames list counts once
                if id(frames) in frames_seen:
                    kids = [k for k in kids if k is not frames]
                else:
                    frames_seen.add(id(frames))
            n_values = 2 * len(values)
        else:
            kids = [v for v in node if type(v) in _CONTAINERS]
            n_values = len(node)
        pending[nid] = (n_values - len(kids), kids)
        on_path.add(nid)
        stack.append((node, 0))
        stack.extend((kid, depth + 1) for kid in kids)
    return sizes[id(obj)]


_CONTAINERS = {dict, list, tuple, set, frozenset}


def _too_big() -> None:
    raise SnapshotBoundError(f"pickle expands to more than {MAX_EXPANDED:,} values through shared references "
                             "(not a real snapshot)")

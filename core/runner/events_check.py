"""What the launcher accepts from events.jsonl (Qt-free). The file is written by the user's process, so
every field the launcher reads is checked for its type and range first; an event that fails is skipped
(counted, and said once in run.json / the notices), never a crash of the launcher."""
from __future__ import annotations

MAX_TEXT = 20_000  # protocol.MAX_TEXT caps what the child writes; a little slack for the JSON escapes
MAX_INT = 2**62


def _int(v, lo: int = 0, hi: int = MAX_INT) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _text(v) -> bool:
    return isinstance(v, str) and len(v) <= MAX_TEXT


def _opt(check):
    return lambda v: v is None or check(v)


_COMMON = {"rank": _int, "t_ns": _int}
# type -> field -> check; a field absent from the event is fine (readers use defaults), a present one must pass
_FIELDS = {
    "launch": {"pid": lambda v: _int(v, 2)},
    "start": {"pid": lambda v: _int(v, 2), "torch_version": _text, "python": _text, "cwd": _text,
              "cuda": lambda v: isinstance(v, bool), "devices": _int,
              "device_properties": lambda v: isinstance(v, list), "world_size": lambda v: _int(v, 1, 1 << 20),
              "features": lambda v: isinstance(v, dict)},
    "step": {"step": _int, "dur_ns": _int, "source": _text, "hook_ns": _int, "phase": _text},
    "phase": {"phase": lambda v: v in ("wait", "warmup", "active", "done"), "step": _int, "source": _text},
    "cycle": {"cycle": _int, "path": _text, "bytes": _int, "step": _int},
    "notice": {"code": _text, "message": _text},
    "sync": {"file": _text, "line": _int, "step": _int, "message": _text, "via": _opt(_text), "code": _text},
    "exception": {"message": _text, "traceback": _text},
    "oom": {"message": _text, "where": _text, "snapshot": _opt(_text), "device": lambda v: _int(v, 0, 1 << 16),
            **{k: _int for k in ("size_bytes", "total_bytes", "free_bytes", "reserved_bytes", "allocated_bytes",
                                 "process_bytes", "unallocated_reserved_bytes", "limit_bytes")}},
    "end": {"exit_code": lambda v: _int(v, -255, 255), "steps": _int, "cycles": _int},
}
REQUIRED = {"step": ("step",), "start": ("pid",), "phase": ("phase",), "cycle": ("cycle",), "end": ("exit_code",)}


def valid(event: dict) -> bool:
    """True when every field the launcher reads has the type and range it expects."""
    kind = event.get("type")
    checks = _FIELDS.get(kind)
    if checks is None:
        return isinstance(kind, str) and all(check(event[k]) for k, check in _COMMON.items() if k in event)
    if any(k not in event for k in REQUIRED.get(kind, ())):
        return False
    for key, check in (*_COMMON.items(), *checks.items()):
        if key in event and not check(event[key]):
            return False
    return True

"""Text that UTF-8 JSON cannot hold, held reversibly (issue 37).

A file name with a byte that is not UTF-8 arrives as a str with a lone surrogate (os.fsdecode's
surrogateescape: b"r\\xffank0" -> "r\\udcffank0"), and a trace's own JSON may escape one ("\\ud800");
msgspec refuses to encode either (the cache key of such a file broke every command). `escape` turns such
a string into ESCAPE + the hex of its UTF-8 bytes with surrogates passed (never a real path or a name a
trace writes: it starts with a NUL), `unescape` turns it back; strings without surrogates are untouched,
so a document that encodes today encodes to the same bytes.
"""
from __future__ import annotations

import msgspec

ESCAPE = "\x00ptprof-surrogates:"


def _escape_str(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return ESCAPE + s.encode("utf-8", "surrogatepass").hex()


def _unescape_str(s: str) -> str:
    if not s.startswith(ESCAPE):
        return s
    try:
        return bytes.fromhex(s[len(ESCAPE):]).decode("utf-8", "surrogatepass")
    except (ValueError, UnicodeDecodeError):
        return s  # not ours after all: kept as it is


def _walk(obj, fn):
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, dict):
        return {fn(k) if isinstance(k, str) else k: _walk(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_walk(v, fn) for v in obj]
    return obj


def escape(obj):
    """`obj` (JSON-like) with every string that holds a surrogate escaped."""
    return _walk(obj, _escape_str)


def unescape(obj):
    return _walk(obj, _unescape_str)


def encode(obj) -> tuple[bytes, bool]:
    """(msgspec JSON of `obj`, whether it had to be escaped). The common case costs one encode."""
    try:
        return msgspec.json.encode(obj), False
    except (UnicodeEncodeError, msgspec.EncodeError):
        return msgspec.json.encode(escape(obj)), True


def text(s: str) -> str:
    """One string as JSON can hold it (a cache key's path)."""
    return _escape_str(s)

"""Strings longer than MAX_STRING_BYTES (resources/limits.toml [strings]) are cut to it, at a UTF-8
character boundary - the same cut the C scanner makes in its intern (core/trace/_scan.c), so both decode
paths give the same columns. A 200 MB event name then costs one pass over its bytes instead of `info`
3 s / 450 MB and `analyze` 135 s (every name filter read the whole text).

Lone surrogates (a JSON "\\ud800": not Unicode text; the scanner and msgspec refuse them, the tolerant
path reads them) become U+FFFD here, so every name in a model encodes - they were UnicodeEncodeError
tracebacks when `analyze` printed them and when `report` wrote its CSVs."""
from __future__ import annotations

import re

from core.trace.limits import limits

MAX_STRING_BYTES = int(limits()["strings"]["max_bytes"])
CUT_WARNING = (f"names or args longer than {MAX_STRING_BYTES >> 10} KiB were cut to their first "
               f"{MAX_STRING_BYTES >> 10} KiB")


def is_long(s) -> bool:
    """More than MAX_STRING_BYTES of UTF-8 (a str of at most a quarter as many characters never is)."""
    return isinstance(s, str) and len(s) > MAX_STRING_BYTES // 4 and \
        len(s.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES


def cap_text(s):
    """`s` cut to MAX_STRING_BYTES of UTF-8 at a character boundary (what _scan.c's intern keeps)."""
    if not is_long(s):
        return s
    raw = s.encode("utf-8", "surrogatepass")
    k = MAX_STRING_BYTES
    while k > 0 and raw[k] & 0xC0 == 0x80:
        k -= 1
    return raw[:k].decode("utf-8", "surrogatepass")


def cap_strings(strings: list[str]) -> int:
    """Cut, in place, the strings of a chunk's table longer than MAX_STRING_BYTES; how many."""
    if not strings or max(map(len, strings)) <= MAX_STRING_BYTES // 4:  # the usual case: one C pass
        return 0
    n = 0
    for i, s in enumerate(strings):
        if is_long(s):
            strings[i] = cap_text(s)
            n += 1
    return n


_SURROGATE = re.compile("[\ud800-\udfff]")


def is_unicode(s) -> bool:
    """`s` (a str) encodes as UTF-8: no lone surrogate."""
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def text(s):
    """`s` with each lone surrogate replaced by U+FFFD (anything but a str unchanged)."""
    return _SURROGATE.sub("\ufffd", s) if isinstance(s, str) and not is_unicode(s) else s


def fix_surrogates(strings: list[str]) -> int:
    """Replace, in place, lone surrogates in a chunk's strings (one encode of them all when there are none)."""
    if is_unicode("\x00".join(strings)):
        return 0
    bad = [i for i, s in enumerate(strings) if not is_unicode(s)]
    for i in bad:
        strings[i] = text(strings[i])
    return len(bad)


def clean(obj, depth: int = 0):
    """A decoded JSON value (a trace header) with every string cut and its lone surrogates replaced, keys
    too; nesting past 64 levels dropped (None)."""
    if isinstance(obj, str):
        return text(cap_text(obj))
    if depth > 64:
        return None
    if isinstance(obj, dict):
        return {clean(k, depth + 1): clean(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v, depth + 1) for v in obj]
    return obj

"""Text for a terminal: control characters escaped, so a trace, kernel or file name holding ESC / OSC
sequences (colour, title, clear screen, hyperlinks), CR or bidi overrides cannot act on the terminal.
Newlines and tabs between our own columns are kept; JSON output needs nothing (json escapes them)."""
from __future__ import annotations

import re

# C0 except tab and newline, DEL, C1, and the Unicode bidi embeddings/overrides/isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", str(text))

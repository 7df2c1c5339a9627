"""Which events.jsonl lines the launcher believes (Qt-free, launcher side; the child signs in protocol.py).

The training script runs as the user and knows its bundle, so it can append lines to events.jsonl: a
forged `phase: done` stopped a --stop-after-window run before any real window, a forged notice put
terminal escapes into run.json. Every run gets a fresh 256-bit key. The launcher hands it to the child
through a pipe (an inherited fd, read and closed by child.py before the script starts; never in the
environment, argv or a file), or, under torchrun (which passes no fds to its workers), through the
environment, from which child.py removes it before the script starts - a script that digs it out of
/proc/self/environ could still sign lines there; a script in the same interpreter can in principle read
any of ptprof's memory, so this defends the file, not the process. A line counts only when its HMAC
checks (RunKey.check_line) and its "seq" ("<pid>.<n>") is newer than the last one of that process
(RunKey.fresh): a forged line is skipped, a copied authentic line is a replay and skipped too.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from core.runner.protocol import KEY_ENV, KEY_FD_ENV, MAC_HEX, MAC_PREFIX, MAC_SUFFIX_LEN


class RunKey:
    def __init__(self, key: bytes | None = None):
        self.key = key if key is not None else secrets.token_bytes(32)
        self._last: dict[str, int] = {}  # pid -> last seq seen
        self._read_fd: int | None = None

    # -- handing the key to the child --------------------------------------------------------------
    def child_env(self, torchrun: bool) -> tuple[dict[str, str], tuple[int, ...]]:
        """(environment additions, fds to pass): a pipe holding the key, or the key itself for torchrun."""
        if torchrun:
            return {KEY_ENV: self.key.hex()}, ()
        r, w = os.pipe()
        try:
            os.write(w, self.key.hex().encode("ascii"))  # 64 bytes: far below the pipe buffer
        finally:
            os.close(w)
        self._read_fd = r
        return {KEY_FD_ENV: str(r)}, (r,)

    def close_child_end(self) -> None:
        """After the child started (or failed to): the launcher keeps no copy of the pipe."""
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None

    # -- checking lines ----------------------------------------------------------------------------
    def check_line(self, line: bytes) -> bool:
        """The raw line (no newline) ends with the "mac" field, and the MAC is the line's under our key."""
        line = line.rstrip(b"\r")
        if len(line) <= MAC_SUFFIX_LEN or not line.endswith(b'"}') \
                or line[-MAC_SUFFIX_LEN:-MAC_SUFFIX_LEN + len(MAC_PREFIX)] != MAC_PREFIX:
            return False
        body = line[:-MAC_SUFFIX_LEN] + b"}"
        mac = line[-MAC_HEX - 2:-2]
        want = hmac.new(self.key, body, hashlib.sha256).hexdigest()[:MAC_HEX].encode("ascii")
        return hmac.compare_digest(mac, want)

    def fresh(self, event: dict) -> bool:
        """An authentic event that is not a copy of an earlier one (its seq rises per process)."""
        seq = event.get("seq")
        if not isinstance(seq, str):
            return False
        pid, _, n = seq.partition(".")
        if not (pid.isdigit() and n.isdigit() and len(n) < 19):
            return False
        if int(n) <= self._last.get(pid, 0):
            return False
        self._last[pid] = int(n)
        return True

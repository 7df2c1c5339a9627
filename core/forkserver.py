"""A forkserver that is gone is started again (stdlib multiprocessing keeps one per process, for good).

multiprocessing's forkserver is a child of this process, started once; before each use `ensure_running` asks
`os.waitpid(pid, WNOHANG)` whether it still runs. When it was killed and its exit status already collected
elsewhere (a process-tree cleanup, a `kill` of leftovers, a test's reaper), that call raises
ChildProcessError (ECHILD) - and every later pool of the process fails the same way: the window's Compare of a
multi-rank run said "comparison failed: ChildProcessError: [Errno 10] No child processes" (seen in CI after
other tests of the same process). `revive()` forgets such a forkserver so the next pool starts a fresh one.
"""
from __future__ import annotations

import os
from multiprocessing import forkserver as _fs

_STATE = ("_forkserver_address", "_forkserver_alive_fd", "_forkserver_pid", "_forkserver_authkey")


def revive() -> bool:
    """Forget the process's forkserver when it is gone (dead and collected, or dead and not yet collected);
    True when one was forgotten. A running one is left alone. Uses the stdlib's private state (Python 3.9-3.13:
    ForkServer._forkserver_pid / _forkserver_alive_fd / _forkserver_address, 3.13 also _forkserver_authkey)."""
    server = getattr(_fs, "_forkserver", None)
    lock = getattr(server, "_lock", None)
    if server is None or lock is None:
        return False
    with lock:
        pid = getattr(server, "_forkserver_pid", None)
        if pid is None:
            return False
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # collected by someone else: gone
            done = pid
        if not done:
            return False
        fd = getattr(server, "_forkserver_alive_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        address = getattr(server, "_forkserver_address", None)
        if isinstance(address, str) and not address.startswith("\0"):  # a filesystem socket (not Linux abstract)
            try:
                os.unlink(address)
            except OSError:
                pass
        for name in _STATE:
            if hasattr(server, name):
                setattr(server, name, None)
        return True

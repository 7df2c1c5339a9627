"""The run's process tree, read from /proc (Linux; Qt-free, stdlib only).

A run is the child the launcher spawned plus everything below it: DataLoader workers, torchrun ranks
(each in its own session), `subprocess` / `multiprocessing` children and double-forked `setsid`
daemons. Process groups do not hold them all (setsid leaves the group), and parent links break when a
middle process exits, so the tree is followed over time:

- the launcher makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphan of the run
  is re-parented to the launcher, not to init, so it stays findable and reapable;
- every poll adds the descendants of the child and of every process already known (a process is
  known by pid AND start time, so a recycled pid is never signalled);
- processes re-parented to the launcher are the run's only when they carry the run's environment
  marker (PTPROF_BUNDLE=<bundle>), which every descendant inherits.

Without /proc (macOS) only the child's own process group is reached.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PROC = Path("/proc")


def set_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux >= 3.4); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class ProcInfo(tuple):
    """(ppid, pgid, sid, state, start_ticks) of one process, from /proc/<pid>/stat."""
    __slots__ = ()

    ppid = property(lambda self: self[0])
    pgid = property(lambda self: self[1])
    sid = property(lambda self: self[2])
    state = property(lambda self: self[3])
    start = property(lambda self: self[4])


def stat(pid: int) -> ProcInfo | None:
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
        fields = raw.rsplit(b")", 1)[1].split()
        return ProcInfo((int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode(), int(fields[19])))
    except (OSError, IndexError, ValueError):
        return None


def table() -> dict[int, ProcInfo]:
    """pid -> ProcInfo of every process we can see."""
    out = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            info = stat(int(name))
            if info is not None:
                out[int(name)] = info
    return out


def has_marker(pid: int, marker: bytes) -> bool:
    try:
        return marker in (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def available() -> bool:
    return PROC.is_dir() and (PROC / str(os.getpid()) / "stat").exists()


class RunTree:
    """Every process of one run seen so far, by (pid, start time)."""

    def __init__(self, root_pid: int, marker: bytes):
        self.root = root_pid
        self.marker = marker
        self.known: dict[int, int] = {}  # pid -> start ticks
        self.enabled = available()
        self._lock = threading.Lock()  # the GPU sampler thread asks for pids() too

    def refresh(self) -> dict[int, ProcInfo]:
        """Update the known set; returns the known processes that still exist (zombies included)."""
        if not self.enabled:
            return {}
        with self._lock:
            return self._refresh()

    def _refresh(self) -> dict[int, ProcInfo]:
        procs = table()
        me = os.getpid()
        alive = {pid: info for pid, info in procs.items()
                 if pid in self.known and self.known[pid] == info.start}
        root = procs.get(self.root)
        if root is not None and (self.root not in self.known or self.known[self.root] == root.start):
            alive[self.root] = root
        for pid, info in procs.items():  # our own orphans (subreaper) that carry the run's marker
            if info.ppid == me and pid not in alive and pid != self.root and has_marker(pid, self.marker):
                alive[pid] = info
        children: dict[int, list[int]] = {}
        for pid, info in procs.items():
            children.setdefault(info.ppid, []).append(pid)
        todo = list(alive)
        while todo:
            for kid in children.get(todo.pop(), ()):
                if kid not in alive and kid != me:
                    alive[kid] = procs[kid]
                    todo.append(kid)
        self.known = {pid: info.start for pid, info in alive.items()}
        return alive

    def running(self) -> dict[int, ProcInfo]:
        """Known processes that have not exited (zombies waiting for a reaper do not count)."""
        return {pid: info for pid, info in self.refresh().items() if info.state != "Z"}

    def signal(self, sig: int, exclude: set[int] = frozenset(), skip_groups=()) -> list[int]:
        """Send `sig` to every known running process (each checked against its start time first), but
        not to members of `skip_groups`: the caller signalled those groups already, and a second SIGINT
        arriving after the first was handled is a second stop (it cut the child's flush under load)."""
        sent = []
        skip = set(skip_groups)
        for pid, info in self.running().items():
            if pid in exclude or pid <= 1 or pid == os.getpid() or info.pgid in skip:
                continue
            current = stat(pid)
            if current is None or current.start != info.start:
                continue  # exited and its pid was reused
            try:
                os.kill(pid, sig)
                sent.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        return sent

    def reap(self) -> None:
        """Collect the exit status of known processes that were re-parented to us (no zombies left);
        never the root, whose status belongs to its subprocess.Popen."""
        me = os.getpid()
        for pid, info in table().items():
            if pid != self.root and info.ppid == me and info.state == "Z" and pid in self.known:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

"""The allocator's history and the moment of an OOM, in the child (issue 32). Runs INSIDE the user's
interpreter: stdlib + torch only, Python 3.9.

    hist = MemoryHistory(torch, bundle, rank, emit, record=opts.memory_history, max_entries=N)
    hist.start()              # before the script: history on (if asked), the OOM observer attached
    hist.window_done()        # the last active window ended: memory[.rankR].snapshot.pickle
    hist.on_exception(exc)    # the script raised: if it is an OOM, record it (snapshot, event) -> dict
    hist.finish()             # the run ends: the history snapshot if none was written yet

On OOM the allocator's observer (torch._C._cuda_attach_out_of_memory_observer, where torch has it) runs at
the failing cudaMalloc, before the exception unwinds a single frame: the snapshot written there shows every
tensor alive at that moment. `on_exception` then adds what only the exception knows (the message's free /
reserved / allocated figures, the innermost user frame) and writes the snapshot itself when no observer
ran (older torch, a fake error in tests). The script still fails exactly as it would have: nothing here
swallows the exception or changes the exit code.
Files are written to a unique temporary name opened O_CREAT | O_EXCL (never through a link someone left)
and renamed into place.
"""
import os
import pickle
import re
import sys
import time
import traceback

_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = r"([0-9.]+) (B|KiB|MiB|GiB|TiB)"
_PATTERNS = {
    "size_bytes": re.compile(r"Tried to allocate " + _SIZE),
    "total_bytes": re.compile(r"total capacity of " + _SIZE),
    "free_bytes": re.compile(r"of which " + _SIZE + " is free"),
    "process_bytes": re.compile(r"this process has " + _SIZE + " memory in use"),
    "allocated_bytes": re.compile(_SIZE + r" is allocated by PyTorch"),
    "unallocated_reserved_bytes": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
    "limit_bytes": re.compile(_SIZE + r" allowed"),  # set_per_process_memory_fraction's cap
}
_GPU = re.compile(r"GPU (\d+) has a total capacity")
DEFAULT_MAX_ENTRIES = 100000  # allocator trace ring (torch's own default is unbounded)


def parse_oom_message(text):
    """The figures torch puts in "CUDA out of memory. Tried to allocate ..." (bytes), {} when none."""
    out = {}
    for key, pat in _PATTERNS.items():
        m = pat.search(text)
        if m:
            out[key] = int(float(m.group(1)) * _UNITS[m.group(2)])
    m = _GPU.search(text)
    if m:
        out["device"] = int(m.group(1))
    if "allocated_bytes" in out and "unallocated_reserved_bytes" in out:
        out["reserved_bytes"] = out["allocated_bytes"] + out["unallocated_reserved_bytes"]
    return out


def is_oom(torch, exc):
    for name in ("OutOfMemoryError",):
        for owner in (torch, getattr(torch, "cuda", None)):
            cls = getattr(owner, name, None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def snapshot_name(rank, oom=False):
    if oom:
        return "oom.rank%d.snapshot.pickle" % rank
    return "memory.snapshot.pickle" if rank == 0 else "memory.rank%d.snapshot.pickle" % rank


def write_private(path, data):
    """`data` (bytes) to `path` through a unique O_EXCL temporary file, renamed into place."""
    tmp = "%s.%d.%d.tmp" % (path, os.getpid(), time.monotonic_ns())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class MemoryHistory:
    def __init__(self, torch, bundle, rank, emit, record=False, max_entries=DEFAULT_MAX_ENTRIES, skip_dirs=()):
        self.torch = torch
        self.bundle = str(bundle)
        self.rank = rank
        self.emit = emit  # emit(type, **fields) -> the events.jsonl writer
        self.record = bool(record)
        self.max_entries = max(1, int(max_entries or DEFAULT_MAX_ENTRIES))
        self.skip_dirs = tuple(skip_dirs)  # frames inside these folders are not the user's
        self.recording = False
        self.observed = None  # what the allocator's observer saw at the failing cudaMalloc
        self.oom_snapshot = None
        self.history_written = False

    # -- start ---------------------------------------------------------------------------------
    def start(self):
        cuda = self.torch.cuda
        if self.record:
            self.recording = self._enable_history()
        attach = getattr(self.torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None and cuda.is_available():
            try:
                attach(self._observer)
            except Exception as exc:  # noqa: BLE001 - the run goes on without it
                self._notice("oom_observer", "could not attach the allocator's OOM observer: %s" % exc)

    def _enable_history(self):
        cuda = self.torch.cuda
        if not cuda.is_available():
            self._notice("memory_history", "--memory-history: no CUDA device, no allocator history recorded")
            return False
        record = getattr(cuda.memory, "_record_memory_history", None)
        if record is None:
            self._notice("memory_history", "torch %s has no torch.cuda.memory._record_memory_history "
                                           "(needs torch >= 2.1)" % self.torch.__version__)
            return False
        for kwargs in ({"enabled": "all", "context": "all", "stacks": "python", "max_entries": self.max_entries},
                       {"enabled": "all", "max_entries": self.max_entries},
                       {"trace_alloc_max_entries": self.max_entries}):
            try:
                if "trace_alloc_max_entries" in kwargs:
                    record(True, **kwargs)
                else:
                    record(**kwargs)
                self.emit("memory_history", enabled=True, max_entries=self.max_entries)
                return True
            except TypeError:
                continue
            except Exception as exc:  # noqa: BLE001
                self._notice("memory_history", "could not record the allocator history: %s" % exc)
                return False
        self._notice("memory_history", "torch.cuda.memory._record_memory_history refused every known signature")
        return False

    # -- snapshots -----------------------------------------------------------------------------
    def _snapshot_bytes(self):
        snap = self.torch.cuda.memory._snapshot()
        return pickle.dumps(snap, protocol=4)

    def _write_snapshot(self, name):
        path = os.path.join(self.bundle, name)
        try:
            write_private(path, self._snapshot_bytes())
        except Exception as exc:  # noqa: BLE001 - never break the run for a snapshot
            self._notice("snapshot_failed", "could not write %s: %s" % (name, exc))
            return None
        return name

    def window_done(self):
        if self.recording and not self.history_written:
            self.history_written = self._write_snapshot(snapshot_name(self.rank)) is not None

    def finish(self):
        self.window_done()
        if self.recording:
            try:
                self.torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:  # noqa: BLE001
                pass

    # -- OOM -----------------------------------------------------------------------------------
    def _observer(self, device, alloc, device_allocated, device_free):
        """The allocator's OOM observer: runs at the failing cudaMalloc, before any frame unwinds."""
        try:
            self.observed = {"device": int(device), "size_bytes": int(alloc),
                             "device_allocated_bytes": int(device_allocated), "device_free_bytes": int(device_free)}
            if self.oom_snapshot is None:
                self.oom_snapshot = self._write_snapshot(snapshot_name(self.rank, oom=True))
        except Exception:  # noqa: BLE001 - inside the allocator: never raise
            pass

    def on_exception(self, exc):
        """Record an OOM (event + snapshot); None when `exc` is not one (or recording it failed). The caller
        fails exactly as before."""
        try:
            return self._on_exception(exc)
        except Exception as err:  # noqa: BLE001 - never mask the script's own failure
            self._notice("oom_record_failed", "could not record the OOM: %s" % err)
            return None

    def _on_exception(self, exc):
        if not is_oom(self.torch, exc):
            return None
        message = str(exc)
        info = parse_oom_message(message)
        if self.observed:  # the allocator's own figures win over the message's
            info.update({k: v for k, v in self.observed.items() if k in ("device", "size_bytes")})
            info["observer"] = self.observed
        if self.oom_snapshot is None:
            self.oom_snapshot = self._write_snapshot(snapshot_name(self.rank, oom=True))
        reserved = self._reserved(info.get("device"))
        if reserved is not None:
            info.setdefault("reserved_bytes", reserved)
        frame = self.user_frame(exc.__traceback__)
        record = dict(info, message=message[:2000], snapshot=self.oom_snapshot, history=self.recording,
                      where=frame, exception=type(exc).__name__)
        self.emit("oom", **record)
        if self.recording and not self.history_written:
            self.history_written = self._write_snapshot(snapshot_name(self.rank)) is not None
        return record

    def _reserved(self, device):
        try:
            cuda = self.torch.cuda
            if cuda.is_available():
                return int(cuda.memory_reserved(device if device is not None else cuda.current_device()))
        except Exception:  # noqa: BLE001
            pass
        return None

    def user_frame(self, tb):
        """`file:line in function` of the innermost frame outside torch, site-packages and ptprof."""
        best = ""
        for fs in traceback.extract_tb(tb):
            name = fs.filename or ""
            if name.startswith("<") or any(name.startswith(d) for d in self.skip_dirs):
                continue
            if "site-packages" in name or "dist-packages" in name or name.startswith(sys.prefix + os.sep + "lib"):
                continue
            best = "%s:%d in %s" % (name, fs.lineno or 0, fs.name)
        return best

    def _notice(self, code, message):
        try:
            self.emit("notice", code=code, message=message)
        except Exception:  # noqa: BLE001
            pass

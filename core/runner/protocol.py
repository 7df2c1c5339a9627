"""events.jsonl: the child's running log of what happens, one JSON object per line (stdlib only).

The child (core/runner/child.py, in the user's interpreter) appends; the GUI controller and
`ptprof record` tail it. Every event has "type", "t_ns" (wall clock, time.time_ns) and "rank".

    {"type": "launch", "pid"}                                  (child.py runs: before torch is imported)
    {"type": "start", "pid", "python", "torch_version", "cuda", "devices", "world_size", "argv", "cwd",
     "module", "device_properties": [{id, name, totalGlobalMem, numSms, ...}], "schedule",
     "features": {name: {"on": true | false | null, "why"}}}    (runner/compat.py: what this torch supports)
    {"type": "step", "step", "dur_ns", "source": "optimizer" | "backward" | "forward",
     "phase": "start" | "wait" | "warmup" | "active" | "done", "hook_ns"}
        dur_ns = the script's own time since the previous step hook returned; phase = the profiler
        state that interval ran in; hook_ns = the previous hook's own time (profiler transitions,
        trace export, window-end sync)
    {"type": "phase", "phase": "wait" | "warmup" | "active" | "done", "step", "source"}  (state changes)
    {"type": "gpu_lag", "step", "cycle", "lag_ns", "source"}   (torch.cuda.synchronize before a window
                                                                 closes: how far the GPU lagged, ns)
    {"type": "cycle", "cycle", "path", "bytes", "export_s", "step", "source"}  (a trace file was saved)
    {"type": "notice", "code", "message"}          (fallback window, step_source_switched, step aside …)
    {"type": "sync", "file", "line", "step", "via", "code", "lib_file", "lib_line", "lib_function",
     "lib_label", "lib_code", "message"}           (CUDA: an implicit host-sync site; lib_* when it was
                                                    inside library code)
    {"type": "exception", "message", "traceback"}
    {"type": "end", "exit_code", "steps", "cycles", "step_source"}

Lines are written with one os.write on an O_APPEND descriptor, so ranks of a torchrun run can share
the file without interleaving (lines stay well under PIPE_BUF in practice; tracebacks are capped).

The user's script can append to this file too (it knows the bundle), so every line ptprof's child writes
carries "seq" ("<pid>.<n>", rising per process) and, last, "mac": HMAC-SHA256 of the line without it
under the run's key. The launcher (core/runner/auth.py) acts only on lines whose MAC checks and whose seq
is new. The key never reaches the script's environment or a file: take_key() reads it, before the script
runs, from the pipe fd the launcher passed (PTPROF_KEY_FD; torchrun does not pass fds to its workers, so
its ranks get PTPROF_RUN_KEY in the environment), and removes the variable from os.environ.
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import re
import stat
import sys
import time

EVENTS_FILE = "events.jsonl"
MAX_TEXT = 16_000  # cap for tracebacks/messages so one line stays small

START, STEP, PHASE, CYCLE, NOTICE, EXCEPTION, END = "start", "step", "phase", "cycle", "notice", "exception", "end"


KEY_FD_ENV, KEY_ENV = "PTPROF_KEY_FD", "PTPROF_RUN_KEY"
MAC_HEX = 32  # 128 bits of HMAC-SHA256
MAC_PREFIX = b',"mac":"'
MAC_SUFFIX_LEN = len(MAC_PREFIX) + MAC_HEX + 2  # ,"mac":"<hex>"}
_key = None  # the run's key (bytes), set once by take_key() in the child
_seq = itertools.count(1)


def take_key() -> None:
    """The child, before the script runs: read the run's key from the launcher's pipe (or, under torchrun,
    the environment) and remove every trace of it from os.environ. Without one, lines go unsigned."""
    global _key
    fd_text, hex_key = os.environ.pop(KEY_FD_ENV, None), os.environ.pop(KEY_ENV, None)
    try:
        if fd_text is not None:
            fd = int(fd_text)
            try:
                data = b""
                while len(data) < 1024:
                    chunk = os.read(fd, 1024)
                    if not chunk:
                        break
                    data += chunk
            finally:
                os.close(fd)
            hex_key = data.decode("ascii").strip()
        if hex_key:
            _key = bytes.fromhex(hex_key)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"ptprof: could not read the run's key ({exc}): the launcher will not see this run\n")


def sign(line: str, key: bytes) -> str:
    """`line` (a JSON object without its newline) with "mac" appended as its last field."""
    mac = hmac.new(key, line.encode("utf-8"), hashlib.sha256).hexdigest()[:MAC_HEX]
    return line[:-1] + ',"mac":"' + mac + '"}'


class EventWriter:
    """Appends events to events.jsonl; safe to share between processes (O_APPEND, one write)."""

    def __init__(self, path: str, rank: int = 0):
        self.path = path
        self.rank = rank
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)

    def emit(self, type_: str, **fields) -> dict:
        event = {"type": type_, "t_ns": time.time_ns(), "rank": self.rank}
        for key, value in fields.items():
            if isinstance(value, str) and len(value) > MAX_TEXT:
                value = value[:MAX_TEXT // 2] + "\n…\n" + value[-MAX_TEXT // 2:]
            event[key] = value
        if _key is not None:
            event["seq"] = f"{os.getpid()}.{next(_seq)}"
        line = json.dumps(event, default=str, separators=(",", ":"))
        if _key is not None:
            line = sign(line, _key)  # ASCII (json's default): the bytes the launcher checks are these
        if self._fd is not None:
            os.write(self._fd, (line + "\n").encode("utf-8", "replace"))
        return event

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


MAX_LINE = 1 << 20  # a longer line is not one of ours: skipped (a reader never holds more than this)
READ_CHUNK = 4 << 20  # bytes read per poll at most


def read_events(path: str) -> list[dict]:
    """Every complete, valid event in the file (a torn last line or junk lines are skipped)."""
    tail = EventTail(path)
    out: list[dict] = []
    while True:
        got = tail.poll()
        if not got and not tail.more:
            return out
        out += got


class EventTail:
    """Incremental reader: poll() returns the events appended since the last poll. Lines that are not
    JSON objects with a "type" (junk, torn, too deep, too long) are skipped and counted in `skipped`.
    Only a regular file is read (a FIFO in its place would block the reader)."""

    def __init__(self, path: str, verify=None):
        self.path = path
        self.verify = verify  # bytes -> bool: a line that fails is skipped and counted in `rejected`
        self.rejected = 0
        self._offset = 0
        self._partial = b""
        self._dropping = False  # inside a line longer than MAX_LINE: skip to its end
        self.skipped = 0
        self.more = False  # the last poll stopped at READ_CHUNK: there is more to read

    def _read(self) -> bytes:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return b""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            os.lseek(fd, self._offset, os.SEEK_SET)
            chunks, size = [], 0
            while size < READ_CHUNK:
                chunk = os.read(fd, min(1 << 20, READ_CHUNK - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            self.more = size >= READ_CHUNK
            return b"".join(chunks)
        except OSError:
            return b""
        finally:
            os.close(fd)

    def poll(self) -> list[dict]:
        data = self._read()
        if not data:
            return []
        self._offset += len(data)
        lines = data.split(b"\n")
        lines[0] = self._partial + lines[0]
        tail = lines.pop()  # b"" when the data ended with a newline
        out = []
        for line in lines:
            if self._dropping:  # the end of an over-long line
                self._dropping = False
                continue
            if not line.strip():
                continue
            if self.verify is not None and not self.verify(line):
                self.rejected += 1
                continue
            event = _parse(line)
            if event is None:
                self.skipped += 1
            else:
                out.append(event)
        if len(tail) > MAX_LINE:
            if not self._dropping:
                self.skipped += 1
            self._dropping, tail = True, b""
        self._partial = tail
        return out


def _parse(line: bytes) -> dict | None:
    if len(line) > MAX_LINE:
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _kineto_safe(obj):
    if isinstance(obj, str):  # a user's source line: `print(f"loss {x}")`, a Windows path
        return _CONTROL.sub(" ", obj.replace("\\", "/").replace('"', "'"))
    if isinstance(obj, dict):
        return {_kineto_safe(str(k)): _kineto_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_kineto_safe(v) for v in obj]
    return obj


def kineto_json(obj) -> str:
    """JSON for prof.add_metadata_json with no backslash in it: Kineto's writer turns every backslash of a
    metadata value into '/' (sanitizeStrForJSON, for Windows paths), so an escaped quote `\\"` became `/"`
    and broke the trace header (measured on the H200: a sync site's `print(f"...")` line lost the
    header's keys). Quotes become ', backslashes /, control characters spaces; non-ASCII stays UTF-8."""
    return json.dumps(_kineto_safe(obj), ensure_ascii=False)

"""events.jsonl: the child's running log of what happens, one JSON object per line (stdlib only).

The child (core/runner/child.py, in the user's interpreter) appends; the GUI controller and
`ptprof record` tail it. Every event has "type", "t_ns" (wall clock, time.time_ns) and "rank".

    {"type": "start", "pid", "python", "torch_version", "cuda", "devices", "world_size", "argv", "cwd",
     "module", "device_properties": [{id, name, totalGlobalMem, numSms, ...}], "schedule"}
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
"""
from __future__ import annotations

import json
import os
import time

EVENTS_FILE = "events.jsonl"
MAX_TEXT = 16_000  # cap for tracebacks/messages so one line stays small

START, STEP, PHASE, CYCLE, NOTICE, EXCEPTION, END = "start", "step", "phase", "cycle", "notice", "exception", "end"


class EventWriter:
    """Appends events to events.jsonl; safe to share between processes (O_APPEND, one write)."""

    def __init__(self, path: str, rank: int = 0):
        self.path = path
        self.rank = rank
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, type_: str, **fields) -> dict:
        event = {"type": type_, "t_ns": time.time_ns(), "rank": self.rank}
        for key, value in fields.items():
            if isinstance(value, str) and len(value) > MAX_TEXT:
                value = value[:MAX_TEXT // 2] + "\n…\n" + value[-MAX_TEXT // 2:]
            event[key] = value
        line = json.dumps(event, default=str, separators=(",", ":")) + "\n"
        if self._fd is not None:
            os.write(self._fd, line.encode("utf-8", "replace"))
        return event

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_events(path: str) -> list[dict]:
    """Every complete, valid event in the file (a torn last line or junk lines are skipped)."""
    tail = EventTail(path)
    return tail.poll()


class EventTail:
    """Incremental reader: poll() returns the events appended since the last poll."""

    def __init__(self, path: str):
        self.path = path
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return []
        if not data:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when the data ended with a newline
        out = []
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and "type" in event:
                out.append(event)
        return out

"""torch.profiler's schedule / profile / record_function state machine (as torch 2.x's profiler.py), recording
only record_function ranges (ProfilerStep#N, ptprof::window_end_sync, the script's own) into a small Chrome
trace that ptprof can open."""
import json
import os
import threading
import time
from enum import Enum

import torch


class ProfilerActivity(Enum):
    CPU = 0
    CUDA = 1


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    def schedule_fn(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


class _ExperimentalConfig:
    if torch.LEGACY:
        def __init__(self, profiler_metrics=None, profiler_measure_per_kernel=False, verbose=False):
            self.verbose = verbose
    else:
        def __init__(self, profiler_metrics=None, profiler_measure_per_kernel=False, verbose=False,
                     performance_events=None, enable_cuda_sync_events=False):
            self.verbose, self.enable_cuda_sync_events = verbose, enable_cuda_sync_events


_active = []  # profiles that record right now
_lock = threading.Lock()


class record_function:
    def __init__(self, name, args=None):
        self.name = name

    def __enter__(self):
        self.t0 = time.time_ns()
        return self

    def __exit__(self, *exc):
        t1 = time.time_ns()
        with _lock:
            for prof in _active:
                prof._events.append((self.name, self.t0, t1, threading.get_ident()))
        return False


class profile:
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None):
        self.activities = activities or [ProfilerActivity.CPU]
        self.schedule = schedule or (lambda step: ProfilerAction.RECORD)
        self.on_trace_ready = on_trace_ready
        self.record_steps = True
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self._events, self._metadata, self._recording = [], {}, False

    # the state machine of torch/profiler/profiler.py
    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        self._transit_action(self.current_action, None)

    def step(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev == A.RECORD_AND_SAVE or (cur is None and prev in recording):
            self._stop_trace()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        elif prev in recording and cur not in recording:
            self._stop_trace()
        if cur in recording and (prev not in recording or prev == A.RECORD_AND_SAVE):
            self._start_trace()

    def _start_trace(self):
        self._events = []
        with _lock:
            _active.append(self)
        self._recording = True

    def _stop_trace(self):
        with _lock:
            if self in _active:
                _active.remove(self)
        self._recording = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # results
    def add_metadata_json(self, key, value):
        self._metadata[key] = json.loads(value)

    if not torch.LEGACY:
        def preset_metadata_json(self, key, value):
            self._metadata[key] = json.loads(value)

    def export_chrome_trace(self, path):
        pid = os.getpid()
        events = [{"ph": "X", "cat": "user_annotation", "name": name, "pid": pid, "tid": tid % 100000,
                   "ts": t0 / 1000.0, "dur": (t1 - t0) / 1000.0, "args": {}}
                  for name, t0, t1, tid in sorted(self._events, key=lambda e: e[1])]
        trace = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events,
                 "traceName": path, "fake_torch": torch.__version__}
        trace.update(self._metadata)
        with open(path, "w") as fh:
            json.dump(trace, fh)

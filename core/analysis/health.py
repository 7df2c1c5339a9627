"""Can I trust this trace? Checks of the trace itself, before any finding is read.

`check(trace_set)` -> [Health(code, severity, message, count)], the same list in `info --json`,
`analyze --json` (top level `health`), report.html and the trace tab's banner:
  launch_without_gpu   launch calls (cudaLaunchKernel / cuLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync)
                       with no GPU event (correlation): the worst step's share (cuDNN RNN memsets, which
                       launch nothing, are not counted)
  gpu_without_launch   most GPU events without a launch record: per-step GPU work is guessed
  gpu_lag_at_end       those missing GPU events are in the last steps: the window closed before the GPU
                       caught up (the runner syncs the device before it closes a window)
  stream_overlap       kernels overlapping on one stream by more than clock noise (1 µs); info up to 20 µs
                       (Hopper's programmatic dependent launch overlaps that much), else a warning
  zero_duration        GPU events of zero duration; negative durations / unmatched B/E (loader warnings)
  truncated            the file was cut off (a crashed run): the loader's warning, as a banner above the timeline
  outside_span         GPU events starting before the first or after the last CPU event (clock skew)
  no_steps             no ProfilerStep#N markers: per-step numbers use the whole trace
  step_without_gpu     steps that launched no GPU work on a GPU trace
  dropped_records      Kineto / CUPTI dropped-records or buffer-overflow markers
  profiler_overhead    the share of step time in profiler overhead events (cat "overhead", "Trace" spans)
  recording_inflation  a run bundle's recorded steps against its unprofiled `wait` steps (events.jsonl)
  run_status           a run bundle whose run.json says it did not end cleanly (incomplete: os._exit / crash
                       mid-window; launcher_lost; still running; failed)
Thresholds: resources/rules.toml [health].
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import resource_files
from core.analysis.intervals import Intervals
from core.analysis.rows import kind_rows, launch_ends, named_rows
from core.analysis.step_times import step_times
from core.runner.events_check import valid
from core.runner.protocol import read_events
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel, TraceSet

CLOCK_SLACK_NS = 2_000  # CUPTI's GPU and CPU timestamps agree within ~1 µs; launch -> start is >= 2 µs

LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel", "cudaMemcpyAsync", "cudaMemsetAsync")
_DROPPED = re.compile(r"drop|overflow|buffer full|lost", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Health:
    code: str
    severity: str  # info | warning | error
    message: str
    count: int

    def to_json(self) -> dict:
        return {"code": self.code, "severity": self.severity, "message": self.message, "count": int(self.count)}


def check(ts: TraceSet, config: dict | None = None) -> list[Health]:
    # resources/rules.toml [health], under the config's own values
    cfg = {**resource_files.load_toml("rules.toml")["health"], **(config or {}).get("health", {})}
    out: list[Health] = []
    multi = len(ts.models) > 1
    for m in ts.models:
        who = f"{Path(m.path).name}: " if multi else ""
        out.extend(Health(h.code, h.severity, who + h.message, h.count) for h in _model_checks(m, cfg))
    infl = recording_inflation(ts)
    if infl is not None and infl >= float(cfg["inflation_warn"]):
        out.append(Health("recording_inflation", "warning",
                          f"recording slowed the CPU side of the loop {infl:.2f}x (recorded vs unprofiled steps of this "
                          "run): CPU times are high, GPU times and shares hold; savings are given in unprofiled time", 1))
    elif infl is not None:
        out.append(Health("recording_inflation", "info",
                          f"recording changed the step {infl:.2f}x against unprofiled steps of this run", 1))
    status = run_status(ts.bundle)
    if status is not None:
        out.append(status)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(out, key=lambda h: order.get(h.severity, 3))


_STATUS_TEXT = {
    "incomplete": "the script ended without ptprof's end of run (os._exit, a crash or a kill)",
    "launcher_lost": "the launcher (ptprof record / the app) died before the run ended; the script stopped itself",
    "running": "run.json still says \"running\": the run is being recorded now, or its launcher died without a word",
    "failed": "the script failed",
    "oom": "the script ran out of GPU memory (the OOM view and the `oom` finding show what filled it)",
}


def run_status(bundle) -> Health | None:
    """A run bundle whose run.json says the run did not end cleanly: the traces may lack the window that
    was in progress (run.json is the user's file: every field is checked before it is used)."""
    status = bundle.get("status") if isinstance(bundle, dict) else None
    if not isinstance(status, str) or status not in _STATUS_TEXT:
        return None
    notices = bundle.get("notices")
    lost = [n for n in notices if isinstance(n, str) and "window" in n] if isinstance(notices, list) else []
    if lost:  # the launcher's own words: which rank, how it ended, the step whose window was lost
        return Health("run_status", "warning", lost[0][:400], 1)
    msg = _STATUS_TEXT[status]
    code = bundle.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and status != "running":
        msg += f" (exit {code})"
    exc = bundle.get("exception")
    if status in ("failed", "oom") and isinstance(exc, str) and exc:
        msg += ": " + exc.splitlines()[0]
    elif status in ("launcher_lost", "running"):
        msg += ": the trace window in progress may be missing"
    return Health("run_status", "warning", msg[:400], 1)


def _model_checks(model: TraceModel, cfg: dict) -> list[Health]:
    out: list[Health] = []
    s = model.slices
    gpu = kind_rows(model, GPU_KINDS)  # few rows next to millions of CPU / Python slices: no n-sized masks
    has_gpu = bool(len(gpu))
    if not len(model.steps):
        out.append(Health("no_steps", "warning", "no ProfilerStep#N markers: per-step numbers use the whole trace "
                          "(step the profiler with prof.step() or record with ptprof record)", 1))
    out.extend(_launches(model, cfg))
    if has_gpu:
        times = step_times(model)
        empty = int((np.diff(times.work_offsets) == 0).sum()) if not times.synthetic else 0
        if empty:
            out.append(Health("step_without_gpu", "warning", f"{empty} of {len(times)} steps launched no GPU work on a "
                              "GPU trace (CUPTI did not record them, or the step does no GPU work)", empty))
        out.extend(_overlaps(model, cfg))
        out.extend(_unlinked_gpu(model, gpu))
        zero = int((s.dur_ns[gpu] == 0).sum())
        if zero:
            out.append(Health("zero_duration", "info", f"{zero} GPU events have zero duration", zero))
        cpu = kind_rows(model, (Kind.CPU_OP, Kind.RUNTIME, Kind.ANNOTATION))
        if len(cpu):
            # a GPU op that starts before its own launch call: the clocks disagree (a real problem); GPU
            # work outside the CPU span with no launch in the trace was launched before the window opened
            # (a GPU that lags the CPU), which is expected and said as information
            flows = model.flows
            launch = flows.kind == FlowKind.LAUNCH
            early = int((s.ts_ns[flows.dst[launch]] < s.ts_ns[flows.src[launch]] - CLOCK_SLACK_NS).sum())
            if early:
                out.append(Health("clock_skew", "warning", f"{early} GPU events start before their launch call "
                                  "(GPU and CPU clocks disagree: GPU times are shifted)", early))
            first_cpu, last_cpu = int(s.ts_ns[cpu].min()), int((s.ts_ns[cpu] + s.dur_ns[cpu]).max())
            g_ts = s.ts_ns[gpu]
            outside = int((~launch_ends(model, gpu) & ((g_ts < first_cpu) | (g_ts > last_cpu))).sum())
            if outside:
                out.append(Health("outside_span", "info", f"{outside} GPU events outside the CPU events' span, "
                                  "launched before the window (the GPU lagged the CPU)", outside))
    for warning in model.warnings:
        if warning.startswith("file is truncated"):  # a crashed run's file: every number covers only its first part
            out.append(Health("truncated", "warning", warning + "; the timeline and every number cover only that part", 1))
        for pat, code, text in ((r"(\d+) events had a negative duration", "negative_duration", "events had a negative "
                                 "duration (clamped to 0)"),
                                (r"(\d+) begin/end events without a partner", "unmatched_begin_end",
                                 "begin/end (B/E) events had no partner (dropped)")):
            hit = re.search(pat, warning)
            if hit:
                count = int(hit.group(1))
                out.append(Health(code, "warning", f"{count} {text}", count))
    dropped = _dropped_markers(model)
    if dropped:
        out.append(Health("dropped_records", "error", "the profiler reports lost records: " + "; ".join(dropped[:3]),
                          len(dropped)))
    out.extend(_overhead(model, cfg))
    return out


def _launches(model: TraceModel, cfg: dict) -> list[Health]:
    s = model.slices
    ids = np.array([model.strings.find(n_steps) for n_steps in LAUNCH_NAMES])
    calls = named_rows(model, ids, (Kind.RUNTIME,))
    if not len(calls) or not len(model.steps):
        return []
    linked = launch_ends(model, calls, "src")  # per call
    if (~linked).any():  # cuDNN's RNN forward calls cudaMemsetAsync without GPU work (evenly, every step):
        linked |= _inside_cudnn_rnn(model, calls)  # not lost records (a cuDNN LSTM had 520 such calls)
    st = model.steps
    step = np.searchsorted(st.ts_ns, s.ts_ns[calls], side="right") - 1
    inside = (step >= 0) & (s.ts_ns[calls] < (st.ts_ns + st.dur_ns)[np.maximum(step, 0)])
    calls, step, linked = calls[inside], step[inside], linked[inside]
    if not len(calls):
        return []
    n_steps = len(st)
    total = np.bincount(step, minlength=n_steps)
    missing = np.bincount(step, weights=~linked, minlength=n_steps).astype(np.int64)
    share = np.where(total > 0, missing / np.maximum(total, 1), 0.0)
    out = []
    warn = float(cfg["missing_launch_pct"]) / 100.0
    if missing.sum() == 0:
        return out
    tail = max(1, n_steps // 4)
    late = share[-tail:].mean() if n_steps > 1 else 0.0
    early = share[:-tail].mean() if n_steps > tail else 0.0
    worst = int(np.argmax(share))
    out.append(Health("launch_without_gpu", "warning" if share.max() >= warn else "info",
                      f"{int(missing.sum())} of {int(total.sum())} launches have no GPU event (worst: step "
                      f"{int(st.number[worst])}, {100 * share[worst]:.1f} %)", int(missing.sum())))
    if n_steps > 1 and late >= warn and late > 4 * early:
        out.append(Health("gpu_lag_at_end", "warning",
                          f"the last {tail} step(s) miss {100 * late:.0f} % of their GPU work: the window closed "
                          "before the GPU caught up (their GPU spans are short; sync the device before the window "
                          "ends, as ptprof record does)", int(missing[-tail:].sum())))
    return out


def _inside_cudnn_rnn(m: TraceModel, calls: np.ndarray) -> np.ndarray:
    """bool per call: a cudaMemsetAsync inside a cuDNN RNN op (aten::_cudnn_rnn / its backward)."""
    memset = m.strings.find("cudaMemsetAsync")
    rnn = named_rows(m, np.array([m.strings.find(n) for n in ("aten::_cudnn_rnn", "aten::_cudnn_rnn_backward")]),
                     (Kind.CPU_OP,))
    out = np.zeros(len(calls), bool)
    if memset < 0 or not len(rnn):
        return out
    s = m.slices
    inside = Intervals.union_of(s.ts_ns[rnn], s.ts_ns[rnn] + s.dur_ns[rnn]).contains(s.ts_ns[calls])
    return inside & (s.name[calls] == memset) & np.isin(s.track[calls], np.unique(s.track[rnn]))


def _unlinked_gpu(m: TraceModel, gpu: np.ndarray) -> list[Health]:
    """Most GPU work without a launch record: each step's GPU work is then guessed from its stream's previous
    linked op (a trace whose launch records were lost put 273.6 ms of GPU work in a 100 ms step, unwarned)."""
    if not len(gpu) or not len(m.steps):
        return []
    unlinked = int((~launch_ends(m, gpu)).sum())
    if unlinked * 2 <= len(gpu):
        return []
    return [Health("gpu_without_launch", "warning", f"{unlinked} of {len(gpu)} GPU events have no launch record "
                   "(correlation): per-step GPU times and the replay place them by their stream's previous "
                   "launched op and may be wrong", unlinked)]


def _overlaps(m: TraceModel, cfg: dict) -> list[Health]:
    s = m.slices
    noise = int(cfg["overlap_noise_ns"])
    gpu = kind_rows(m, GPU_KINDS)
    if len(gpu) < 2:
        return []
    order = np.lexsort((s.ts_ns[gpu], s.track[gpu]))
    rows = gpu[order]
    tr, ts, end = s.track[rows], s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]
    same = np.concatenate([[False], tr[1:] == tr[:-1]])
    prev_end = np.full(len(rows), np.iinfo(np.int64).min)
    for t in np.unique(tr).tolist():  # the running end restarts on each stream (streams are few)
        sel = np.flatnonzero(tr == t)
        prev_end[sel[1:]] = np.maximum.accumulate(end[sel])[:-1]
    over = np.where(same, prev_end - ts, 0)
    n = int((over > noise).sum())
    if not n:
        return []
    worst = int(over.max())
    pdl = worst <= int(cfg["overlap_warn_ns"])
    why = ("up to {:.1f} µs: the size of Hopper's programmatic dependent launch (the next kernel's prologue "
           "overlaps the previous one's tail)" if pdl else "up to {:.1f} µs: a stream runs in order, so clocks "
           "or attribution are off").format(worst / 1000)
    return [Health("stream_overlap", "info" if pdl else "warning", f"{n} GPU events start more than "
                   f"{noise / 1000:g} µs before the previous one on their stream ends ({why})", n)]


def _dropped_markers(m: TraceModel) -> list[str]:
    texts = []
    for k, v in m.meta.extra.items():
        blob = f"{k} {v}" if isinstance(v, str) else k
        if _DROPPED.search(blob) and ("record" in blob.lower() or "buffer" in blob.lower() or "cupti" in blob.lower()):
            texts.append(f"{k}: {v}"[:160] if isinstance(v, str) else str(k))
    names = np.unique(np.concatenate([m.slices.name[kind_rows(m, (Kind.TRACE,))], m.instants.name]))
    for nid in names.tolist():
        name = m.strings[int(nid)]
        if _DROPPED.search(name):
            texts.append(name[:160])
    return texts


def _overhead(m: TraceModel, cfg: dict) -> list[Health]:
    s = m.slices
    if not len(m.steps):
        return []
    # Kineto's overhead activities (cat "overhead": CUPTI buffer requests / flushes); the "Trace" span of
    # the whole session is not overhead. Only among the rows a profiler activity can be (Kind.OTHER: any
    # category not modelled, "overhead" included): a Python frame or an op named "...overhead..." is the
    # user's code (`get_structured_logging_overhead` in torch/_logging is in every with_stack trace), and
    # the rare kind's rows are looked at instead of two passes over the 37M rows of a 10 GB trace
    ids = m.strings.ids_matching(lambda c: c.lower() == "overhead")
    names = m.strings.ids_matching(lambda n: "overhead" in n.lower() or n == "Activity Buffer Request")
    other = (Kind.OTHER,)
    sel = np.union1d(named_rows(m, ids, kinds=other, column="cat"), named_rows(m, names, kinds=other))
    if not len(sel):
        return []
    overhead = Intervals.union_of(s.ts_ns[sel], s.ts_ns[sel] + s.dur_ns[sel])
    st = m.steps
    inside = int(overhead.covered(st.ts_ns, st.ts_ns + st.dur_ns).sum())
    share = 100.0 * inside / max(int(st.dur_ns.sum()), 1)
    if share < float(cfg["overhead_info_pct"]):
        return []
    sev = "warning" if share >= float(cfg["overhead_warn_pct"]) else "info"
    return [Health("profiler_overhead", sev, f"profiler overhead events cover {share:.1f} % of step time",
                   len(sel))]


def recording_inflation(ts: TraceSet) -> float | None:
    """Median recorded step / median unprofiled step of a run bundle (events.jsonl: `step` events carry
    dur_ns, `phase` events say when the profiler waited / warmed up / recorded). None when unknown."""
    path = Path(ts.path) / "events.jsonl"
    if not path.is_file():
        return None
    phase, fresh, teardown = "start", True, False
    waits: list[int] = []
    active: list[int] = []
    first_wait: list[int] = []  # the wait phase's first step: its profiler start is the hook's, not the step's
    # the user's process wrote this file: read_events skips junk, torn, too-deep and too-long lines,
    # valid() drops events whose fields have the wrong type
    for ev in read_events(str(path)):
        if not valid(ev):
            continue
        if ev.get("type") == "start":
            teardown = ev.get("teardown_cupti") is True
        elif ev.get("type") == "phase":
            phase, fresh = str(ev.get("phase", "")), True
        elif ev.get("type") == "step" and isinstance(ev.get("dur_ns"), int):
            # the first step of a phase pays its switch (profiler start, the first one start-up)
            if fresh:
                fresh = False
                if phase == "wait" and not waits:
                    first_wait.append(int(ev["dur_ns"]))
                continue
            # steps after the window are unprofiled only when the runner tore CUPTI down (TEARDOWN_CUPTI=1):
            # without it Kineto stays attached and they ran 1.15-1.3x slower (H100, tests/data/device/pairs2)
            # the step's own phase where it says one: a new step source's first step ("start", 96.9 ms after
            # a forward window on the H200 small_graphed bundle) was counted as recorded
            ph = ev.get("phase") if isinstance(ev.get("phase"), str) else phase
            unprofiled = ph == "wait" or (ph == "done" and teardown)
            (waits if unprofiled else active if ph == "active" else []).append(int(ev["dur_ns"]))
    if len(waits) < 2:  # a bundle recorded with wait=1 (the default before issue 28): its one wait step
        waits += first_wait
    if not waits or len(active) < 2:
        return None
    # steps that waited for something recording does not slow - a starved DataLoader's stall (465 ms among
    # 3 ms steps: "78.5x"), a recompile - are not the loop's CPU work: dropped from both sides
    typical = float(np.median(waits + active))
    wait_steps = [x for x in waits if x <= 20 * typical] or waits
    active_steps = [x for x in active if x <= 20 * typical] or active
    return float(np.median(active_steps) / max(np.median(wait_steps), 1))

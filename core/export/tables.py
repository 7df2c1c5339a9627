"""Export tables: kernels, ops, steps, findings, NVML as named columns of plain numbers.

One `ExportTable` per CSV file. Column names carry their unit (`total_us`, `gpu_busy_pct`,
`mem_peak_mb`); `SCHEMAS` documents every column and fixes their order (the README lists them and a
test holds the two together). Times: µs as floats with ns precision; memory: MiB ("mb", 2**20 bytes,
as nvidia-smi counts). Missing values are empty cells (None / NaN).
Multi-rank sets get one block of rows per rank (the `rank` column).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis import stats, steps
from core.trace.model import CounterTable, Kind, TraceSet
from core.trace.strings import StringTable

MIB = float(1 << 20)


@dataclass(frozen=True, slots=True)
class ExportTable:
    name: str  # file stem: "kernels" -> kernels.csv
    columns: tuple[str, ...]
    data: tuple  # one sequence (numpy array or list) per column, all of one length

    def __len__(self) -> int:
        return len(self.data[0]) if self.data else 0


SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "kernels": (
        ("rank", "rank of the trace file (0 for single-process traces)"),
        ("name", "kernel / memcpy / memset name (one row per distinct kind and name)"),
        ("kind", "kernel, memcpy or memset (kernel rows first, then memcpy, then memset; each by total time)"),
        ("calls", "number of launches"),
        ("total_us", "sum of durations"),
        ("mean_us", "mean duration"),
        ("min_us", "shortest launch"),
        ("max_us", "longest launch"),
        ("p50_us", "median duration"),
        ("p95_us", "95th percentile duration (linear interpolation)"),
        ("stddev_us", "sample standard deviation of the duration (0 for one call)"),
        ("gpu_pct", "kernel rows: share of this rank's kernel time; memcpy / memset rows: share of its memcpy / "
                    "memset time"),
        ("grid", "grid of the longest launch, e.g. [128, 1, 1]"),
        ("block", "block of the longest launch"),
        ("registers", "registers per thread (empty when unknown)"),
        ("occupancy_pct", "mean estimated achieved occupancy (empty when unknown)"),
    ),
    "ops": (
        ("rank", "rank of the trace file"),
        ("name", "operator / record_function name (one row per distinct name)"),
        ("calls", "number of calls"),
        ("host_total_us", "inclusive CPU time (recursive calls counted once)"),
        ("host_self_us", "exclusive CPU time"),
        ("device_us", "GPU time of kernels/memcpy/memset launched inside the op"),
        ("device_self_us", "GPU time launched by the op itself (innermost op)"),
    ),
    "steps": (
        ("rank", "rank of the trace file"),
        ("step", "ProfilerStep number (-1: the trace has no steps, the row is the whole trace)"),
        ("start_us", "step start (CPU), relative to the trace start"),
        ("dur_us", "CPU span: the ProfilerStep duration"),
        ("gpu_busy_us", "time the step's own GPU work runs (kernels/memcpy/memset its CPU ops launched; union over streams)"),
        ("gpu_busy_pct", "gpu_busy_us / effective_us"),
        ("kernel_count", "kernels the step launched (wherever they ran)"),
        ("kernel_us", "sum of those kernels' durations"),
        ("memcpy_us", "sum of the step's memcpy durations"),
        ("memset_us", "sum of the step's memset durations"),
        ("mem_peak_mb", "peak allocated GPU memory in the step (empty without memory events)"),
        ("gpu_span_us", "GPU span: the step's first GPU activity to the next step's (0 without GPU work)"),
        ("effective_us", "effective step: max(dur_us, gpu_span_us), what sets the loop's throughput"),
        ("bound", "what sets the step: gpu, cpu, sync (host syncs) or data (DataLoader)"),
        ("comm_us", "time only communication kernels (NCCL / RCCL / HCCL) run: not overlapped by compute kernels"),
        ("tflops", "achieved TFLOP/s: FLOPs from recorded shapes / dur_us (empty without record_shapes)"),
        ("mfu_pct", "model FLOPs utilisation: achieved / the device's dense peak for the dtype (empty: unknown "
                    "device)"),
    ),
    "metrics": (
        ("rank", "rank of the trace file"),
        ("metric", "overlap_pct, queue_length_mean, queue_length_max, launch_delay_p50_us, launch_delay_p95_us, "
                   "launch_delay_mean_us, launches, kernels_shorter_than_launch, memcpy_gbps, tflops, mfu_pct"),
        ("key", "what the row is about: the stream (queue length: 'GPU 0 stream 7') or the copy direction and "
                "memory kind (memcpy_gbps: 'HtoD Pageable -> Device'); empty for per-rank numbers"),
        ("value", "the number, in the unit its metric name gives (_pct percent, _us microseconds, gbps GB/s)"),
    ),
    "findings": (
        ("rule", "rule id (see the rule table)"),
        ("severity", "info, warning or error"),
        ("rank", "rank the finding's time ranges refer to"),
        ("title", "one-line description"),
        ("count", "occurrences"),
        ("one_off", "'one-off: 3.84 s at step 4' when the cost is paid once (a recompile, a first-step compile, a "
                    "cold start: it sits in one or few steps), not every step; empty otherwise"),
        ("lost_per_step_us", "Lost / step: the time the problem takes per profiled step (impact_us over the steps, the mean)"),
        ("lost_pct_of_mean_step", "Lost / step as % of the mean step (the same number as impact_pct)"),
        ("saves_per_step_us", "Saves / step: what the fix would give back per step in a replay of the critical path "
                              "(positive; the same number as saving_us); empty without a what-if"),
        ("saves_pct_of_mean_step", "Saves / step as % of the mean step (of the unprofiled one when the saving is in "
                                   "unprofiled time); empty without a what-if"),
        ("impact_us", "estimated time lost over the whole window (Lost / step x steps)"),
        ("impact_pct", "impact_us as a share of the profiled steps' time"),
        ("saving_us", "what the fix would save per step (median over steps, or the mean on a loop the DataLoader "
                      "paces) in a replay of the critical path; empty without a what-if"),
        ("saving_pct", "saving_us as a share of the replayed step"),
        ("estimate", "how saving_us was computed (the replay edit)"),
        ("first_start_us", "start of the first occurrence, relative to the trace start"),
        ("first_end_us", "end of the first occurrence"),
        ("ranges", "number of time ranges"),
        ("source_file", "user source file (empty when unknown)"),
        ("source_line", "line number"),
        ("source_function", "function name"),
        ("facts", "the finding's summary line: named values joined with ' · ' (kernels, runs, sync sites, ...)"),
        ("evidence", "evidence lines joined with ' | ' (the events, one shape per finding)"),
        ("fix", "suggested fix"),
    ),
    "nvml": (
        ("t_unix_ns", "sample wall-clock time (ns since the epoch)"),
        ("t_us", "sample time relative to the trace start (negative before the profiled window)"),
        ("gpu", "GPU index"),
        ("gpu_util_pct", "SM utilisation"),
        ("mem_util_pct", "memory-controller utilisation"),
        ("mem_used_mb", "device memory in use (MiB)"),
        ("mem_total_mb", "device memory (MiB)"),
        ("power_w", "power draw"),
        ("temp_c", "temperature"),
        ("sm_clock_mhz", "SM clock"),
    ),
}

# NVML sample column (bundle nvml.csv or *.nvml.csv) -> export column with unit
NVML_ALIASES = {
    "gpu_util": "gpu_util_pct", "util": "gpu_util_pct", "gpu_util_pct": "gpu_util_pct",
    "mem_util": "mem_util_pct", "mem_util_pct": "mem_util_pct",
    "mem_used_mb": "mem_used_mb", "mem_used": "mem_used_mb",
    "mem_total_mb": "mem_total_mb", "mem_total": "mem_total_mb",
    "power_w": "power_w", "power": "power_w",
    "temp_c": "temp_c", "temperature": "temp_c",
    "sm_clock_mhz": "sm_clock_mhz", "sm_clock": "sm_clock_mhz",
}


def columns_of(name: str) -> tuple[str, ...]:
    return tuple(c for c, _ in SCHEMAS[name])


def _us(ns) -> np.ndarray:
    return np.round(np.asarray(ns, dtype=np.float64) / 1000.0, 3)


def _names(strings: StringTable, ids: np.ndarray) -> list[str]:
    return [strings[int(i)] for i in ids]


def _concat(parts: list[tuple]) -> tuple:
    if not parts:
        return ()
    out = []
    for col in zip(*parts):
        if all(isinstance(c, np.ndarray) for c in col):
            out.append(np.concatenate(col))
        else:
            out.append([v for c in col for v in (c.tolist() if isinstance(c, np.ndarray) else c)])
    return tuple(out)


def _table(name: str, parts: list[tuple]) -> ExportTable:
    cols = columns_of(name)
    data = _concat(parts) if parts else tuple([] for _ in cols)
    return ExportTable(name, cols, data)


KIND_LABELS = {Kind.KERNEL: "kernel", Kind.MEMCPY: "memcpy", Kind.MEMSET: "memset"}


def select_rows(table: ExportTable, column: str, keys_by_rank: dict[int, set]) -> ExportTable:
    """The rows of `table` whose `column` value is in keys_by_rank[its rank] (ranks not named: none): the
    rows a filtered table in the window shows, in the table's own order."""
    ranks = table.data[table.columns.index("rank")]
    values = table.data[table.columns.index(column)]
    keep = [i for i, (rank, value) in enumerate(zip(ranks, values))
            if (value.item() if isinstance(value, np.generic) else value) in keys_by_rank.get(int(rank), ())]
    idx = np.asarray(keep, np.int64)
    data = tuple(col[idx] if isinstance(col, np.ndarray) else [col[i] for i in keep] for col in table.data)
    return ExportTable(table.name, table.columns, data)


def kind_labels(kinds: np.ndarray) -> list[str]:
    return [KIND_LABELS.get(Kind(int(k)), "other") for k in kinds]


def rank_parts(ts, key: str):
    """The per-rank parts a run view carries (core/ranks/views.py: computed by the rank's worker with the
    functions below), or None for a loaded set."""
    getter = getattr(ts, "report_parts", None)
    return getter(key) if getter is not None else None


def kernels_part(m) -> tuple:
    """One model's rows of kernels.csv."""
    kt = stats.kernel_table(m)
    n = len(kt)
    reg = kt.registers.astype(np.float64)
    reg[kt.registers < 0] = np.nan
    return (np.full(n, m.rank, np.int64), _names(m.strings, kt.name), kind_labels(kt.kind), kt.calls,
            _us(kt.total_ns), _us(kt.mean_ns), _us(kt.min_ns), _us(kt.max_ns), _us(kt.p50_ns),
            _us(kt.p95_ns), _us(kt.stddev_ns), np.round(kt.gpu_pct, 3),
            _names(m.strings, kt.grid), _names(m.strings, kt.block), reg,
            np.round(kt.occupancy_pct.astype(np.float64), 3))


def kernels(ts: TraceSet) -> ExportTable:
    """kernels.csv: `core.analysis.stats.kernel_table`, the same rows the Kernels tab shows."""
    parts = rank_parts(ts, "kernels")
    return _table("kernels", parts if parts is not None else [kernels_part(m) for m in ts.models])


def ops_part(m) -> tuple:
    ot = stats.op_table(m)
    return (np.full(len(ot), m.rank, np.int64), _names(m.strings, ot.name), ot.calls,
            _us(ot.host_total_ns), _us(ot.host_self_ns), _us(ot.device_ns), _us(ot.device_self_ns))


def ops(ts: TraceSet) -> ExportTable:
    parts = rank_parts(ts, "ops")
    return _table("ops", parts if parts is not None else [ops_part(m) for m in ts.models])


def step_extras(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(comm_ns, tflops, mfu_pct) per step, in step_stats' row order (the Steps tab shows the same)."""
    from core.analysis.breakdown import step_breakdown
    from core.analysis.flops import step_flops
    b = step_breakdown(model)
    f = step_flops(model)
    return b.comm_ns, f.tflops, f.mfu_pct


def steps_part(m) -> tuple:
    st = steps.step_stats(m)
    peak = st.mem_peak_bytes.astype(np.float64) / MIB
    peak[st.mem_peak_bytes < 0] = np.nan
    comm_ns, tflops, mfu = step_extras(m)
    return (np.full(len(st), m.rank, np.int64), st.number, np.asarray(st.ts_ns, np.int64), _us(st.dur_ns),
            _us(st.gpu_busy_ns), np.round(st.gpu_busy_pct, 3), st.kernel_count, _us(st.kernel_ns),
            _us(st.memcpy_ns), _us(st.memset_ns), np.round(peak, 3), _us(st.gpu_span_ns),
            _us(st.effective_ns), st.bound.tolist(), _us(comm_ns), np.round(tflops, 4),
            np.round(mfu, 3))


def steps_table(ts: TraceSet) -> ExportTable:
    parts = rank_parts(ts, "steps")  # a part's start column is ns (a rank's part made on its own clock moves by an
    parts = parts if parts is not None else [steps_part(m) for m in ts.models]  # integer): µs here
    return _table("steps", [p[:2] + (_us(p[2]),) + p[3:] for p in parts])


def metrics_table(ts: TraceSet) -> ExportTable:
    """metrics.csv: core.analysis.metrics per rank, one row per number (the report's Metrics section)."""
    from core.analysis.metrics import trace_metrics
    rank, metric, key, value = [], [], [], []

    def add(r, name, k, v):
        if v is None:
            return
        rank.append(r)
        metric.append(name)
        key.append(k)
        value.append(float(v))

    for rm in trace_metrics(ts):
        add(rm.rank, "overlap_pct", "", rm.overlap_pct)
        for q in rm.queue_length:
            add(rm.rank, "queue_length_mean", f"GPU {q['device']} stream {q['stream']}", q["mean"])
            add(rm.rank, "queue_length_max", f"GPU {q['device']} stream {q['stream']}", q["max"])
        d = rm.launch_delay_us
        for k in ("p50", "p95", "mean"):
            add(rm.rank, f"launch_delay_{k}_us", "", d.get(k))
        add(rm.rank, "launches", "", d.get("launches"))
        add(rm.rank, "kernels_shorter_than_launch", "", rm.kernels_shorter_than_launch if d else None)
        for c in rm.memcpy_gbps:
            add(rm.rank, "memcpy_gbps", f"{c['direction']} {c['memory']}".strip(), c["gbps"])
        add(rm.rank, "tflops", "", rm.tflops)
        add(rm.rank, "mfu_pct", "", rm.mfu_pct)
    return ExportTable("metrics", columns_of("metrics"), (np.asarray(rank, np.int64), metric, key,
                                                          np.asarray(value, np.float64)))


def findings_table(findings, ts: TraceSet | None = None) -> ExportTable:
    """`findings`: Finding objects (core.rules) or their JSON dicts (ARCHITECTURE.md contract)."""
    from core.analysis import vocab
    from core.analysis.vocab import one_off_text
    from core.export.findings import as_dict, facts_text

    rows = [as_dict(f) for f in findings]
    ranks = [m.rank for m in ts.models] if ts is not None else [0]
    cols = columns_of("findings")
    data: list[list] = [[] for _ in cols]
    for d in rows:
        ranges = d.get("time_ranges") or []
        src = d.get("source") or {}
        first = ranges[0] if ranges else (None, None)
        mi = int(d.get("model_index") or 0)
        rank = d.get("rank", ranks[mi] if mi < len(ranks) else mi)
        spct = vocab.saves_pct(d)
        values = (d.get("rule", ""), d.get("severity", ""), rank, d.get("title", ""), d.get("count"), one_off_text(d),
                  _round(vocab.lost_per_step_ns(d), 1e-3), _round(vocab.lost_pct(d), 1.0),
                  _round(d.get("saving_ns"), 1e-3), _round(spct, 1.0),
                  _round(d.get("impact_ns"), 1e-3), _round(d.get("impact_pct"), 1.0),
                  _round(d.get("saving_ns"), 1e-3), _round(d.get("saving_pct"), 1.0), d.get("estimate") or "",
                  _round(first[0], 1e-3), _round(first[1], 1e-3), len(ranges), src.get("file") or "",
                  src.get("line"), src.get("function") or "", facts_text(d.get("facts")),
                  " | ".join(str(e) for e in d.get("evidence") or ()),
                  d.get("fix") or "")
        for col, v in zip(data, values):
            col.append(v)
    return ExportTable("findings", cols, tuple(data))


def _round(v, scale: float):
    if v is None:
        return None
    return round(float(v) * scale, 3)


def nvml(ts: TraceSet) -> ExportTable | None:
    """NVML samples pivoted to one row per (time, gpu); None when the set has none."""
    table, strings = ts.nvml, ts.nvml_strings
    if table is None or strings is None or not len(table):
        return None
    return nvml_from_counters(table, strings, ts.base_unix_ns)


def nvml_from_counters(table: CounterTable, strings: StringTable, base_unix_ns: int) -> ExportTable:
    sids = np.unique(table.series)
    gpu_of, col_of = {}, {}
    for sid in sids.tolist():
        gpu, _, metric = strings[sid].partition("/")
        gpu_of[sid] = int(gpu[3:]) if gpu.startswith("gpu") and gpu[3:].isdigit() else 0
        col_of[sid] = NVML_ALIASES.get(metric, metric)
    fixed = columns_of("nvml")
    extra = sorted(set(col_of.values()) - set(fixed))
    cols = fixed + tuple(extra)
    gpu = np.array([gpu_of[int(s)] for s in table.series], np.int64) if len(table) else np.zeros(0, np.int64)
    key_ts, key_gpu = table.ts_ns, gpu
    keys, inv = np.unique(np.stack([key_ts, key_gpu], axis=1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    n = len(keys)
    data = {c: np.full(n, np.nan) for c in cols[3:]}
    for sid in sids.tolist():
        m = table.series == sid
        data[col_of[sid]][inv[m]] = table.value[m]
    t_rel = keys[:, 0]
    head = (t_rel + int(base_unix_ns), _us(t_rel), keys[:, 1])
    return ExportTable("nvml", cols, head + tuple(data[c] for c in cols[3:]))


def all_tables(ts: TraceSet, findings=()) -> list[ExportTable]:
    out = [kernels(ts), ops(ts), steps_table(ts), metrics_table(ts), findings_table(findings, ts)]
    nv = nvml(ts)
    if nv is not None:
        out.append(nv)
    return out

"""What `ptprof mcp` answers: small, typed, size-bounded JSON over the same analysis as the CLI (core.api).

Each tool is a plain function of JSON arguments returning one JSON object; core/commands/mcp.py registers them
with the MCP SDK. Bounds: every list has a cap (the caller's `n` / `top` / `limit`, clamped), every text is cut
to MAX_TEXT characters, and the whole answer to MAX_ANSWER_BYTES of JSON; whatever was cut says so in the
answer's `cut` (what was left off and how many there were). Bad arguments raise ToolInputError with one line;
paths go through the loader's own checks (a FIFO, a device, an empty folder: one line, as the CLI says).
Loaded runs are kept in a small LRU keyed by (real path, size, mtime), so a session of calls on one trace loads
it once (a later load is the columnar cache's warm open anyway).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from core import api
from core.trace.model import Kind

MAX_ANSWER_BYTES = 48_000
MAX_TEXT = 240
MAX_ROWS = 200  # top_kernels / top_ops / findings / step rows
MAX_SLICES = 500
MAX_EVIDENCE = 5
RUNS_KEPT = 4
RECORD_TIMEOUT_S = 3_600


class ToolInputError(Exception):
    """A bad argument or input: one line for the client (the server turns it into a tool error)."""


_runs: OrderedDict[tuple, api.Run] = OrderedDict()
_runs_lock = threading.Lock()


def _key(path: str) -> tuple:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise ToolInputError(f"{path}: {exc.strerror or exc}") from None
    return real, st.st_size, st.st_mtime_ns


def open_run(path: str) -> api.Run:
    if not isinstance(path, str) or not path.strip():
        raise ToolInputError("path: give a trace file, TensorBoard log dir, multi-rank dir or run bundle")
    key = _key(path)
    with _runs_lock:
        run = _runs.get(key)
        if run is not None:
            _runs.move_to_end(key)
            return run
    try:
        run = api.load(path)
    except api.TraceParseError as exc:
        raise ToolInputError(f"{exc.path}: {exc.reason}") from None
    with _runs_lock:
        _runs[key] = run
        while len(_runs) > RUNS_KEPT:
            _runs.popitem(last=False)
    return run


def _text(s, limit: int = MAX_TEXT) -> str:
    s = "" if s is None else str(s)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates from hostile names
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _count(value, name: str, default: int, cap: int) -> tuple[int, bool]:
    """(clamped count, whether it was clamped) for n / top / limit."""
    if value is None:
        return default, False
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ToolInputError(f"{name}: expected a whole number, got {value!r}")
    n = int(value)
    if n < 1:
        raise ToolInputError(f"{name}: must be at least 1")
    return min(n, cap), n > cap


def _fit(doc: dict, list_key: str) -> dict:
    """Drop rows from doc[list_key] until the JSON fits MAX_ANSWER_BYTES; say so in doc['cut']."""
    rows = doc.get(list_key) or []
    total = doc.get("cut", {}).get(list_key, {}).get("total", len(rows))
    while rows and len(json.dumps(doc, default=str, indent=2)) > MAX_ANSWER_BYTES:
        rows = rows[:max(0, len(rows) * 3 // 4 if len(rows) > 4 else len(rows) - 1)]
        doc[list_key] = rows
        doc.setdefault("cut", {})[list_key] = {"shown": len(rows), "total": total,
                                              "why": f"answer bound of {MAX_ANSWER_BYTES} bytes"}
    return doc


def _cut_note(doc: dict, key: str, shown: int, total: int, why: str) -> None:
    if shown < total:
        doc.setdefault("cut", {})[key] = {"shown": shown, "total": total, "why": why}


def _ms(ns) -> float | None:
    return None if ns is None else round(float(ns) / 1e6, 4)


# --- tools ---------------------------------------------------------------------------------------------------

def open_trace(path: str) -> dict:
    run = open_run(path)
    ts = run.trace_set
    analysis = run.analyze()
    s = analysis.summary
    devices = sorted({p.get("name") for m in ts.models for p in m.meta.device_properties
                      if isinstance(p.get("name"), str)} - {""})
    doc = {"path": ts.path, "ranks": ts.ranks, "trace_files": len(ts.models), "gpus": run.devices,
           "device_names": [_text(d) for d in devices][:8],
           "steps": s.get("steps"), "effective_step_ms": _ms(s.get("mean_step_ns")),
           "cpu_step_ms": _ms(s.get("cpu_step_ns")), "gpu_step_ms": _ms(s.get("gpu_step_ns")),
           "bound": s.get("bound"), "findings": s.get("findings"), "per_severity": s.get("per_severity"),
           "tflops": s.get("tflops"), "mfu_pct": s.get("mfu_pct"),
           "health": [{"code": h["code"], "severity": h["severity"], "message": _text(h["message"], 400)}
                      for h in analysis.health][:20],
           "warnings": [_text(w) for w in ts.all_warnings[:10]],
           "run": _run_facts(ts.bundle)}
    _cut_note(doc, "warnings", min(10, len(ts.all_warnings)), len(ts.all_warnings), "first 10")
    return _fit(doc, "health")


def _run_facts(bundle: dict | None) -> dict | None:
    if not isinstance(bundle, dict):
        return None
    keep = ("status", "exit_code", "steps", "script", "python", "torch", "schedule")
    return {k: (_text(v) if isinstance(v, str) else v) for k, v in bundle.items()
            if k in keep and isinstance(v, (str, int, float, bool, type(None), dict))
            and len(json.dumps(v, default=str)) < 2_000}


def findings(path: str, top: int | None = 10) -> dict:
    n, clamped = _count(top, "top", 10, MAX_ROWS)
    analysis = open_run(path).analyze()
    rows = []
    for f in analysis.findings[:n]:
        rows.append({
            "rule": f.rule, "severity": f.severity.label, "title": _text(f.title, 400), "count": int(f.count),
            "impact_ms": _ms(f.impact_ns), "impact_pct": round(float(f.impact_pct), 2),
            "saving_ms_per_step": _ms(f.saving_ns), "saving_pct": None if f.saving_pct is None else
            round(float(f.saving_pct), 2), "estimate": _text(f.estimate, 400),
            "source": None if f.source is None else {k: (_text(v) if isinstance(v, str) else v)
                                                      for k, v in f.source.to_json().items()},
            "fix": _text(f.fix, 600), "rank_index": int(f.model_index), "facts": _facts(f.facts),
            "evidence_rows": [int(r) for r in f.evidence_rows[:MAX_EVIDENCE]],
            "time_ranges_ns": [[int(a), int(b)] for a, b in f.time_ranges[:MAX_EVIDENCE]],
        })
    doc = {"path": analysis.summary.get("trace"), "total": len(analysis.findings), "findings": rows,
           "checks_not_run": [{"rule": c.rule, "reason": _text(c.reason)} for c in analysis.not_run][:20]}
    _cut_note(doc, "findings", len(rows), len(analysis.findings), "top limit" + (" (clamped)" if clamped else ""))
    return _fit(doc, "findings")


def _facts(facts: dict) -> dict:
    """A finding's summary line (Finding.facts), its text and lists bounded like the rest of the answer."""
    def one(v):
        return _text(v, 400) if isinstance(v, str) else v
    return {_text(k, 80): [one(x) for x in v[:MAX_EVIDENCE]] if isinstance(v, list) else one(v)
            for k, v in facts.items()}


def step_breakdown(path: str) -> dict:
    from core.analysis.breakdown import step_breakdown as breakdown_of
    run = open_run(path)
    steps = run.steps
    ranks = []
    for m in run.trace_set.models:
        bd = breakdown_of(m)
        totals = bd.totals()
        n_steps = max(1, len(bd))
        ranks.append({"rank": m.rank, "steps": len(bd), "has_gpu": bool(bd.has_gpu),
                      "mean_per_step_ms": {part.removesuffix("_ns") + "_ms": _ms(v / n_steps)
                                             for part, v in totals.items()}})
    rows = steps.rows(MAX_ROWS)
    keep = ("rank", "step", "dur_us", "effective_us", "gpu_busy_pct", "bound", "kernel_count", "mem_peak_mb")
    doc = {"path": run.path, "ranks": ranks, "steps": [{k: r[k] for k in keep if k in r} for r in rows]}
    _cut_note(doc, "steps", len(rows), len(steps), f"first {MAX_ROWS} steps")
    return _fit(doc, "steps")


def _table_rows(table: api.Table, n: int, keep: tuple[str, ...]) -> list[dict]:
    out = []
    for row in table.rows(n):
        out.append({k: (_text(row[k]) if isinstance(row[k], str) else row[k]) for k in keep if k in row})
    return out


def top_kernels(path: str, n: int | None = 20) -> dict:
    count, clamped = _count(n, "n", 20, MAX_ROWS)
    table = open_run(path).kernels()
    keep = ("rank", "name", "kind", "calls", "total_us", "mean_us", "p95_us", "gpu_pct", "grid", "block")
    doc = {"path": path, "total": len(table), "kernels": _table_rows(table, count, keep)}
    _cut_note(doc, "kernels", len(doc["kernels"]), len(table), "n limit" + (" (clamped)" if clamped else ""))
    return _fit(doc, "kernels")


def top_ops(path: str, n: int | None = 20, by_shape: bool = False) -> dict:
    count, clamped = _count(n, "n", 20, MAX_ROWS)
    table = open_run(path).ops(by_shape=bool(by_shape))
    keep = ("rank", "name", "input_dims", "calls", "host_total_us", "host_self_us", "device_us", "device_self_us")
    doc = {"path": path, "by_shape": bool(by_shape), "total": len(table), "ops": _table_rows(table, count, keep)}
    _cut_note(doc, "ops", len(doc["ops"]), len(table), "n limit" + (" (clamped)" if clamped else ""))
    return _fit(doc, "ops")


def memory_summary(path: str) -> dict:
    run = open_run(path)
    devices = []
    for m in run.trace_set.models:
        from core.analysis.memory import memory_series
        for series in memory_series(m, include_cpu=True):
            devices.append({"rank": m.rank, "device": series.label,
                            "peak_allocated_mb": round(series.peak_allocated_bytes / 2**20, 2),
                            "peak_reserved_mb": round(series.peak_reserved_bytes / 2**20, 2),
                            "peak_at_ns": int(series.peak_ts_ns),
                            "total_mb": None if not series.total_bytes else round(series.total_bytes / 2**20, 1),
                            "peak_reserved_pct_of_total": None if series.peak_pct_of_total is None
                            else round(series.peak_pct_of_total, 2), "samples": int(len(series.ts_ns))})
    doc = {"path": run.path, "devices": devices}
    if not devices:
        doc["note"] = "no [memory] events in this trace (record with profile_memory=True)"
    return _fit(doc, "devices")


def slices(path: str, t0_ns: int, t1_ns: int, track: str | None = None, limit: int | None = 100,
           rank: int | None = None) -> dict:
    """Slices overlapping [t0_ns, t1_ns) (ns from the trace start), longest first; `track` filters by a
    substring of the track label ("stream 7", "thread"), `rank` by rank."""
    count, clamped = _count(limit, "limit", 100, MAX_SLICES)
    for name, v in (("t0_ns", t0_ns), ("t1_ns", t1_ns)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or abs(v) > 2**62:
            raise ToolInputError(f"{name}: expected a time in ns from the trace start, got {v!r}")
    if t1_ns <= t0_ns:
        raise ToolInputError("t1_ns must be greater than t0_ns")
    run = open_run(path)
    out, total = [], 0
    for m in run.trace_set.models:
        if rank is not None and m.rank != rank:
            continue
        s = m.slices
        hit = (s.ts_ns < t1_ns) & (s.ts_ns + s.dur_ns > t0_ns)
        if track is not None:
            wanted = [i for i in range(len(m.tracks)) if str(track).lower() in m.track_label(i).lower()]
            hit &= np.isin(s.track, np.asarray(wanted, dtype=s.track.dtype))
        rows = np.flatnonzero(hit)
        total += len(rows)
        rows = rows[np.argsort(-s.dur_ns[rows], kind="stable")[:count]]
        for r in rows.tolist():
            out.append({"rank": m.rank, "row": r, "track": _text(m.track_label(int(s.track[r])), 80),
                        "kind": Kind(int(s.kind[r])).name.lower(), "name": _text(m.name(r)),
                        "ts_ns": int(s.ts_ns[r]), "dur_ns": int(s.dur_ns[r])})
    out.sort(key=lambda d: -d["dur_ns"])
    out = out[:count]
    doc = {"path": run.path, "t0_ns": int(t0_ns), "t1_ns": int(t1_ns), "total": total, "slices": out}
    _cut_note(doc, "slices", len(out), total, "limit, longest first" + (" (clamped)" if clamped else ""))
    return _fit(doc, "slices")


def diff(a: str, b: str) -> dict:
    run_a, run_b = open_run(a), open_run(b)
    d = api.diff(run_a, run_b)
    full = d.to_json()
    changes = sorted(full["kernels"], key=lambda r: -abs(r["delta_ns"]))
    ops = sorted(full["ops"], key=lambda r: -abs(r["delta_ns"]))
    doc = {"a": full["a"], "b": full["b"], "step": full["step"],
           "verdict": d.step.verdict(), "breakdown": full["breakdown"], "gpu_busy_pct": full["gpu_busy_pct"],
           "memory": full["memory"], "warnings": [_text(w, 400) for w in full["warnings"][:10]],
           "kernels": [dict(r, name=_text(r["name"])) for r in changes[:10]],
           "ops": [dict(r, name=_text(r["name"])) for r in ops[:10]],
           "findings": {k: [{"rule": f.get("rule"), "title": _text(f.get("title"), 300)} for f in v[:10]]
                        for k, v in full["findings"].items() if isinstance(v, list)}}
    _cut_note(doc, "kernels", len(doc["kernels"]), len(changes), "10 largest changes")
    _cut_note(doc, "ops", len(doc["ops"]), len(ops), "10 largest changes")
    return _fit(doc, "kernels")


def record(script: str, out: str, args: list[str] | None = None, python: str | None = None,
           cwd: str | None = None, host: str | None = None, wait: int = 1, warmup: int = 1, active: int = 3,
           stop_after_window: bool = True, timeout_s: float = 900) -> dict:
    """`ptprof record` in a child process into the folder `out` (new, empty or an old bundle: the record
    command's own checks); returns the bundle path and the run's status line. Nothing is written elsewhere."""
    if not isinstance(script, str) or not script:
        raise ToolInputError("script: give the training script's path")
    if not isinstance(out, str) or not out.strip():
        raise ToolInputError("out: give the bundle folder to write (new, empty, or an old ptprof bundle)")
    if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
        raise ToolInputError("args: expected a list of strings")
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10_000:
            raise ToolInputError(f"{name}: expected a whole number 0..10000")
    timeout = min(max(float(timeout_s), 1.0), RECORD_TIMEOUT_S)
    cmd = [sys.executable, "-m", "core.cli", "record", "--quiet", "--out", out, "--wait", str(wait),
           "--warmup", str(warmup), "--active", str(active)]
    if stop_after_window:
        cmd.append("--stop-after-window")
    if python:
        cmd += ["--python", python]
    if cwd:
        cmd += ["--cwd", cwd]
    if host:
        cmd += ["--host", host]
    cmd += [script, *(args or [])]
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ToolInputError(f"record: still running after {timeout:.0f} s (stopped); raise timeout_s") from None
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if proc.returncode == 2 and not Path(out, "run.json").is_file():
        raise ToolInputError(_text(err[-1] if err else "record: bad input", 400))
    run_json = Path(out, "run.json")
    facts = None
    if run_json.is_file():
        try:
            facts = _run_facts(json.loads(run_json.read_text(encoding="utf-8", errors="replace")))
        except ValueError:
            facts = None
    return {"bundle": str(Path(out).resolve()), "exit_code": proc.returncode, "run": facts,
            "messages": [_text(ln, 300) for ln in err[-5:]]}


TOOLS = (open_trace, findings, step_breakdown, top_kernels, top_ops, memory_summary, slices, diff, record)

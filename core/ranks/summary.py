"""`RankSummary`: what the map of one rank hands to the reduce (12-30 KB; picklable and JSON-able).

Times are on the rank's own clock (its model's time base: `base_unix_ns` + ts_ns is wall clock); the reduce
shifts them onto the run's base. Findings are the rank's per-rank findings as a one-model analysis gives them
(no "[rank N]" prefix: the reduce adds the label, which depends on the other ranks).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from core.analysis.collectives import CollRows
from core.rules.base import CheckNotRun, Finding, Severity, Source

SUMMARY_VERSION = 2  # 2: findings carry `facts`, evidence rows of one shape (issue 35)
TOP_ROWS = 50  # kernel / op table rows kept per rank (by total time)
_ARRAYS = {"step_number": np.int64, "step_t0_ns": np.int64, "step_t1_ns": np.int64, "effective_ns": np.int64,
           "cpu_ns": np.int64, "gpu_ns": np.int64}


@dataclass(slots=True)
class RankSummary:
    path: str
    rank: int
    base_unix_ns: int
    distributed_info: dict | None
    warnings: list[str]
    findings: list[Finding]
    capability_notes: list[CheckNotRun]  # what the trace lacks (the reduce prefixes the rank's label)
    not_run: list[CheckNotRun]  # the rules' own "checks not run"
    step_number: np.ndarray
    step_t0_ns: np.ndarray
    step_t1_ns: np.ndarray
    synthetic: bool
    effective_ns: np.ndarray  # per step (empty when the steps are synthetic)
    cpu_ns: np.ndarray
    gpu_ns: np.ndarray
    bound: list[str]
    pct_total_ns: int  # the denominator of impact_pct on this rank (RuleContext.pct)
    colls: CollRows
    metrics: dict  # core.analysis.metrics.RankMetrics.to_json()
    health: list[dict]  # this model's checks (Health.to_json())
    set_health: list[dict]  # the set's own checks (recording inflation, run status): the same on every rank
    replay: dict | None  # this rank's entry of the summary's "replay" list (with the all-fixes saving)
    inflation: float | None
    breakdown: dict  # sums over the steps (core.analysis.breakdown.StepBreakdown.totals())
    kernels: list[dict]  # top TOP_ROWS kernel rows: name, kind, calls, total_ns
    ops: list[dict]  # top TOP_ROWS ops: name, calls, host_total_ns, device_ns
    memory_peak: list[dict]  # per device: device, label, peak_allocated_bytes, peak_reserved_bytes, total_bytes
    load_s: float = 0.0
    analysis_s: float = 0.0
    cache_hit: bool = False
    source: dict = field(default_factory=dict)  # size / mtime_ns of the trace it summarises (stored summaries)

    def to_json(self) -> dict:
        d = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in _ARRAYS:
                v = np.asarray(v).tolist()
            elif f.name == "findings":
                v = [finding_json(x) for x in v]
            elif f.name in ("capability_notes", "not_run"):
                v = [x.to_json() for x in v]
            elif f.name == "colls":
                v = {"names": v.names.tolist(), "ts_ns": v.ts_ns.tolist(), "dur_ns": v.dur_ns.tolist(),
                     "rows": v.rows.tolist(), "pg": None if v.pg is None else v.pg.tolist(),
                     "seq": None if v.seq is None else v.seq.tolist()}
            d[f.name] = v
        d["version"] = SUMMARY_VERSION
        return d

    @classmethod
    def from_json(cls, d: dict) -> RankSummary:
        """Raises KeyError / TypeError / ValueError on anything malformed (a stored summary is a miss then)."""
        if d.get("version") != SUMMARY_VERSION:
            raise ValueError("summary version")
        kw = {}
        for f in fields(cls):
            if f.name not in d:
                if f.name in ("load_s", "analysis_s", "cache_hit", "source"):
                    continue
                raise KeyError(f.name)
            v = d[f.name]
            if f.name in _ARRAYS:
                v = np.asarray(v, dtype=_ARRAYS[f.name]).reshape(-1)
            elif f.name == "findings":
                v = [finding_from_json(x) for x in v]
            elif f.name in ("capability_notes", "not_run"):
                v = [CheckNotRun(str(x["rule"]), str(x["reason"])) for x in v]
            elif f.name == "colls":
                n = len(v["ts_ns"])
                v = CollRows(np.asarray(v["names"], dtype=str).reshape(-1), _ints(v["ts_ns"], n), _ints(v["dur_ns"], n),
                             _ints(v["rows"], n), None if v["pg"] is None else np.asarray(v["pg"], dtype=str).reshape(-1),
                             None if v["seq"] is None else _ints(v["seq"], n))
                if len(v.names) != n or (v.pg is not None and len(v.pg) != n):
                    raise ValueError("collective columns of different lengths")
            kw[f.name] = v
        s = cls(**kw)
        if not (len(s.step_number) == len(s.step_t0_ns) == len(s.step_t1_ns)):
            raise ValueError("step columns of different lengths")
        return s


def _ints(v, n: int) -> np.ndarray:
    a = np.asarray(v, dtype=np.int64).reshape(-1)
    if len(a) != n:
        raise ValueError("column length")
    return a


def finding_json(f: Finding) -> dict:
    d = f.to_json()
    # exact floats (to_json rounds them for display)
    d.update(impact_pct=float(f.impact_pct), saving_pct=None if f.saving_pct is None else float(f.saving_pct))
    d.update(severity=int(f.severity), model_index=f.model_index, evidence_rows=list(f.evidence_rows), hint=f.hint)
    return d


def finding_from_json(d: dict) -> Finding:
    src = d.get("source")
    return Finding(
        rule=str(d["rule"]), severity=Severity(int(d["severity"])), title=str(d["title"]), count=int(d["count"]),
        impact_ns=int(d["impact_ns"]), impact_pct=float(d["impact_pct"]),
        time_ranges=_ranges(d["time_ranges"]), evidence=tuple(d["evidence"]),
        source=None if src is None else Source(str(src["file"]), int(src["line"]), str(src["function"]),
                                                str(src.get("library", ""))),
        fix=str(d["fix"]), model_index=int(d.get("model_index", 0)),
        evidence_rows=tuple(int(r) for r in d.get("evidence_rows", ())), hint=bool(d.get("hint", False)),
        saving_ns=None if d.get("saving_ns") is None else int(d["saving_ns"]),
        saving_pct=None if d.get("saving_pct") is None else float(d["saving_pct"]), estimate=str(d.get("estimate", "")),
        facts=dict(d.get("facts") or {}), **_by_fix(d.get("savings_by_fix")), **_per_step(d))


def _per_step(d: dict) -> dict:
    """Finding.steps / one_off / one_off_steps (core/rules/per_step.py) from their JSON form."""
    one = d.get("one_off")
    return {"steps": int(d.get("steps") or 0), "one_off": bool(one), "mean_step_ns": int(d.get("mean_step_ns") or 0),
            "one_off_steps": tuple(int(n) for n in (one.get("steps") or ())) if isinstance(one, dict) else ()}


def _by_fix(v) -> dict:
    """Finding.savings_by_fix (to_json writes it as {fix: ns}) where this Finding has the field."""
    if not v or "savings_by_fix" not in Finding.__dataclass_fields__:
        return {}
    return {"savings_by_fix": tuple((str(k), int(x)) for k, x in dict(v).items())}


def _ranges(v) -> tuple:
    """[[t0, t1], ...] -> ((t0, t1), ...) of ints (numpy: a finding may carry thousands)."""
    a = np.asarray(v, dtype=np.int64).reshape(-1, 2) if len(v) else np.zeros((0, 2), np.int64)
    return tuple(map(tuple, a.tolist()))

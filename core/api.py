"""The Python API for notebooks and scripts, re-exported as the top-level module `ptprof`.

    import ptprof
    run = ptprof.load("runs/train-1200")           # trace file, TensorBoard dir, multi-rank dir or run bundle
    run.steps.to_pandas()                           # one row per step (the Steps tab / steps.csv)
    run.kernels()["total_us"][:5]                   # numpy columns (the Kernels tab / kernels.csv)
    res = ptprof.analyze(run)                       # findings, as `ptprof analyze --json` computes them
    for f in res.findings: print(f.rule, f.saving_ns, f.source)
    d = ptprof.diff("before", "after"); d.step.delta_ns

It is the same code the CLI and the window run, not a second path: tables are core.export.tables (the CSVs),
analysis is core.rules.analyze plus the health checks and metrics `ptprof analyze --json` adds
(core.export.analysis_json.json_doc), and a diff is core.ranks.findings_cache.compare_runs. Bad input raises
`core.trace.model.TraceParseError` (`ptprof.TraceParseError`) with one line of reason.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.trace.model import TraceParseError, TraceSet

__all__ = ["Analysis", "Run", "Table", "TraceParseError", "analyze", "diff", "load"]


class Table:
    """Named columns of one length (numpy arrays, or lists for text): `t["name"]`, `t.columns`, `len(t)`,
    `t.rows(limit)` as dicts, `t.to_pandas()` (pandas is optional: imported only there)."""

    def __init__(self, name: str, columns: tuple[str, ...], data: tuple) -> None:
        self.name = name
        self.columns = tuple(columns)
        self._data = {c: (d if isinstance(d, np.ndarray) else list(d)) for c, d in zip(columns, data)}

    @classmethod
    def from_export(cls, table) -> Table:
        data = table.data if table.data else tuple([] for _ in table.columns)
        return cls(table.name, table.columns, data)

    def __len__(self) -> int:
        return len(next(iter(self._data.values()))) if self._data else 0

    def __getitem__(self, column: str):
        return self._data[column]

    def __contains__(self, column: str) -> bool:
        return column in self._data

    def __repr__(self) -> str:
        return f"<ptprof.Table {self.name}: {len(self)} rows x {len(self.columns)} columns>"

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The first `limit` rows (all when None) as plain-Python dicts (NaN -> None): JSON-ready."""
        n = len(self) if limit is None else max(0, min(int(limit), len(self)))
        return [{c: _plain(self._data[c][i]) for c in self.columns} for i in range(n)]

    def to_pandas(self):
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas comes with HTA in the usual install
            raise ImportError("Table.to_pandas() needs pandas (pip install pandas)") from exc
        return pd.DataFrame({c: self._data[c] for c in self.columns}, columns=list(self.columns))


def _plain(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


class Run:
    """A loaded trace set: `.path`, `.ranks`, `.devices`, `.bundle` (run.json of a run bundle), `.steps`,
    `.kernels()`, `.ops(by_shape=False)`, `.memory()`, `.analyze()`; `.trace_set` is the engine's model."""

    def __init__(self, trace_set: TraceSet) -> None:
        self.trace_set = trace_set
        self._analysis: Analysis | None = None

    def __repr__(self) -> str:
        return f"<ptprof.Run {self.path}: {len(self.trace_set.models)} trace(s), ranks {self.ranks}>"

    @property
    def path(self) -> str:
        return self.trace_set.path

    @property
    def ranks(self) -> list[int]:
        return self.trace_set.ranks

    @property
    def devices(self) -> list[int]:
        return sorted({d for m in self.trace_set.models for d in m.devices})

    @property
    def bundle(self) -> dict | None:
        return self.trace_set.bundle

    @property
    def warnings(self) -> list[str]:
        return self.trace_set.all_warnings

    @property
    def steps(self) -> Table:
        from core.export import tables
        return Table.from_export(tables.steps_table(self.trace_set))

    def kernels(self) -> Table:
        from core.export import tables
        return Table.from_export(tables.kernels(self.trace_set))

    def ops(self, by_shape: bool = False) -> Table:
        from core.export import tables
        if not by_shape:
            return Table.from_export(tables.ops(self.trace_set))
        return _ops_by_shape(self.trace_set)

    def memory(self) -> list:
        """core.analysis.memory.DeviceMemory per device and rank (allocated / reserved over time, peaks)."""
        from core.analysis.memory import memory_series
        return [series for m in self.trace_set.models for series in memory_series(m)]

    def analyze(self, rules: list[str] | None = None) -> Analysis:
        if rules is not None:
            return _analyze(self.trace_set, rules)
        if self._analysis is None:
            self._analysis = _analyze(self.trace_set, None)
        return self._analysis


def _ops_by_shape(ts: TraceSet) -> Table:
    from core.analysis import stats
    from core.export.tables import _us
    cols = ("rank", "name", "input_dims", "calls", "host_total_us", "host_self_us", "device_us", "device_self_us")
    parts: list[list] = [[] for _ in cols]
    for m in ts.models:
        ot = stats.op_table(m, by_shapes=True)
        values = ([m.rank] * len(ot), [m.strings[int(i)] for i in ot.name],
                  [m.strings[int(i)] if int(i) else "" for i in ot.input_dims], ot.calls.tolist(),
                  _us(ot.host_total_ns).tolist(), _us(ot.host_self_ns).tolist(), _us(ot.device_ns).tolist(),
                  _us(ot.device_self_ns).tolist())
        for acc, v in zip(parts, values):
            acc.extend(v)
    return Table("ops_by_shape", cols, tuple(parts))


@dataclass
class Analysis:
    """What `ptprof analyze --json` says: `.findings` (core.rules.base.Finding, ranked), `.summary`,
    `.health` and `.metrics` as dicts, `.not_run` (checks that could not run and why); `.to_json()` is the
    CLI's document."""

    findings: list
    summary: dict
    health: list[dict]
    metrics: list[dict]
    not_run: list = field(default_factory=list)
    _doc: dict = field(default_factory=dict, repr=False)

    def to_json(self) -> dict:
        return self._doc


def _analyze(ts: TraceSet, rules: list[str] | None) -> Analysis:
    from core.analysis import health
    from core.analysis.metrics import trace_metrics
    from core.export.analysis_json import json_doc
    from core.rules import RULE_IDS, all_rules, analyze as run_rules
    chosen = None
    if rules is not None:
        unknown = sorted(set(rules) - set(RULE_IDS))
        if unknown:
            raise ValueError(f"unknown rule id(s): {', '.join(unknown)}")
        chosen = [r for r in all_rules() if r.id in set(rules)]
    result = run_rules(ts, rules=chosen)
    from core.rules.oom_findings import bundle_findings  # a run bundle's oom / memory_growth, as the CLI adds
    wanted = None if chosen is None else {r.id for r in chosen} | ({"oom"} & set(rules or ()))
    extra = [f for f in bundle_findings(ts.path) if wanted is None or f.rule in wanted]
    if extra:
        import dataclasses
        result = dataclasses.replace(result, findings=tuple(extra) + tuple(result.findings))
    checks = [h.to_json() for h in health.check(ts)]
    metrics = trace_metrics(ts)
    doc = json_doc(result, checks, metrics)
    return Analysis(findings=list(result.findings), summary=doc["summary"], health=checks,
                    metrics=doc["metrics"], not_run=list(result.not_run), _doc=doc)


def _as_run(obj, use_cache: bool) -> Run:
    if isinstance(obj, Run):
        return obj
    if isinstance(obj, TraceSet):
        return Run(obj)
    return load(obj, use_cache=use_cache)


def load(path: str | os.PathLike, use_cache: bool = True) -> Run:
    """Open a trace file, TensorBoard log dir, multi-rank dir or run bundle (the columnar cache makes a second
    open fast; `use_cache=False` neither reads nor writes it)."""
    from core.trace.loader import load as load_trace
    return Run(load_trace(os.fspath(path), use_cache=use_cache))


def analyze(run_or_path, rules: list[str] | None = None, use_cache: bool = True) -> Analysis:
    """Findings with cost, saving, evidence and source: `ptprof analyze --json` as objects."""
    return _as_run(run_or_path, use_cache).analyze(rules)


def diff(a, b, by_shape: bool = False, normalize_templates: bool = False, use_cache: bool = True):
    """`ptprof diff A B`: a core.analysis.diff.Diff (`.step` with delta_ns / significant / p_value, `.kernels`,
    `.ops`, `.findings`, `.to_json()` = `ptprof diff --json`). A is the baseline."""
    from core.ranks.findings_cache import compare_runs
    run_a, run_b = _as_run(a, use_cache), _as_run(b, use_cache)
    return compare_runs(run_a.trace_set, run_b.trace_set, by_shape=by_shape, normalize_templates=normalize_templates,
                   use_cache=use_cache)

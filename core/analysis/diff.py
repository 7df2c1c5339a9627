"""Compare two loaded runs (A = baseline, B = candidate): steps, breakdown, kernels, ops, findings, memory.

Pure functions on TraceSets; `ptprof diff`, the `analyze --baseline` gate and the GUI Compare tab all use
`compare()`. Per-step numbers are the effective step times of `core.analysis.steps` (one seam:
`step_samples_ns`); multi-rank runs aggregate a step as its slowest rank (the step cannot finish before it),
and each rank also gets its own step comparison and breakdown (`Diff.per_rank`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from core.analysis import significance
from core.analysis.breakdown import PARTS
from core.analysis.diff_facts import ModelFacts, model_facts
from core.analysis.steps import step_stats
from core.trace.model import TraceModel, TraceSet

_COMPILED_REGION = re.compile(r"^(Torch-Compiled Region: \d+)/\d+")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def kernel_key(name: str, normalize_templates: bool) -> str:
    """Matching key of a kernel name; template arguments dropped on request (`void f<float, 4>(...)`)."""
    if not normalize_templates:
        return name
    previous = None
    while previous != name:  # innermost <...> first (marked without brackets), until none are left
        previous, name = name, _TEMPLATE_ARGS.sub("\x00", name)
    return name.replace("\x00", "<>")


def op_key(name: str) -> str:
    """Ops match by name; compiled regions by frame (`Torch-Compiled Region: 0/0` and `0/1` are one frame)."""
    return _COMPILED_REGION.sub(r"\1", name)


def step_samples_ns(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(step numbers, effective step ns) of one model; empty when the trace has no ProfilerStep."""
    stats = step_stats(model)
    if stats.synthetic:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    effective = getattr(stats, "effective_ns", None)
    return np.asarray(stats.number, np.int64), np.asarray(stats.dur_ns if effective is None else effective, np.int64)


def rank_steps_ns(ts: TraceSet, rank: int) -> np.ndarray:
    """Step times of one rank of a run (every cycle of it, in load order)."""
    parts = [step_samples_ns(m)[1] for m in ts.models if m.rank == rank]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def run_steps_ns(ts: TraceSet) -> np.ndarray:
    """Step times of a run: per (cycle, step number) the slowest rank's effective step."""
    per_step: dict[tuple[int, int], int] = {}
    cycles: dict[int, int] = {}
    for model in ts.models:
        cycle = cycles.get(model.rank, 0)
        cycles[model.rank] = cycle + 1
        numbers, durations = step_samples_ns(model)
        for number, dur in zip(numbers.tolist(), durations.tolist()):
            key = (cycle, number)
            per_step[key] = max(per_step.get(key, 0), dur)
    return np.asarray([per_step[k] for k in sorted(per_step)], np.int64)


@dataclass(frozen=True, slots=True)
class Side:
    trace: str
    steps: int
    median_ns: float
    p10_ns: float
    p90_ns: float
    device: str
    torch_version: str
    ranks: int
    bound: str = ""  # what bounds most steps: gpu / cpu / sync / data ('' without steps)

    def to_json(self) -> dict:
        return {"trace": self.trace, "steps": self.steps, "median_ns": round(self.median_ns),
                "p10_ns": round(self.p10_ns), "p90_ns": round(self.p90_ns), "device": self.device,
                "torch_version": self.torch_version, "ranks": self.ranks, "bound": self.bound}


@dataclass(frozen=True, slots=True)
class Row:
    """One kernel / op matched across A and B."""

    name: str
    a_calls: int
    b_calls: int
    a_total_ns: int
    b_total_ns: int

    @property
    def delta_ns(self) -> int:
        return self.b_total_ns - self.a_total_ns

    @property
    def status(self) -> str:
        if self.a_calls == 0:
            return "new"
        if self.b_calls == 0:
            return "gone"
        return "same"

    def to_json(self) -> dict:
        return {"name": self.name, "a_calls": self.a_calls, "b_calls": self.b_calls, "a_total_ns": self.a_total_ns,
                "b_total_ns": self.b_total_ns, "delta_ns": self.delta_ns, "status": self.status}


def _spread_json(steps_ns: np.ndarray) -> dict:
    if not len(steps_ns):
        return {"steps": 0, "median_ns": None, "p10_ns": None, "p90_ns": None}
    p10, med, p90 = np.percentile(steps_ns, [10, 50, 90])
    return {"steps": int(len(steps_ns)), "median_ns": round(float(med)), "p10_ns": round(float(p10)),
            "p90_ns": round(float(p90))}


def _breakdown_json(breakdown: dict[str, tuple[float, float]]) -> list[dict]:
    return [{"category": part, "a_ns": round(a), "b_ns": round(b), "delta_ns": round(b - a)}
            for part, (a, b) in breakdown.items()]


@dataclass(frozen=True, slots=True)
class RankDiff:
    """One rank of a multi-rank comparison: its own step times, significance, breakdown and GPU busy share."""

    rank: int
    a_steps_ns: np.ndarray
    b_steps_ns: np.ndarray
    step: significance.Comparison
    breakdown: dict[str, tuple[float, float]]
    gpu_busy_pct: tuple[float | None, float | None]

    def to_json(self) -> dict:
        return {"rank": self.rank, "a": _spread_json(self.a_steps_ns), "b": _spread_json(self.b_steps_ns),
                "step": self.step.to_json(), "breakdown": _breakdown_json(self.breakdown),
                "gpu_busy_pct": {"a": _round(self.gpu_busy_pct[0]), "b": _round(self.gpu_busy_pct[1])}}


@dataclass(frozen=True, slots=True)
class Diff:
    a: Side
    b: Side
    step: significance.Comparison
    a_steps_ns: np.ndarray
    b_steps_ns: np.ndarray
    breakdown: dict[str, tuple[float, float]]  # part -> (A mean ns per step, B mean ns per step)
    kernels: tuple[Row, ...]
    ops: tuple[Row, ...]
    findings: dict[str, list[dict]]
    memory: dict[str, int | None]
    gpu_busy_pct: tuple[float | None, float | None]
    warnings: tuple[str, ...] = field(default=())
    per_rank: tuple[RankDiff, ...] = field(default=())  # multi-rank runs: every rank of either side
    # "unprofiled": both sides' steps as the loops run without the profiler (replay, CPU side / each run's
    # recording inflation, held at the DataLoader workers' period); "recorded": the traces' effective steps
    step_basis: str = "recorded"
    basis_note: str = ""

    def to_json(self) -> dict:
        return {
            "a": self.a.to_json(), "b": self.b.to_json(), "step": self.step.to_json(),
            "breakdown": _breakdown_json(self.breakdown),
            "gpu_busy_pct": {"a": _round(self.gpu_busy_pct[0]), "b": _round(self.gpu_busy_pct[1])},
            "kernels": [r.to_json() for r in self.kernels], "ops": [r.to_json() for r in self.ops],
            "findings": self.findings, "memory": self.memory, "warnings": list(self.warnings),
            "per_rank": [r.to_json() for r in self.per_rank], "step_basis": self.step_basis,
            "basis_note": self.basis_note,
        }


def _round(x):
    return None if x is None else round(float(x), 3)


def _side(ts, steps_ns: np.ndarray, facts: list[ModelFacts]) -> Side:
    meta = ts.primary.meta
    bundle = ts.bundle if isinstance(ts.bundle, dict) else {}
    device = str(meta.device_properties[0].get("name", "")) if meta.device_properties else ""
    gpu = bundle.get("gpu")
    if not device and isinstance(gpu, dict) and isinstance(gpu.get("devices"), list) and gpu["devices"]:
        device = str(gpu["devices"][0])
    torch_version = str(bundle.get("torch_version") or meta.extra.get("torch_version") or "")
    if len(steps_ns):
        p10, med, p90 = np.percentile(steps_ns, [10, 50, 90])
    else:
        p10 = med = p90 = 0.0
    bounds = [b for f in facts if f.bounds is not None for b in f.bounds]
    bound = max(sorted(set(bounds)), key=bounds.count) if bounds else ""
    if any(f.data_period_ns for f in facts):
        bound = "data"  # the workers pace it: one stall per round, most steps served at once
    return Side(ts.path, int(len(steps_ns)), float(med), float(p10), float(p90), device, torch_version, len(ts.ranks),
                bound)


def _breakdown_means(facts) -> tuple[dict[str, float], float | None]:
    sums = {p: 0.0 for p in PARTS}
    steps = 0
    busy = []
    for f in facts:
        if not f.bd_steps:
            continue
        for part, value in f.bd_sums.items():
            sums[part] += value
        steps += f.bd_steps
        if f.bd_has_gpu:
            dur = f.bd_dur_ns
            busy.append(100.0 * f.bd_busy_ns / dur if dur > 0 else 0.0)  # compute + comm kernels + memcpy / memset
    means = {p: sums[p] / steps if steps else 0.0 for p in PARTS}
    return means, (float(np.mean(busy)) if busy else None)


def _table_rows(facts: list[ModelFacts], kind: str, normalize_templates: bool) -> dict[str, tuple[int, int]]:
    """name key -> (calls, total ns), summed over the run's models."""
    out: dict[str, list[int]] = {}
    for f in facts:
        if kind == "kernels":
            rows = [(kernel_key(name, normalize_templates), calls, total) for name, calls, total in f.kernels]
        else:
            rows = [(op_key(name) + (f" {dims}" if dims else ""), calls, total) for name, dims, calls, total in f.ops]
        for name, calls, total in rows:
            acc = out.setdefault(name, [0, 0])
            acc[0] += int(calls)
            acc[1] += int(total)
    return {k: (v[0], v[1]) for k, v in out.items()}


def _match(a: dict[str, tuple[int, int]], b: dict[str, tuple[int, int]], a_steps: int, b_steps: int,
           per_step: bool) -> tuple[Row, ...]:
    """Rows sorted by |delta|; totals per step when both runs have steps (different step counts compare)."""
    scale_a = 1.0 / a_steps if per_step and a_steps else 1.0
    scale_b = 1.0 / b_steps if per_step and b_steps else 1.0
    rows = []
    for name in set(a) | set(b):
        a_calls, a_total = a.get(name, (0, 0))
        b_calls, b_total = b.get(name, (0, 0))
        rows.append(Row(name, a_calls, b_calls, round(a_total * scale_a), round(b_total * scale_b)))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.name))
    return tuple(rows)


def _finding_key(f: dict) -> tuple:
    """(rule, which rank, source file, line, title with its numbers masked). The rank label a multi-rank
    finding's title starts with (`[rank 1] `, `[rank 0 · cycle 2] `) is kept whole: masking its number
    would match rank 0's finding with rank 1's and drop one of them."""
    src = f.get("source") or {}
    title = f.get("title", "")
    label = _RANK_LABEL.match(title)
    rest = title[label.end():] if label else title
    return (f["rule"], label.group(0).strip() if label else "", src.get("file"), src.get("line"),
            _TITLE_NUMBERS.sub("#", rest))


_RANK_LABEL = re.compile(r"^\[rank [^\]]*\]\s*")
_TITLE_NUMBERS = re.compile(r"[\d.,]+\s*(?:[µmnk]?s|%|MiB|GiB|KiB|B|×|x)?")


def _finding_cost(f: dict) -> int:
    saving = f.get("saving_ns")
    return int(saving if saving is not None else f.get("impact_ns", 0))


def match_findings(a: list[dict], b: list[dict]) -> dict[str, list[dict]]:
    """fixed (only in A), new (only in B), changed (both; cost before/after). Matched by rule + source + title shape."""
    by_key_a: dict[tuple, dict] = {}
    for f in a:
        by_key_a.setdefault(_finding_key(f), f)
    by_key_b: dict[tuple, dict] = {}
    for f in b:
        by_key_b.setdefault(_finding_key(f), f)
    # a rule whose title changed shape still matches when it is the only finding of its rule (on that rank)
    # on each side
    unmatched_a = {k: f for k, f in by_key_a.items() if k not in by_key_b}
    unmatched_b = {k: f for k, f in by_key_b.items() if k not in by_key_a}
    pairs = [(by_key_a[k], by_key_b[k]) for k in by_key_a if k in by_key_b]
    for rule_rank in {k[:2] for k in unmatched_a} & {k[:2] for k in unmatched_b}:
        ka = [k for k in unmatched_a if k[:2] == rule_rank]
        kb = [k for k in unmatched_b if k[:2] == rule_rank]
        if len(ka) == 1 and len(kb) == 1:
            pairs.append((unmatched_a.pop(ka[0]), unmatched_b.pop(kb[0])))

    def brief(f: dict) -> dict:
        return {"rule": f["rule"], "severity": f["severity"], "title": f["title"],
                "impact_ns": int(f.get("impact_ns", 0)), "saving_ns": f.get("saving_ns")}

    changed = [{"rule": fa["rule"], "title_a": fa["title"], "title_b": fb["title"],
                "severity_a": fa["severity"], "severity_b": fb["severity"],
                "a_ns": _finding_cost(fa), "b_ns": _finding_cost(fb), "delta_ns": _finding_cost(fb) - _finding_cost(fa),
                "a_saving_ns": fa.get("saving_ns"), "b_saving_ns": fb.get("saving_ns")}
               for fa, fb in pairs]
    changed.sort(key=lambda c: c["delta_ns"])
    return {"fixed": sorted((brief(f) for f in unmatched_a.values()), key=lambda f: -_finding_cost(f)),
            "new": sorted((brief(f) for f in unmatched_b.values()), key=lambda f: -_finding_cost(f)),
            "changed": changed}


def _memory_peak(facts: list[ModelFacts]) -> int | None:
    peaks = [p for f in facts for p in f.mem_peaks]
    return max(peaks) if peaks else None


def facts_of(ts, by_shape: bool = False) -> list[ModelFacts]:
    """The facts of every model of `ts` (a loaded TraceSet), or the ones a run view carries (core/ranks/views.py)."""
    got = getattr(ts, "diff_facts", None)
    if got is not None:
        return got(by_shape)
    return [model_facts(m, by_shape) for m in ts.models]


def _run_steps(facts: list[ModelFacts]) -> np.ndarray:
    """Step times of a run: per (cycle, step number) the slowest rank's effective step (`run_steps_ns`)."""
    per_step: dict[tuple[int, int], int] = {}
    cycles: dict[int, int] = {}
    for f in facts:
        cycle = cycles.get(f.rank, 0)
        cycles[f.rank] = cycle + 1
        for number, dur in zip(f.step_number.tolist(), f.step_ns.tolist()):
            key = (cycle, number)
            per_step[key] = max(per_step.get(key, 0), dur)
    return np.asarray([per_step[k] for k in sorted(per_step)], np.int64)


def _rank_steps(facts: list[ModelFacts], rank: int) -> np.ndarray:
    parts = [f.step_ns for f in facts if f.rank == rank]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def compare(a, b, *, findings_a: list[dict] | None = None, findings_b: list[dict] | None = None,
            by_shape: bool = False, normalize_templates: bool = False) -> Diff:
    """Everything `ptprof diff --json` prints. Findings (JSON dicts of `Analysis.to_json()`) are optional.
    `a`, `b`: loaded TraceSets, or run views (core/ranks/views.py) that carry their models' facts."""
    fa, fb = facts_of(a, by_shape), facts_of(b, by_shape)
    a_steps = _run_steps(fa)
    b_steps = _run_steps(fb)
    warnings = []
    a_steps, b_steps, basis, note = _unprofiled_basis(a, b, a_steps, b_steps, warnings, fa, fb)
    side_a, side_b = _side(a, a_steps, fa), _side(b, b_steps, fb)
    if side_a.device and side_b.device and side_a.device != side_b.device:
        warnings.append(f"different GPUs: A ran on {side_a.device}, B on {side_b.device}")
    if side_a.torch_version and side_b.torch_version and side_a.torch_version != side_b.torch_version:
        warnings.append(f"different torch versions: A {side_a.torch_version}, B {side_b.torch_version}")
    if len(a.ranks) != len(b.ranks):
        warnings.append(f"different rank counts: A {len(a.ranks)}, B {len(b.ranks)}")
    if not len(a_steps) or not len(b_steps):
        warnings.append("a run has no ProfilerStep: kernel and op totals compare whole traces")
    bd_a, busy_a = _breakdown_means(fa)
    bd_b, busy_b = _breakdown_means(fb)
    per_step = bool(len(a_steps) and len(b_steps))
    kernels = _match(_table_rows(fa, "kernels", normalize_templates), _table_rows(fb, "kernels", normalize_templates),
                     len(a_steps), len(b_steps), per_step)
    ops = _match(_table_rows(fa, "ops", normalize_templates), _table_rows(fb, "ops", normalize_templates),
                 len(a_steps), len(b_steps), per_step)
    found = match_findings(findings_a or [], findings_b or []) if findings_a is not None and findings_b is not None \
        else {"fixed": [], "new": [], "changed": []}
    return Diff(a=side_a, b=side_b, step=significance.compare(a_steps, b_steps), a_steps_ns=a_steps, b_steps_ns=b_steps,
                breakdown={p: (bd_a[p], bd_b[p]) for p in PARTS}, kernels=kernels, ops=ops, findings=found,
                memory={"a_peak_bytes": _memory_peak(fa), "b_peak_bytes": _memory_peak(fb)},
                gpu_busy_pct=(busy_a, busy_b), warnings=tuple(warnings), per_rank=_per_rank(a, b, fa, fb),
                step_basis=basis, basis_note=note)


def _unprofiled_basis(a, b, a_steps, b_steps, warnings: list, fa: list[ModelFacts], fb: list[ModelFacts]) -> tuple:
    """Recording slows the CPU side of a loop, not the GPU's, so a run the profiler left GPU-bound is slowed
    less than a CPU-bound one: on the H100 non-contiguous -> contiguous pair the recorded steps said +31 %
    (p = 0.0009) for a real -27 % (before GPU-bound under the profiler, after CPU-bound). When the two runs are
    bound by different sides (or a DataLoader's workers pace one: the recorded window may have been served
    from prefetched batches) and both know their recording inflation (run bundles), both sides are compared in
    unprofiled time (core.analysis.unprofiled). Runs bound by the same side keep the recorded comparison: the
    relative change holds, and a per-run inflation measured on a few steps is noisier than that (H200 pairs:
    1.93x vs 2.49x for two loops that differ by an .item()). Without the inflations a warning says so."""
    from core.analysis import unprofiled
    if not len(a_steps) or not len(b_steps):
        return a_steps, b_steps, "recorded", ""

    def gpu_share(facts):
        bounds = [x for f in facts if f.bounds is not None for x in f.bounds]
        return sum(x == "gpu" for x in bounds) / max(len(bounds), 1)
    ga, gb = gpu_share(fa), gpu_share(fb)
    differ = (ga > 0.5) != (gb > 0.5)
    paced = any(f.data_period_ns for f in (*fa, *fb))
    if not (differ or paced):
        return a_steps, b_steps, "recorded", ""
    ia, ib = unprofiled.run_inflation(a), unprofiled.run_inflation(b)
    why = ("the runs are bound by different sides under the profiler (A " + ("GPU" if ga > 0.5 else "CPU")
           + ", B " + ("GPU" if gb > 0.5 else "CPU") + ")") if differ else "a DataLoader's workers pace a run"
    if (ia is not None and ib is not None) or (paced and not differ):
        ua, ub = _unprofiled_steps(a, ia), _unprofiled_steps(b, ib)
        if ua is not None and ub is not None and len(ua) and len(ub):
            note = (f"steps compared in unprofiled time: {why}; recording slowed A's CPU side "
                    f"{max(ia or 1.0, 1.0):.2f}x and B's {max(ib or 1.0, 1.0):.2f}x (each run's replay with its "
                    "CPU side / that factor)")
            return ua, ub, "unprofiled", note
    warnings.append(f"recorded step times compared although {why}: recording slows the CPU side more, so the "
                    "difference may not hold without the profiler (record both runs with `ptprof record`: a run "
                    "bundle knows how much recording slowed it)")
    return a_steps, b_steps, "recorded", ""


def _unprofiled_steps(ts, inflation: float | None) -> np.ndarray | None:
    """`core.analysis.unprofiled.run_steps_ns` of a loaded set, or from a run view's per-model replays."""
    from core.analysis import unprofiled
    got = getattr(ts, "unprofiled_facts", None)
    if got is None:
        return unprofiled.run_steps_ns(ts, inflation)
    per_step: dict[tuple[int, int], float] = {}
    cycles: dict[int, int] = {}
    for rank, (synthetic, numbers, vals, floor) in got(inflation):
        cycle = cycles.get(rank, 0)
        cycles[rank] = cycle + 1
        if synthetic:
            continue
        if len(vals) != len(numbers):
            return None
        if floor:  # paced by the workers: every step of a round costs the round's mean (the period)
            vals = np.full(len(vals), float(vals.mean()))
        for number, v in zip(numbers.tolist(), vals.tolist()):
            key = (cycle, number)
            per_step[key] = max(per_step.get(key, 0.0), v)
    return np.asarray([per_step[k] for k in sorted(per_step)], np.int64)


def _per_rank(a, b, fa: list[ModelFacts], fb: list[ModelFacts]) -> tuple[RankDiff, ...]:
    """Each rank of either side compared on its own (multi-rank runs only; a rank missing on one side has no
    steps there, and its comparison says so)."""
    if max(len(a.ranks), len(b.ranks)) < 2:
        return ()
    out = []
    for rank in sorted(set(a.ranks) | set(b.ranks)):
        a_steps, b_steps = _rank_steps(fa, rank), _rank_steps(fb, rank)
        bd_a, busy_a = _breakdown_means([f for f in fa if f.rank == rank])
        bd_b, busy_b = _breakdown_means([f for f in fb if f.rank == rank])
        out.append(RankDiff(rank, a_steps, b_steps, significance.compare(a_steps, b_steps),
                            {p: (bd_a[p], bd_b[p]) for p in PARTS}, (busy_a, busy_b)))
    return tuple(out)

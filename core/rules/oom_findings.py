"""The `oom` finding and the allocation-stack `memory_growth` finding of a run bundle (issue 32), for
`ptprof analyze BUNDLE`: from run.json's recorded OOMs and the snapshots the child wrote
(core/analysis/oom.py), not from the traces (an OOM before the first window leaves none)."""
from __future__ import annotations

import re
from pathlib import Path

from core.analysis import oom as oom_mod
from core.rules.base import Finding, Severity, Source
from core.units import fmt_bytes

_WHERE = re.compile(r"^(?P<file>.+):(?P<line>\d+) in (?P<fn>.+)$")
HISTORY_SNAPSHOT = "memory.snapshot.pickle"


def _source(where: str) -> Source | None:
    m = _WHERE.match(where or "")
    return Source(m["file"], int(m["line"]), m["fn"]) if m else None


def _finding(rule: str, severity: Severity, title: str, evidence: list[dict], fix: str, where: str,
             count: int = 1, facts: dict | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, title=title, count=count, impact_ns=0, impact_pct=0.0,
                   time_ranges=(), evidence=tuple(evidence), source=_source(where), fix=fix, facts=facts or {})


def oom_finding(r: oom_mod.OomReport) -> Finding:
    # the failing request and the device's memory at the failure: the summary line; the evidence is what was live
    facts = {"request_bytes": r.request_bytes, "device": r.device, "rank": r.rank, "where": r.where,
             "free_bytes": r.free_bytes, "reserved_bytes": r.reserved_bytes, "allocated_bytes": r.allocated_bytes,
             "total_bytes": r.total_bytes, "unallocated_reserved_bytes": r.unallocated_reserved_bytes,
             "largest_free_block_bytes": r.largest_free_block_bytes or None}
    ev = [{"name": f"live at {g.where}", "bytes": g.bytes, "count": g.count, "kind": g.kind} for g in r.groups[:5]]
    return _finding("oom", Severity.ERROR, r.headline(), ev, " ".join(r.suggestions), r.where, facts=facts)


def growth_finding(g: oom_mod.Growth, rank: int, source: str) -> Finding:
    per = g.growth_bytes / max(len(g.per_step_bytes) - 1, 1)
    ev = [{"name": f"step {k + 1} end", "live_bytes": b, "rank": rank, "where": g.where}
          for k, b in enumerate(g.per_step_bytes)]
    return _finding(
        "memory_growth", Severity.WARNING,
        f"Live memory allocated at {g.where} grows every step: +{fmt_bytes(per)} per step "
        f"({fmt_bytes(g.per_step_bytes[0])} → {fmt_bytes(g.per_step_bytes[-1])}, {source})",
        ev, "Something keeps these tensors alive across steps: accumulate losses/metrics with .item() or "
            ".detach() (not the graph-holding tensor), do not append outputs to a list, clear caches.",
        g.where if _source(g.where) else "", count=len(g.per_step_bytes))


def bundle_findings(path: str | Path, load=None) -> list[Finding]:
    """`oom` per recorded OOM (+ `memory_growth` from its snapshot's history), else `memory_growth` from
    memory.snapshot.pickle. [] for anything that is not a bundle with either, or that cannot be read
    (the trace findings never depend on it)."""
    try:
        return _bundle_findings(path, load)
    except Exception:  # noqa: BLE001 - run.json / snapshots are the user's files
        import logging
        logging.getLogger(__name__).warning("could not read the bundle's OOM records", exc_info=True)
        return []


def _bundle_findings(path: str | Path, load=None) -> list[Finding]:
    root = Path(path)
    if not root.is_dir() or not (root / "run.json").is_file():
        return []
    out: list[Finding] = []
    reports = oom_mod.oom_reports(root, load=load)
    for r in reports:
        out.append(oom_finding(r))
        out += [growth_finding(g, r.rank, "allocator history up to the OOM") for g in r.growth[:3]]
    if not reports and (root / HISTORY_SNAPSHOT).is_file():
        if load is None:
            from core.snapshot.load import load_snapshot as load
        try:
            snap = load(root / HISTORY_SNAPSHOT)
        except Exception:  # noqa: BLE001 - the trace findings still stand
            return out
        ends = oom_mod.step_ends_ns(root, 0)
        for d in snap.devices:
            out += [growth_finding(g, 0, f"cuda:{d} allocator history") for g in oom_mod.memory_growth(snap, d, ends)[:3]]
    return out

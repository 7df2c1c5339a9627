"""Everything the OOM view shows, computed off the UI thread: `iter_oom_view(bundle)` yields
core.trace.loader.Progress and returns an OomView (the first OOM's report, core/analysis/oom.py, and the
SnapshotReport of the snapshot written at the failure: timeline and per-allocation blocks)."""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from core.analysis import oom
from core.generators import result_of
from core.snapshot.report import SnapshotReport, iter_snapshot_report
from core.trace.loader import Progress
from core.trace.model import TraceParseError


@dataclass(frozen=True, slots=True)
class OomView:
    path: str  # the bundle
    report: oom.OomReport
    snapshot: SnapshotReport | None  # None: no snapshot could be read (the run.json figures only)
    traces: tuple[str, ...]  # the bundle's trace files (the view offers to open them)
    others: int = 0  # further ranks that ran out of memory


def is_oom_bundle(path: str | Path) -> bool:
    """A run bundle whose run.json records an OOM (status "oom")."""
    p = Path(path)
    if not p.is_dir():
        return False
    run = oom.read_run(p)
    return run.get("status") == "oom" and isinstance(run.get("oom"), list) and bool(run["oom"])


def iter_oom_view(path: str | Path) -> Generator[Progress, None, OomView]:
    root = Path(path)
    yield Progress("reading run.json", 0.05, root.name)
    snap_reports: dict[str, SnapshotReport] = {}

    def load(p: Path):
        report = snap_reports[str(p)] = result_of(iter_snapshot_report(p))
        return report.snapshot
    yield Progress("reading the snapshot at the failure", 0.2, root.name)
    reports = oom.oom_reports(root, load=load)
    if not reports:
        raise TraceParseError(root, "run.json records no OOM")
    r = reports[0]
    traces = tuple(sorted(str(p.relative_to(root)) for p in (root / "traces").glob("*.pt.trace.json*")))
    yield Progress("done", 1.0, root.name)
    return OomView(str(root), r, snap_reports.get(r.snapshot), traces, len(reports) - 1)

"""`ptprof report` of a multi-rank run, one rank at a time.

`report_view` reads each rank once for its map (the analysis) and its parts (core/ranks/rank_parts.py: its share
of every table and figure, computed in its worker; core/ranks/onepass.py), and returns a RunView that
core.export.writer writes as it writes a loaded set: the same files, with memory O(workers x rank) instead of
every rank held.
"""
from __future__ import annotations

from core.ranks.executor import Executor


def report_view(path, use_cache: bool = True, width_px: int = 1600, pngs: bool = True, spec=None,
                executor: Executor | None = None):
    """(RunView with every rank's report parts, the run's RunAnalysis). The caller closes the view.

    One pass over the ranks (core/ranks/onepass.py): each rank is read once for the analysis and its parts; the
    timeline's window is the primary rank's (its busiest or asked-for step), read first."""
    from core.ranks.onepass import drain, iter_report_view
    return drain(iter_report_view(path, use_cache, width_px, pngs, spec, executor))

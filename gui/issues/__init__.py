"""Issues panel: findings of core.rules with cost, evidence, source and fix; per-step breakdown."""
from __future__ import annotations

from gui.issues.panel import IssuesPanel


def connect_timeline(panel: IssuesPanel, timeline) -> None:
    """Selecting a finding zooms `timeline` (show_range(t0_ns, t1_ns)) and highlights its evidence slices
    (highlight({model index: rows})); clicking a step in the breakdown zooms to that step."""
    panel.sig_finding_selected.connect(
        lambda mi, t0, t1, rows: (timeline.show_range(t0, t1), timeline.highlight({int(mi): rows})))
    panel.sig_range_requested.connect(lambda t0, t1: timeline.show_range(t0, t1))


__all__ = ["IssuesPanel", "connect_timeline"]

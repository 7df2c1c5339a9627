"""The HTA tab of a trace view, built the first time its tab is opened (its plot cost ~0.1 s of the open)."""
from __future__ import annotations

from gui.hta.tab import HtaTab


def build_when_opened(view) -> None:
    """Replace `view`'s HTA placeholder by a HtaTab of `view.trace_set` when that tab is first shown
    (now, if it already is). Opening it runs nothing: the tab's Run HTA button does."""
    def _on_view_tab_changed(i: int) -> None:
        if view.tabs.widget(i) is not view.hta_placeholder:
            return
        view.tabs.currentChanged.disconnect(_on_view_tab_changed)
        hta = HtaTab(view)
        view.tabs.setCurrentIndex(view.add_tab(hta, "HTA", replace_hta=True))
        hta.set_trace_set(view.trace_set)

    if view.tabs.indexOf(view.hta_placeholder) < 0:
        return  # built already
    view.tabs.currentChanged.connect(_on_view_tab_changed)
    _on_view_tab_changed(view.tabs.currentIndex())

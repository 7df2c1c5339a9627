"""HealthBanner: a line above the trace tab's timeline saying whether the trace can be trusted
(core.analysis.health.check, computed in a worker thread; hidden when nothing is worth a warning)."""
from __future__ import annotations

import html

import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.analysis import health
from gui import lane


class HealthBanner(QtWidgets.QLabel):
    sig_checked = QtCore.Signal(list)  # the health items (dicts), once computed

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("healthBanner")
        self.setWordWrap(True)
        self.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.setContentsMargins(8, 4, 8, 4)
        self.setStyleSheet("#healthBanner { background: palette(alternate-base); border-bottom: 1px solid palette(mid); }")
        self.items: list[dict] = []
        self.hide()

    def check(self, trace_set) -> None:
        """Run the checks in a worker; the banner shows the warnings and errors when they arrive."""
        worker = create_worker(lambda ts: [h.to_json() for h in health.check(ts)], trace_set, _start_thread=False,
                               _connect={"returned": self._on_checked, "errored": self._on_check_failed})
        lane.start(worker, lane.HEALTH)  # first in the after-open lane (gui/lane.py)

    def _on_checked(self, items: list) -> None:
        if not shiboken6.isValid(self):
            return
        self.set_items(items)

    def _on_check_failed(self, exc: BaseException) -> None:
        """A check that raised on odd data is one warning line in the banner, never a traceback."""
        if shiboken6.isValid(self):
            self.set_items([{"severity": "warning", "code": "check_failed",
                             "count": 1, "message": f"the trace check failed ({type(exc).__name__}: {exc})"[:300]}])

    def set_items(self, items: list) -> None:
        self.items = list(items)
        shown = [h for h in self.items if h["severity"] in ("warning", "error")]
        self.setToolTip("\n".join(f"{h['severity']}: {h['message']}" for h in self.items))
        if shown:
            icon = "⛔" if any(h["severity"] == "error" for h in shown) else "⚠"
            text = " · ".join(html.escape(h["message"]) for h in shown[:3])
            more = f" (+{len(shown) - 3} more)" if len(shown) > 3 else ""
            self.setText(f"{icon} <b>Trace check:</b> {text}{more}")
            self.show()
        else:
            self.hide()
        self.sig_checked.emit(self.items)

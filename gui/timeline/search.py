"""Search bar: name substring over every shown rank (the rank filter's hidden ranks are skipped),
next/previous, highlight all matches."""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from core.trace import query
from core.trace.model import TraceModel


class SearchBar(QtWidgets.QWidget):
    sig_matches_changed = QtCore.Signal(object)  # dict[model index, rows]
    sig_match_selected = QtCore.Signal(int, int)  # (model index, slice row)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.models: list[TraceModel] = []
        self.hidden_models: set[int] = set()
        self.match_models = np.zeros(0, np.int32)  # matches of all models, ordered by start time
        self.match_rows = np.zeros(0, np.int64)
        self.pos = -1
        self.edit = QtWidgets.QLineEdit(placeholderText="Search slices by name (Enter: next)", clearButtonEnabled=True)
        self.edit.returnPressed.connect(self.next)
        self.edit.textChanged.connect(self._on_edit_changed)
        self.prev_btn = QtWidgets.QToolButton(text="◀", toolTip="Previous match (Shift+Enter)")
        self.next_btn = QtWidgets.QToolButton(text="▶", toolTip="Next match (Enter)")
        self.prev_btn.clicked.connect(self.prev)
        self.next_btn.clicked.connect(self.next)
        self.count = QtWidgets.QLabel()
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.prev_btn)
        lay.addWidget(self.next_btn)
        lay.addWidget(self.count)
        sc = QtGui.QShortcut(QtGui.QKeySequence("Shift+Return"), self.edit)
        sc.activated.connect(self.prev)
        self._timer = QtCore.QTimer(self, singleShot=True, interval=250)
        self._timer.timeout.connect(self.run)

    def set_models(self, models: list[TraceModel]) -> None:
        self.models = list(models)
        self.hidden_models = set()
        self.run()

    def set_hidden_models(self, hidden: set[int]) -> None:
        """Rank filter changed: search only the shown ranks (re-runs the current search)."""
        self.hidden_models = set(hidden)
        self.run()

    def _on_edit_changed(self, _text: str) -> None:
        self._timer.start()

    def run(self) -> int:
        """Search now; returns the number of matches."""
        text = self.edit.text().strip()
        per_model = {}
        ts, mids, rows = [], [], []
        for mi, m in enumerate(self.models):
            if mi in self.hidden_models:
                continue
            r = query.search(m, text) if text else np.zeros(0, np.int64)
            if len(r):
                per_model[mi] = r
                ts.append(m.slices.ts_ns[r])
                mids.append(np.full(len(r), mi, np.int32))
                rows.append(r)
        if rows:
            order = np.argsort(np.concatenate(ts), kind="stable")
            self.match_models = np.concatenate(mids)[order]
            self.match_rows = np.concatenate(rows)[order]
        else:
            self.match_models = np.zeros(0, np.int32)
            self.match_rows = np.zeros(0, np.int64)
        self.pos = -1
        n = len(self.match_rows)
        self.count.setText(f"{n:,} matches" if text else "")
        self.sig_matches_changed.emit(per_model)
        return n

    def _step(self, d: int) -> None:
        if self._timer.isActive():
            self._timer.stop()
            self.run()
        n = len(self.match_rows)
        if not n:
            return
        self.pos = (self.pos + d) % n
        self.count.setText(f"{self.pos + 1:,} / {n:,}")
        self.sig_match_selected.emit(int(self.match_models[self.pos]), int(self.match_rows[self.pos]))

    def next(self) -> None:
        self._step(1)

    def prev(self) -> None:
        self._step(-1)

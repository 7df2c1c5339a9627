"""A read-only Qt table model over a pandas DataFrame (values formatted lazily, per visible cell)."""
from __future__ import annotations

import re

import numpy as np
from PySide6 import QtCore

_UNITS = {"us": "µs", "ns": "ns", "ms": "ms", "s": "s", "pctg": "%", "pct": "%", "percentage": "%"}
_WORDS = {"pctg": "%", "num": "number of", "cpu": "CPU", "gpu": "GPU", "id": "ID", "sm": "SM", "avg": "mean",
          "std": "std dev", "max": "max", "min": "min"}


def human_header(name: str) -> str:
    """A pandas column as a person would title it: `idle_time(us)` -> `Idle time (µs)`,
    `compute_time_pctg` -> `Compute time (%)`, `kernel_type` -> `Kernel type`."""
    text = str(name)
    unit = ""
    m = re.match(r"^(.*?)\s*\((\w+)\)\s*$", text)
    if m:
        text, unit = m.group(1), _UNITS.get(m.group(2), m.group(2))
    words = [w for w in re.split(r"[_\s]+", text) if w]
    if words and words[-1] in ("pctg", "percentage", "pct") and not unit:
        words, unit = words[:-1] or ["share"], "%"
    if words and words[-1] in ("us", "ns") and not unit:
        unit = _UNITS[words.pop()]
    out = " ".join(_WORDS.get(w, w) for w in words)
    out = out[:1].upper() + out[1:] if out else str(name)
    return f"{out} ({unit})" if unit else out


class DataFrameModel(QtCore.QAbstractTableModel):
    def __init__(self, frame=None, parent=None) -> None:
        super().__init__(parent)
        self._columns: list[str] = []
        self._data: list[np.ndarray] = []
        self._n = 0
        if frame is not None:
            self.set_frame(frame)

    def set_frame(self, frame) -> None:
        self.beginResetModel()
        if frame is None:
            self._columns, self._data, self._n = [], [], 0
        else:
            frame = frame.reset_index(drop=True)
            self._columns = [str(c) for c in frame.columns]
            self._data = [frame[c].to_numpy() for c in frame.columns]
            self._n = len(frame)
        self.endResetModel()

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else self._n

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role != QtCore.Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == QtCore.Qt.Orientation.Horizontal:
            return human_header(self._columns[section])
        return str(section)

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role not in (QtCore.Qt.ItemDataRole.DisplayRole, QtCore.Qt.ItemDataRole.ToolTipRole):
            return None
        v = self._data[index.column()][index.row()]
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else f"{v:,.2f}"
        if isinstance(v, (int, np.integer)):
            return f"{int(v):,}"
        text = str(v)
        if role == QtCore.Qt.ItemDataRole.DisplayRole and len(text) > 120:
            return text[:117] + "…"
        return text

    def column(self, name: str) -> np.ndarray | None:
        return self._data[self._columns.index(name)] if name in self._columns else None

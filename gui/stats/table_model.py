"""A Qt table model over numpy columns (no per-cell Python objects are built until a cell is shown),
plus a table view that sorts, filters (QSortFilterProxyModel) and copies the selection as TSV."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

Qt = QtCore.Qt


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    values: np.ndarray  # sort key (numbers sort numerically)
    fmt: Callable[[object], str] = str  # value -> display text
    tooltip: Callable[[int], str] | None = None  # row -> tooltip
    align_right: bool = True


class ColumnTableModel(QtCore.QAbstractTableModel):
    def __init__(self, columns: list[Column] | None = None, parent=None) -> None:
        super().__init__(parent)
        self.columns: list[Column] = columns or []

    def set_columns(self, columns: list[Column]) -> None:
        self.beginResetModel()
        self.columns = columns
        self.endResetModel()

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:
        if parent.isValid() or not self.columns:
            return 0
        return len(self.columns[0].values)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section].title
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        col = self.columns[index.column()]
        r = index.row()
        if role == Qt.ItemDataRole.DisplayRole:
            return col.fmt(col.values[r])
        if role == Qt.ItemDataRole.UserRole:  # sort key
            v = col.values[r]
            return v.item() if isinstance(v, np.generic) else v
        if role == Qt.ItemDataRole.ToolTipRole and col.tooltip is not None:
            return col.tooltip(r)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            h = Qt.AlignmentFlag.AlignRight if col.align_right else Qt.AlignmentFlag.AlignLeft
            return int(h | Qt.AlignmentFlag.AlignVCenter)
        return None


class FilterProxy(QtCore.QSortFilterProxyModel):
    """Sorts on the UserRole key; filters rows whose first column contains the filter text."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(Qt.ItemDataRole.UserRole)
        self.setFilterKeyColumn(0)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

    def lessThan(self, a, b) -> bool:
        va, vb = a.data(Qt.ItemDataRole.UserRole), b.data(Qt.ItemDataRole.UserRole)
        try:
            if isinstance(va, float) and va != va:  # NaN sorts first
                return not (isinstance(vb, float) and vb != vb)
            return va < vb
        except TypeError:
            return str(va) < str(vb)


class StatsTableView(QtWidgets.QTableView):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortingEnabled(True)
        self.setAlternatingRowColors(True)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(False)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        self.horizontalHeader().setStretchLastSection(True)
        self.horizontalHeader().setResizeContentsPrecision(64)  # size columns from 64 rows, not all
        copy = QtGui.QAction("Copy", self)
        copy.setShortcut(QtGui.QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        copy.triggered.connect(self.copy_selection)
        self.addAction(copy)
        self.act_copy = copy
        self.csv_export: Callable[[], None] | None = None  # set by the export wiring (gui/report/wiring.py)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_context_menu_requested)

    def context_menu(self) -> QtWidgets.QMenu:
        menu = QtWidgets.QMenu(self)
        menu.addAction(self.act_copy)
        if self.csv_export is not None:
            menu.addAction("Export table as CSV…", self.csv_export)
        return menu

    def _on_context_menu_requested(self, pos) -> None:
        self.context_menu().exec(self.viewport().mapToGlobal(pos))

    def copy_selection(self) -> str:
        """Selected rows as tab-separated text with a header line, to the clipboard."""
        model = self.model()
        rows = sorted({i.row() for i in self.selectionModel().selectedIndexes()})
        if not rows or model is None:
            return ""
        cols = range(model.columnCount())
        lines = ["\t".join(str(model.headerData(c, Qt.Orientation.Horizontal)) for c in cols)]
        for r in rows:
            lines.append("\t".join(str(model.index(r, c).data()) for c in cols))
        text = "\n".join(lines)
        QtWidgets.QApplication.clipboard().setText(text)
        return text

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


_DISPLAY, _SORT_KEY = int(Qt.ItemDataRole.DisplayRole), int(Qt.ItemDataRole.UserRole)
_TOOLTIP, _ALIGNMENT = int(Qt.ItemDataRole.ToolTipRole), int(Qt.ItemDataRole.TextAlignmentRole)
_ROLES = frozenset({_DISPLAY, _SORT_KEY, _TOOLTIP, _ALIGNMENT})
_ALIGN = {True: int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
          False: int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)}


class ColumnTableModel(QtCore.QAbstractTableModel):
    """data() is called ~8 times per shown cell and paint (once per role the delegate asks for), and
    rowCount/columnCount as often through the sort proxy: they answer from plain attributes, the
    roles nothing shows first (a 40-row table's paint was 45-90 ms beside the Issues analysis)."""

    def __init__(self, columns: list[Column] | None = None, parent=None) -> None:
        super().__init__(parent)
        self.columns: list[Column] = []
        self._n_rows = 0
        self._set(columns or [])

    def _set(self, columns: list[Column]) -> None:
        self.columns = columns
        self._n_rows = len(columns[0].values) if columns else 0

    def set_columns(self, columns: list[Column]) -> None:
        self.beginResetModel()
        self._set(columns)
        self.endResetModel()

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:
        return 0 if parent.isValid() else self._n_rows

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section].title
        return None

    def data(self, index, role=_DISPLAY):
        if role not in _ROLES or not index.isValid():
            return None
        col = self.columns[index.column()]
        if role == _DISPLAY:
            return col.fmt(col.values[index.row()])
        if role == _ALIGNMENT:
            return _ALIGN[col.align_right]
        if role == _SORT_KEY:
            v = col.values[index.row()]
            return v.item() if isinstance(v, np.generic) else v
        if col.tooltip is not None:  # _TOOLTIP
            return col.tooltip(index.row())
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

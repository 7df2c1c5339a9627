"""Delta tables (kernels / ops) and the findings tree of the Compare tab."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6 import QtGui, QtWidgets

from core import units
from core.analysis.diff import Row
from gui.stats.table_model import Column, ColumnTableModel, FilterProxy, StatsTableView

STATUS_TEXT = {"same": "", "new": "+ new", "gone": "− gone"}  # "＋" (fullwidth) was a box in DejaVu Sans


def _signed(ns) -> str:
    ns = float(ns)
    return ("+" if ns > 0 else "−" if ns < 0 else "±") + units.fmt_ns(abs(ns))


def delta_columns(rows: tuple[Row, ...], what: str) -> list[Column]:
    names = np.array([r.name for r in rows], dtype=object)
    return [
        Column("Name", names, align_right=False, tooltip=lambda i: str(names[i])),
        Column("Status", np.array([r.status for r in rows], dtype=object), fmt=lambda s: STATUS_TEXT[s],
               align_right=False),
        Column("A calls", np.array([r.a_calls for r in rows], np.int64)),
        Column("B calls", np.array([r.b_calls for r in rows], np.int64)),
        Column(f"A {what}", np.array([r.a_total_ns for r in rows], np.int64), fmt=units.fmt_ns),
        Column(f"B {what}", np.array([r.b_total_ns for r in rows], np.int64), fmt=units.fmt_ns),
        Column("Δ", np.array([r.delta_ns for r in rows], np.int64), fmt=_signed),
        Column("|Δ|", np.array([abs(r.delta_ns) for r in rows], np.int64), fmt=units.fmt_ns),
    ]


class DeltaTable(QtWidgets.QWidget):
    """Sortable, filterable table of matched rows; right-click exports it as CSV."""

    def __init__(self, rows: tuple[Row, ...], name: str, what: str, parent=None) -> None:
        super().__init__(parent)
        self.rows = rows
        self.name = name
        self.model = ColumnTableModel(delta_columns(rows, what), self)
        self.proxy = FilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.view = StatsTableView()
        self.view.setModel(self.proxy)
        self.view.sortByColumn(7, QtGui.Qt.SortOrder.DescendingOrder)  # largest change first
        self.view.csv_export = self._ask_export_csv
        self.filter = QtWidgets.QLineEdit(placeholderText=f"filter {name}…", clearButtonEnabled=True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.filter)
        lay.addWidget(self.view, 1)
        # Name takes the width (kernel names are long); the numbers fit their contents. A stretched
        # last column (|Δ|) took ~600 px while the names were cut at 520
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        self.view.resizeColumnsToContents()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)

    def export_csv(self, path: str | Path) -> Path:
        from core.export.csv import write_table
        from core.export.tables import ExportTable
        rows = self.rows
        columns = ("name", "status", "a_calls", "b_calls", "a_total_us", "b_total_us", "delta_us")
        data = ([r.name for r in rows], [r.status for r in rows], [r.a_calls for r in rows], [r.b_calls for r in rows],
                [r.a_total_ns / 1e3 for r in rows], [r.b_total_ns / 1e3 for r in rows], [r.delta_ns / 1e3 for r in rows])
        return write_table(ExportTable(f"{self.name}_diff", columns, data), path)

    def _ask_export_csv(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export table as CSV", f"{self.name}_diff.csv",
                                                        "CSV (*.csv)")
        if path:
            self.export_csv(path)


def findings_tree(findings: dict) -> QtWidgets.QTreeWidget:
    tree = QtWidgets.QTreeWidget()
    tree.setHeaderLabels(["Finding", "A", "B", "Δ"])
    tree.setRootIsDecorated(True)
    groups = (("fixed", "Fixed (in A, not in B)"), ("new", "New (in B, not in A)"), ("changed", "Changed"))
    for key, title in groups:
        items = findings.get(key, [])
        top = QtWidgets.QTreeWidgetItem([f"{title}: {len(items)}"])
        tree.addTopLevelItem(top)
        for f in items:
            if key == "changed":
                child = QtWidgets.QTreeWidgetItem([f"{f['rule']}: {f['title_b']}", units.fmt_ns(f["a_ns"]),
                                                   units.fmt_ns(f["b_ns"]), _signed(f["delta_ns"])])
            else:
                cost = units.fmt_ns(f.get("saving_ns") or f["impact_ns"])
                a, b = (cost, "") if key == "fixed" else ("", cost)
                child = QtWidgets.QTreeWidgetItem([f"{f['rule']}: {f['title']}", a, b, ""])
            child.setToolTip(0, child.text(0))
            top.addChild(child)
        top.setExpanded(True)
    header = tree.header()
    header.setStretchLastSection(False)
    for col in range(1, 4):
        header.setSectionResizeMode(col, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)  # the titles get the width
    return tree

"""The stats tables' model answers each role the view asks for (text, sort key, tooltip, alignment),
nothing for the others, and its row count follows its columns through the sort/filter proxy."""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore

from gui.stats.table_model import Column, ColumnTableModel, FilterProxy

Qt = QtCore.Qt


def _model():
    return ColumnTableModel([
        Column("Name", np.array(["b_kernel", "a_kernel", "c_kernel"], dtype=object), str, align_right=False,
               tooltip=lambda r: f"row {r}"),
        Column("Time", np.array([30, 10, 20], dtype=np.int64), lambda v: f"{v} ns"),
    ])


def test_each_role_answers_and_the_rest_are_empty(qapp):
    m = _model()
    name, time = m.index(1, 0), m.index(1, 1)
    assert m.data(name) == "a_kernel" and m.data(time, Qt.ItemDataRole.DisplayRole) == "10 ns"
    assert m.data(time, Qt.ItemDataRole.UserRole) == 10 and isinstance(m.data(time, Qt.ItemDataRole.UserRole), int)
    assert m.data(name, Qt.ItemDataRole.ToolTipRole) == "row 1" and m.data(time, Qt.ItemDataRole.ToolTipRole) is None
    right = m.data(time, Qt.ItemDataRole.TextAlignmentRole)
    left = m.data(name, Qt.ItemDataRole.TextAlignmentRole)
    assert right & int(Qt.AlignmentFlag.AlignRight) and left & int(Qt.AlignmentFlag.AlignLeft)
    assert right & int(Qt.AlignmentFlag.AlignVCenter) and left & int(Qt.AlignmentFlag.AlignVCenter)
    for role in (Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.BackgroundRole,
                 Qt.ItemDataRole.CheckStateRole, Qt.ItemDataRole.EditRole):
        assert m.data(time, role) is None
    assert m.data(QtCore.QModelIndex()) is None


def test_row_count_follows_the_columns_through_the_proxy(qapp):
    m = _model()
    proxy = FilterProxy()
    proxy.setSourceModel(m)
    proxy.sort(1, Qt.SortOrder.AscendingOrder)
    assert [proxy.index(r, 0).data() for r in range(proxy.rowCount())] == ["a_kernel", "c_kernel", "b_kernel"]
    m.set_columns([Column("Name", np.array(["x"], dtype=object), str)])
    assert m.rowCount() == proxy.rowCount() == 1 and m.columnCount() == 1
    m.set_columns([])
    assert m.rowCount() == proxy.rowCount() == 0 and m.columnCount() == 0
    assert m.rowCount(m.index(0, 0)) == 0  # a flat table: no children

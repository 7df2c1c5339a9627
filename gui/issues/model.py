"""FindingsModel: the findings of an Analysis as a Qt table (severity icon, title, Lost / step, Saves / step, count,
rule), in the words and order of core/analysis/vocab.py (the report's, findings.csv's and `ptprof analyze`'s)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from core.analysis import vocab
from core.rules.base import Finding, Severity

COLUMNS = ("Severity", "Problem", vocab.LOST, vocab.SAVES, "Count", "Rule", "Try")
LOST_COLUMN, SAVES_COLUMN = COLUMNS.index(vocab.LOST), COLUMNS.index(vocab.SAVES)
TRY_COLUMN = COLUMNS.index("Try")
TRY_TEXT = "Try"
_ICONS = {Severity.ERROR: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxCritical,
          Severity.WARNING: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning,
          Severity.INFO: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxInformation}
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
_HEADERS = {"Severity": "", "Try": "▸"}
_HEADER_TIPS = {"Severity": "Severity (error, warning, info)",
                vocab.LOST: f"Time the problem takes per profiled step (the {vocab.STATISTIC} over the window), and as "
                            f"{vocab.OF_MEAN}; a one-off cost (a recompile, a cold start) says where it was paid",
                vocab.SAVES: f"What the fix would give back per step (what-if replay of the critical path: the "
                             f"{vocab.SAVES_STATISTIC}), and as "
                             f"{vocab.OF_MEAN}",
                "Try": "Try the fix at run time, no code change: the run again with a switch on, measured and compared"}


def severity_icon(sev: Severity) -> QtGui.QIcon:
    return QtWidgets.QApplication.style().standardIcon(_ICONS[sev])


def saving_label(f: Finding, short: bool = False) -> str:
    """"1.20 ms (3.2 % of mean step)" (short, a table cell: "1.20 ms" over "3.2 %"), "≈ 0", or "—" without a
    what-if (core/analysis/vocab.py: the words of the report and `ptprof analyze`)."""
    return vocab.saves_text(f, short)


class FindingsModel(QtCore.QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._findings: list[Finding] = []  # in the shown order (sort)
        self._base: list[Finding] = []  # in the report's order
        self._sort: tuple = (0, QtCore.Qt.SortOrder.DescendingOrder)  # (column, order) the rows are sorted by
        self._order: dict[int, int] = {}
        self._cells: dict[int, tuple] = {}  # row -> its display texts, made once (data() is asked per role and paint)
        self._icons: dict[Severity, QtGui.QIcon] = {}
        self.try_enabled = False  # the findings come from a run bundle: Try it can run its command again

    def set_findings(self, findings) -> None:
        self.beginResetModel()
        self._base = sorted(findings, key=vocab.order_key)  # the order of the report and `ptprof analyze`
        self._order = {id(f): len(self._base) - i for i, f in enumerate(self._base)}
        self._findings = self._sorted(*self._sort)
        self._cells = {}
        self.endResetModel()

    def sort(self, column: int, order=QtCore.Qt.SortOrder.AscendingOrder) -> None:
        """Rows by the column's SORT_ROLE value, equal values in the report's order (as a sorting proxy would
        sort the source: stable), in one Python sort. A QSortFilterProxyModel asked data() twice per comparison
        through C++: at 1,153 findings 15,000 calls, 50-70 ms of the UI thread at each result."""
        self._sort = (int(column), order)
        if not self._base:
            return
        self.layoutAboutToBeChanged.emit()
        before = self._findings
        self._findings = self._sorted(*self._sort)
        self._cells = {}
        where = {id(f): row for row, f in enumerate(self._findings)}
        old = self.persistentIndexList()  # the selection, the current row: they follow their finding
        self.changePersistentIndexList(old, [self.index(where[id(before[i.row()])], i.column()) for i in old])
        self.layoutChanged.emit()

    def _sorted(self, column: int, order) -> list[Finding]:
        if column < 0 or column >= len(COLUMNS):
            return list(self._base)
        keys = [self._sort_key(i, column) for i in range(len(self._base))]
        rows = sorted(range(len(self._base)), key=keys.__getitem__,
                      reverse=order == QtCore.Qt.SortOrder.DescendingOrder)
        return [self._base[r] for r in rows]

    def _sort_key(self, i: int, col: int):
        f = self._base[i]
        if col == TRY_COLUMN:
            return 1 if self.try_enabled and self._switch(f) else 0
        return (len(self._base) - i, f.title, f.impact_ns, f.saving_ns if f.saving_ns is not None else -1, f.count,
                f.rule)[col]

    @staticmethod
    def _switch(f: Finding):
        from core.tryfix.fixes import switch_for_rule
        return switch_for_rule(f.rule)

    def try_spec(self, row: int) -> str | None:
        """The runtime switch that tries this row's fix (core.tryfix.fixes), or None (a code change)."""
        if not self.try_enabled:
            return None
        from core.tryfix.fixes import switch_for_rule
        return switch_for_rule(self._findings[row].rule)

    def finding(self, row: int) -> Finding:
        return self._findings[row]

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self._findings)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != QtCore.Qt.Orientation.Horizontal:
            return None
        if role == QtCore.Qt.ItemDataRole.DisplayRole:  # short headers: the dock's width goes to the Problem
            return _HEADERS.get(COLUMNS[section], COLUMNS[section])
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            return _HEADER_TIPS.get(COLUMNS[section], COLUMNS[section])
        return None

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        f = self._findings[index.row()]
        col = index.column()
        if col == TRY_COLUMN:
            spec = self.try_spec(index.row())
            if role == QtCore.Qt.ItemDataRole.DisplayRole:
                return TRY_TEXT if spec else ""
            if role == SORT_ROLE:
                return 1 if spec else 0
            if role == QtCore.Qt.ItemDataRole.ToolTipRole:
                return (f"Try it: run again with {spec} switched on (no code change), measure, compare" if spec
                        else "This fix needs a code change: no runtime switch applies it")
            if role == QtCore.Qt.ItemDataRole.ForegroundRole and spec:
                return QtGui.QBrush(QtWidgets.QApplication.palette().color(QtGui.QPalette.ColorRole.Link))
            return None
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            # the severity is its icon (the word is the tooltip): the narrow dock's width goes to the Problem
            cells = self._cells.get(index.row())
            if cells is None:
                cells = self._cells[index.row()] = ("", f.title, vocab.lost_text(f, short=True),
                                                    vocab.saves_text(f, short=True), str(f.count), f.rule)
            return cells[col]
        if role == SORT_ROLE:
            # the Severity column sorts (descending) in the one order of core/analysis/vocab.py
            return (self._order.get(id(f), 0), f.title, f.impact_ns,
                    f.saving_ns if f.saving_ns is not None else -1, f.count, f.rule)[col]
        if role == QtCore.Qt.ItemDataRole.DecorationRole and col == 0:
            if f.severity not in self._icons:
                self._icons[f.severity] = severity_icon(f.severity)
            return self._icons[f.severity]
        if role == QtCore.Qt.ItemDataRole.ToolTipRole and col == 0:
            return f.severity.label + (" (hint)" if f.hint else "")
        if role == QtCore.Qt.ItemDataRole.AccessibleTextRole and col == 0:
            return f.severity.label
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            extra = f"\n\nsaving: {f.estimate}" if f.estimate else ""
            once = f"\n\n{vocab.one_off_text(f)} (paid once, not every step)" if f.one_off else ""
            return f"{f.title}{once}\n\nfix: {f.fix}{extra}"
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and col in (LOST_COLUMN, SAVES_COLUMN, 4):
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None


class SourceSortProxy(QtCore.QSortFilterProxyModel):
    """A proxy that leaves sorting to its source (FindingsModel.sort) and keeps the source's row order."""

    def sort(self, column: int, order=QtCore.Qt.SortOrder.AscendingOrder) -> None:
        self.sourceModel().sort(column, order)

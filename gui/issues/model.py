"""FindingsModel: the findings of an Analysis as a Qt table (severity icon, title, impact, % of step, count, rule)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from core import units
from core.rules.base import Finding, Severity

COLUMNS = ("Severity", "Problem", "Impact", "% step", "Count", "Rule")
_ICONS = {Severity.ERROR: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxCritical,
          Severity.WARNING: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning,
          Severity.INFO: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxInformation}
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1


def rank_ns(f: Finding) -> int:
    """What orders findings of one severity: the estimated saving when the finding has one, else its impact."""
    saving = getattr(f, "saving_ns", None)
    return int(saving) if saving is not None else int(f.impact_ns)


def severity_key(f: Finding) -> float:
    """Severity first (errors on top when sorted descending), then saving / impact: one number, so that
    the Severity column sorts like the default order."""
    return float(int(f.severity)) * 1e18 + float(rank_ns(f))


def severity_icon(sev: Severity) -> QtGui.QIcon:
    return QtWidgets.QApplication.style().standardIcon(_ICONS[sev])


class FindingsModel(QtCore.QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._findings: list[Finding] = []
        self._icons: dict[Severity, QtGui.QIcon] = {}

    def set_findings(self, findings) -> None:
        self.beginResetModel()
        self._findings = sorted(findings, key=lambda f: -severity_key(f))
        self.endResetModel()

    def finding(self, row: int) -> Finding:
        return self._findings[row]

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self._findings)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == QtCore.Qt.Orientation.Horizontal and role == QtCore.Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        f = self._findings[index.row()]
        col = index.column()
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return (f.severity.label + (" (hint)" if f.hint else ""), f.title, units.fmt_ns(f.impact_ns),
                    f"{f.impact_pct:.1f}", str(f.count), f.rule)[col]
        if role == SORT_ROLE:
            return (severity_key(f), f.title, f.impact_ns, f.impact_pct, f.count, f.rule)[col]
        if role == QtCore.Qt.ItemDataRole.DecorationRole and col == 0:
            if f.severity not in self._icons:
                self._icons[f.severity] = severity_icon(f.severity)
            return self._icons[f.severity]
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            return f"{f.title}\n\nfix: {f.fix}"
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and col in (2, 3, 4):
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None

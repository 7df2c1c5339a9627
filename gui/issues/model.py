"""FindingsModel: the findings of an Analysis as a Qt table (severity icon, title, impact, % of step, what the fix
would save per step, count, rule)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from core import units
from core.analysis import vocab
from core.rules.base import Finding, Severity

COLUMNS = ("Severity", "Problem", "Impact", "% step", "Saves", "Count", "Rule", "Try")
TRY_COLUMN = COLUMNS.index("Try")
TRY_TEXT = "Try"
_ICONS = {Severity.ERROR: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxCritical,
          Severity.WARNING: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning,
          Severity.INFO: QtWidgets.QStyle.StandardPixmap.SP_MessageBoxInformation}
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
_HEADERS = {"Severity": "", "% step": "%", "Try": "▸"}
_HEADER_TIPS = {"Severity": "Severity (error, warning, info)", "Impact": "Time the problem takes per window",
                "% step": "Impact as % of the step", "Saves": "What the fix would save per step (what-if replay)",
                "Try": "Try the fix at run time, no code change: the run again with a switch on, measured and compared"}


def impact_cell(f: Finding) -> str:
    """The Impact column: the time lost, or for a one-off cost "one-off: 3.84 s" over "at step 4"."""
    label = vocab.one_off_text(f)
    if label:
        head, _, where = label.partition(" at ")
        return f"{head}\nat {where}" if where else head
    return units.fmt_ns(f.impact_ns)


def severity_icon(sev: Severity) -> QtGui.QIcon:
    return QtWidgets.QApplication.style().standardIcon(_ICONS[sev])


def saving_label(f: Finding, short: bool = False) -> str:
    """"est. −1.20 ms/step (−3.2 %)" (short, for the table column "Saves": "−1.20 ms (−3.2 %)"),
    or "—" without a what-if."""
    if f.saving_ns is None:
        return "—"
    if f.saving_ns < 1_000:  # under a microsecond per step: the fix would not change the step
        return "≈ 0" if short else "est. ≈ 0 per step (the step would not get shorter)"
    pct = f" (−{f.saving_pct:.1f} %)" if f.saving_pct is not None else ""
    if short:  # a narrow dock: the per-step saving and its share, "−1.20 ms 3.2%"
        return f"−{units.fmt_ns(f.saving_ns)} {f.saving_pct:.1f}%" if f.saving_pct is not None else \
            f"−{units.fmt_ns(f.saving_ns)}"
    return f"est. −{units.fmt_ns(f.saving_ns)}/step{pct}"


class FindingsModel(QtCore.QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._findings: list[Finding] = []
        self._order: dict[int, int] = {}
        self._icons: dict[Severity, QtGui.QIcon] = {}
        self.try_enabled = False  # the findings come from a run bundle: Try it can run its command again

    def set_findings(self, findings) -> None:
        self.beginResetModel()
        self._findings = sorted(findings, key=vocab.order_key)  # the order of the report and `ptprof analyze`
        self._order = {id(f): len(self._findings) - i for i, f in enumerate(self._findings)}
        self.endResetModel()

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
            return ("", f.title, impact_cell(f),
                    f"{f.impact_pct:.1f}", saving_label(f, short=True), str(f.count), f.rule)[col]
        if role == SORT_ROLE:
            # the Severity column sorts (descending) in the one order of core/analysis/vocab.py
            return (self._order.get(id(f), 0), f.title, f.impact_ns, f.impact_pct,
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
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and col in (2, 3, 4, 5):
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None

"""Start page shown when no trace is open: open buttons, Run script…, the sample, a drop hint and recent files."""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets


class StartPage(QtWidgets.QWidget):
    sig_open_file_clicked = QtCore.Signal()
    sig_open_folder_clicked = QtCore.Signal()
    sig_run_script_clicked = QtCore.Signal()  # wired by the lead to the run dialog
    sig_sample_clicked = QtCore.Signal()
    sig_recent_clicked = QtCore.Signal(str)
    sig_recent_pair_chosen = QtCore.Signal(str, str)  # (A: the entry opened earlier, B: the one opened later)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        title = QtWidgets.QLabel("<h1>ptprof</h1><p>Profile PyTorch training: run a script under "
                                 "torch.profiler or open a saved trace.</p>")
        title.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.open_btn = QtWidgets.QPushButton("Open trace…")
        self.folder_btn = QtWidgets.QPushButton("Open folder…")
        self.run_btn = QtWidgets.QPushButton("Run script…")
        self.run_btn.setEnabled(False)
        self.run_btn.setToolTip("Run a training script under the profiler")
        self.sample_btn = QtWidgets.QPushButton("Open the sample trace")
        # the window accepts drops (MainWindow.dropEvent): say so where a new user looks first
        self.drop_hint = QtWidgets.QLabel(
            "or <b>drop</b> a trace, a log / multi-rank folder, a run bundle<br>or a CUDA memory snapshot "
            "(<code>.pickle</code>) anywhere on this window")
        self.drop_hint.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.drop_hint.setWordWrap(True)
        self.drop_hint.setFixedWidth(640)
        self.drop_hint.setContentsMargins(16, 14, 16, 14)
        self.drop_hint.setObjectName("drop_hint")
        self.drop_hint.setStyleSheet("#drop_hint { border: 2px dashed palette(mid); border-radius: 8px; }")
        for b, sig in ((self.open_btn, self.sig_open_file_clicked), (self.folder_btn, self.sig_open_folder_clicked),
                       (self.run_btn, self.sig_run_script_clicked), (self.sample_btn, self.sig_sample_clicked)):
            b.setMinimumWidth(220)
            b.clicked.connect(sig)
        self.recent = QtWidgets.QListWidget()
        self.recent.setMinimumWidth(640)
        self.recent.setMaximumHeight(220)
        self.recent.itemActivated.connect(lambda it: self.sig_recent_clicked.emit(it.data(QtCore.Qt.ItemDataRole.UserRole)))
        # select two entries (Ctrl/Shift+click) to compare them: the one opened earlier is the baseline (A)
        self.recent.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.compare_btn = QtWidgets.QPushButton("Compare the two selected")
        self.compare_btn.setToolTip("Select two recent entries (Ctrl+click): the one opened earlier (lower in the "
                                    "list) is the baseline A")
        self.compare_btn.setEnabled(False)
        self.compare_btn.clicked.connect(self._compare_selected)
        self.recent.itemSelectionChanged.connect(
            lambda: self.compare_btn.setEnabled(len(self.recent.selectedItems()) == 2))
        col = QtWidgets.QVBoxLayout()
        col.addStretch(1)
        col.addWidget(title)
        for b in (self.open_btn, self.folder_btn, self.run_btn, self.sample_btn):
            col.addWidget(b, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        col.addSpacing(12)
        col.addWidget(self.drop_hint, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        col.addSpacing(16)
        col.addWidget(QtWidgets.QLabel("Recent"), 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        col.addWidget(self.recent, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        col.addWidget(self.compare_btn, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        col.addStretch(2)
        self.setLayout(col)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for p in paths:
            it = QtWidgets.QListWidgetItem(f"{Path(p).name}    —    {Path(p).parent}")
            it.setData(QtCore.Qt.ItemDataRole.UserRole, p)
            self.recent.addItem(it)

    def selected_pair(self) -> tuple[str, str] | None:
        """(A, B) of the two selected recent entries, A the one opened earlier (the list is newest first)."""
        rows = sorted(self.recent.row(it) for it in self.recent.selectedItems())
        if len(rows) != 2:
            return None
        newer, older = (self.recent.item(r).data(QtCore.Qt.ItemDataRole.UserRole) for r in rows)
        return older, newer

    def _compare_selected(self) -> None:
        pair = self.selected_pair()
        if pair is not None:
            self.sig_recent_pair_chosen.emit(*pair)

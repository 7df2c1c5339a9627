"""ConsoleWidget: the run's stdout/stderr, bounded (oldest lines dropped) and searchable.

The full output is saved by the runner in the bundle (stdout.log / stderr.log); this view keeps the
last `max_lines`.
"""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

MAX_LINES = 5000


class ConsoleWidget(QtWidgets.QWidget):
    sig_search_missed = QtCore.Signal(str)  # the search text was not found

    def __init__(self, parent: QtWidgets.QWidget | None = None, max_lines: int = MAX_LINES):
        super().__init__(parent)
        self.text = QtWidgets.QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(max_lines)
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.search = QtWidgets.QLineEdit(self)
        self.search.setPlaceholderText("Search output (Enter: next, Shift+Enter: previous)")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self._on_search_return_pressed)
        self.follow = QtWidgets.QCheckBox("Follow", self)
        self.follow.setChecked(True)
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.search, 1)
        top.addWidget(self.follow)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.text, 1)
        self._plain = QtGui.QTextCharFormat()
        self._err = QtGui.QTextCharFormat()
        self._err.setForeground(QtGui.QColor("#d9534f"))
        self._note = QtGui.QTextCharFormat()
        self._note.setForeground(QtGui.QColor("#5b8def"))

    def append_lines(self, lines: list[tuple[str, str]]) -> None:
        """[(stream, text)]: stderr in red, "ptprof" notes in blue."""
        if not lines:
            return
        cursor = QtGui.QTextCursor(self.text.document())
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for stream, line in lines:
            fmt = self._err if stream == "stderr" else (self._note if stream == "ptprof" else self._plain)
            if not self.text.document().isEmpty():
                cursor.insertBlock()
            cursor.insertText(line, fmt)
        cursor.endEditBlock()
        if self.follow.isChecked():
            self.text.verticalScrollBar().setValue(self.text.verticalScrollBar().maximum())

    def append_note(self, text: str) -> None:
        self.append_lines([("ptprof", text)])

    def clear(self) -> None:
        self.text.clear()

    def line_count(self) -> int:
        return self.text.document().blockCount() if not self.text.document().isEmpty() else 0

    def find(self, needle: str, backward: bool = False) -> bool:
        """Select the next (or previous) match, wrapping around once."""
        if not needle:
            return False
        flags = QtGui.QTextDocument.FindFlag.FindBackward if backward else QtGui.QTextDocument.FindFlag(0)
        if self.text.find(needle, flags):
            return True
        cursor = self.text.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End if backward else QtGui.QTextCursor.MoveOperation.Start)
        self.text.setTextCursor(cursor)
        found = self.text.find(needle, flags)
        if not found:
            self.sig_search_missed.emit(needle)
        return found

    def _on_search_return_pressed(self) -> None:
        back = bool(QtWidgets.QApplication.keyboardModifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier)
        self.follow.setChecked(False)
        self.find(self.search.text(), backward=back)

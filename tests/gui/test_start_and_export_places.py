"""Start page: no empty Issues dock, says that files can be dropped. Exports default to a folder next to
the trace (or ~/ptprof-reports) and end with a non-modal note that offers to open the result."""
from __future__ import annotations

from PySide6 import QtWidgets


def test_start_page_has_the_whole_window_and_says_files_can_be_dropped(qtbot, main_window):
    assert main_window.stack.currentWidget() is main_window.start_page
    qtbot.wait(20)
    assert not main_window.issues_dock.isVisible()
    assert "drop" in main_window.start_page.drop_hint.text()
    assert main_window.acceptDrops()


def test_export_folder_defaults_next_to_the_trace_not_the_repository(tmp_path):
    from gui.actions import SAMPLE
    from gui.report.places import REPORTS_DIR, default_export_dir
    trace = tmp_path / "run" / "x.pt.trace.json.gz"
    trace.parent.mkdir()
    trace.write_bytes(b"")
    assert default_export_dir(trace) == trace.parent
    assert default_export_dir(trace.parent) == trace.parent  # a run bundle / multi-rank folder
    assert default_export_dir(SAMPLE) == REPORTS_DIR  # the bundled sample sits in the repository
    assert default_export_dir(None) == REPORTS_DIR


def test_a_finished_export_leaves_a_note_with_open_buttons(qtbot, main_window, tmp_path):
    from gui.report.places import show_done
    report = tmp_path / "report.html"
    report.write_text("<html></html>")
    note = show_done(main_window, report)
    assert note is not None and note.isVisible() and str(tmp_path) in note.label.text()
    assert note.open_folder.text() == "Open folder" and note.open_file.text() == "Open report"
    again = show_done(main_window, tmp_path)  # the next export replaces it
    assert again is not note and again.open_file is None
    assert not any(isinstance(w, QtWidgets.QDialog) and w.isVisible() for w in QtWidgets.QApplication.topLevelWidgets())

"""Starting the app: --help without Qt, bad paths, the start page and the sample on launch."""
from __future__ import annotations

import subprocess
import sys

from helpers import REPO, SAMPLE


def test_help_prints_usage_without_starting_qt():
    code = ("import sys\nfrom gui.app import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "assert 'PySide6' not in sys.modules, 'Qt imported for --help'\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "ptprof-gui [PATH ...]" in proc.stdout


def test_main_py_help():
    proc = subprocess.run([sys.executable, "main.py", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "usage: ptprof-gui" in proc.stdout


def test_missing_path_is_one_line_exit_2():
    from gui.app import main
    assert main(["/nonexistent/trace.json"]) == 2


def test_start_page_then_sample(qtbot, main_window, open_and_wait):
    win = main_window
    assert win.stack.currentWidget() is win.start_page
    assert win.start_page.run_btn.isEnabled()  # wired to the run dialog (gui/integrations.py)
    win.action_run_script.setEnabled(True)
    assert win.start_page.run_btn.isEnabled()
    ts = open_and_wait(win, SAMPLE)
    assert win.stack.currentWidget() is win.tabs and win.tabs.count() == 1
    view = win.current_view()
    assert view.trace_set is ts and len(view.timeline.rows) > 0
    assert win.recent_menu.isEnabled() is False  # the bundled sample is not a "recent" file
    win.close_tab(0)
    assert win.stack.currentWidget() is win.start_page


def test_main_without_paths_opens_the_sample(qtbot, monkeypatch):
    from PySide6 import QtWidgets

    from gui import app as app_mod
    from gui.main_window import MainWindow
    opened = []
    monkeypatch.setattr(MainWindow, "open_sample", lambda self: opened.append("sample"))
    monkeypatch.setattr(MainWindow, "open_path", lambda self, p, in_process=None: opened.append(str(p)))
    # the traces open after the window's first paint (gui/app.py after_first_paint): run the event loop till then
    monkeypatch.setattr(QtWidgets.QApplication, "exec",
                        lambda self: qtbot.waitUntil(lambda: bool(opened), timeout=20_000) or 0)
    assert app_mod.main([]) == 0
    assert opened == ["sample"]
    opened.clear()
    assert app_mod.main([str(SAMPLE)]) == 0
    assert opened[-1] == str(SAMPLE)
    for w in QtWidgets.QApplication.topLevelWidgets():
        if isinstance(w, MainWindow):
            w.close()
            w.deleteLater()


FIRST_PAINT = r"""
import json, os, sys
from PySide6 import QtCore, QtWidgets
HEAVY = ("superqt", "pyqtgraph", "numpy", "core.rules", "core.trace.model", "gui.integrations")
seen = {}
class Spy(QtCore.QObject):
    def eventFilter(self, obj, ev):
        if (ev.type() == QtCore.QEvent.Type.Paint and "heavy" not in seen and isinstance(obj, QtWidgets.QWidget)
                and obj.window().isVisible()):
            seen["heavy"] = sorted(m for m in HEAVY if m in sys.modules)
        return False
spy = Spy()
init = QtWidgets.QApplication.__init__
def patched(self, *a, **k):
    init(self, *a, **k)
    self.installEventFilter(spy)
    def check():
        wins = [w for w in QtWidgets.QApplication.topLevelWidgets() if hasattr(w, "views") and w.views()]
        if wins and wins[0].integrations is not None:
            print("RESULT " + json.dumps(dict(seen, tabs=wins[0].tabs.count())), flush=True)
            os._exit(0)
    timer = QtCore.QTimer(self, interval=50)
    timer.timeout.connect(check)
    timer.start()
QtWidgets.QApplication.__init__ = patched
from gui.app import main
main([])
"""


def test_window_paints_before_the_heavy_imports_then_opens_the_sample(tmp_path):
    """Issue 31: the window's first paint comes before superqt, pyqtgraph, numpy and the rule engine are
    imported (1.0-1.15 -> 0.23-0.31 CPU s to first paint: bench/bench_startup.py); the sample opens after it."""
    import json
    import os
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PTPROF_SETTINGS_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", FIRST_PAINT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=240)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, proc.stderr[-3000:]
    got = json.loads(line[7:])
    assert got["heavy"] == [] and got["tabs"] == 1

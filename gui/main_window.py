"""MainWindow: tabs of open traces, File menu, docks, status-bar progress. Wires; panels live elsewhere.

Extension points for the lead / other helpers:
  - `sig_trace_loaded(TraceSet)` after a trace opened in a new tab (`current_view()` is its TraceView)
  - `add_dock(widget, title, area)` -> QDockWidget (added to the View menu); `issues_dock` is reserved
    for the Issues panel: `set_issues_widget(widget)`
  - `add_menu_action(menu_title, action, before=None)`; `action_run_script` / `action_export` exist
    disabled in File: connect their `triggered` and `setEnabled(True)`; `start_page.sig_run_script_clicked`
  - `current_view()` -> TraceView: `.show_range(t0_ns, t1_ns)`, `.highlight_slices(model_index, rows)`,
    `.select_slice(model_index, row)`, `.add_tab(widget, title, replace_hta=True)`
  - `session` (core.session.Session): the current tab's trace set, each trace's analysis, the selection,
    each loaded trace, the Run dock's run; panels subscribe to its events (gui/subscriptions.py)
    instead of reading each other
  - `open_path(path)` loads in a worker (progress + Cancel in the status bar)
  - CUDA memory snapshots (`*.pickle`, core.snapshot.is_snapshot_path) take a small branch: open_path
    starts a gui.snapshot.job.SnapshotJob (same signals as LoadJob; restricted unpickler, no code runs)
    and `_on_job_loaded` adds a gui.snapshot.view.SnapshotView tab; `sig_snapshot_loaded` follows
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from core.session import Session
from gui import actions, gc_guard
from gui.progress_widget import ProgressWidget
from gui.start_page import StartPage

if TYPE_CHECKING:  # the window paints before these are imported (pyqtgraph, superqt, numpy: gui/app.py)
    from core.trace.model import TraceSet
    from gui.trace_view import TraceView
    from gui.workers import LoadJob


class MainWindow(QtWidgets.QMainWindow):
    sig_trace_loaded = QtCore.Signal(object)  # TraceSet, once its TraceView is a tab and ready
    sig_load_failed = QtCore.Signal(str, str)  # (path, one-line reason), after the dialog was shown
    sig_snapshot_loaded = QtCore.Signal(object)  # SnapshotReport, once its SnapshotView is the current tab

    def __init__(self, defer: bool = False) -> None:
        """`defer`: build only the window's shell (menus, start page, status bar: PySide6 alone) and leave the
        feature panels (issues, run, export, HTA: superqt, pyqtgraph, the rule engine) to `finish_startup()`,
        which gui/app.py calls after the first paint; `integrations` is None until then."""
        super().__init__()
        gc_guard.install()  # cyclic GC only from the UI thread's event loop (gui/gc_guard.py)
        self.setWindowTitle("ptprof")
        self.fit_to_screen()
        self.setAcceptDrops(True)
        self._theme = None
        self.jobs: list[LoadJob] = []
        self._pending_views: list = []  # TraceViews made, their tab added the next turn (_show_view)
        self.session = Session()  # the current tab, analyses, selection: what the panels subscribe to
        self.tabs = QtWidgets.QTabWidget(tabsClosable=True, movable=True, documentMode=True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._on_tabs_changed)
        self.start_page = StartPage()
        self.stack = QtWidgets.QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.tabs)
        self.setCentralWidget(self.stack)
        self.progress = ProgressWidget()
        self.progress.sig_cancel_clicked.connect(self.cancel_loads)
        self.warn_btn = QtWidgets.QToolButton(text="⚠ warnings", autoRaise=True)
        self.warn_btn.clicked.connect(self.show_warnings)
        self.warn_btn.hide()
        self.summary = QtWidgets.QLabel()
        self.statusBar().addWidget(self.summary, 1)
        self.hint = QtWidgets.QLabel("wheel: zoom · drag: pan · W/S A/D · F: fit · Ctrl+F: search")
        # muted but readable: a disabled label was #bebebe on #efefef in the light theme
        pal = self.hint.palette()
        pal.setColor(QtGui.QPalette.ColorRole.WindowText, pal.color(QtGui.QPalette.ColorRole.PlaceholderText))
        self.hint.setPalette(pal)
        self.statusBar().addPermanentWidget(self.hint)
        self.statusBar().addPermanentWidget(self.warn_btn)
        self.statusBar().addPermanentWidget(self.progress)
        self._menus()
        self.issues_dock = self.add_dock(self._placeholder("Issues appear here after analysis."), "Issues",
                                         QtCore.Qt.DockWidgetArea.RightDockWidgetArea)
        self.issues_dock.hide()
        self._wire_start_page()
        self._refresh_recent()
        self.integrations = None
        if not defer:
            self.finish_startup()

    def finish_startup(self) -> None:
        """The feature panels: issues, HTA, run, export (heavy imports; after the first paint from gui/app.py)."""
        if self.integrations is not None:
            return
        from gui.integrations import install_all
        self.integrations = install_all(self)

    # --- what the feature panels offer (gui/integrations.py; there once finish_startup has run) ------
    @property
    def live_panel(self):
        """The Run dock's live GPU plots."""
        return self.integrations.run_panel.live

    @property
    def open_remote(self):
        return self.integrations.open_remote

    @property
    def try_controller(self):
        return self.integrations.try_controller

    def compare_paths(self, path_a, path_b, in_process: bool | None = None):
        """Open a Compare tab of two runs (gui.compare.wiring.CompareActions.compare_paths)."""
        return self.integrations.compare.compare_paths(path_a, path_b, in_process)

    @property
    def theme(self):
        """The kind colours (gui/theme.py), built when a view first needs them."""
        if self._theme is None:
            from gui.theme import load_theme
            self._theme = load_theme()
        return self._theme

    @theme.setter
    def theme(self, value) -> None:
        self._theme = value

    def fit_to_screen(self) -> None:
        """Open at the screen's available size (less the window frame), not a fixed 1600x1000 that is
        too big for a laptop and leaves a 1920x1080 screen's edges unused."""
        screen = QtGui.QGuiApplication.primaryScreen()
        if screen is None:
            self.resize(1600, 1000)
            return
        avail = screen.availableGeometry()
        self.resize(max(800, avail.width() - 16), max(600, avail.height() - 40))
        self.move(avail.topLeft())

    # --- menus --------------------------------------------------------------------------------
    def _menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = bar.addMenu("&File")
        a = actions.make_action
        self.action_open = a(self, "&Open Trace…", self.ask_open_file, QtGui.QKeySequence.StandardKey.Open)
        self.action_open_folder = a(self, "Open &Folder…", self.ask_open_folder, "Ctrl+Shift+O")
        self.recent_menu = QtWidgets.QMenu("Open &Recent", self)
        self.action_sample = a(self, "Open the &Sample Trace", self.open_sample)
        self.action_run_script = a(self, "&Run Script…", None, "Ctrl+R", "Run a training script under the profiler",
                                   enabled=False)
        self.action_export = a(self, "&Export…", None, "Ctrl+E", "Export PNG / CSV / HTML report", enabled=False)
        self.action_close = a(self, "&Close Tab", lambda: self.close_tab(self.tabs.currentIndex()),
                              QtGui.QKeySequence.StandardKey.Close)
        self.action_quit = a(self, "&Quit", self.close, QtGui.QKeySequence.StandardKey.Quit)
        for item in (self.action_open, self.action_open_folder, self.recent_menu, self.action_sample, None,
                     self.action_run_script, self.action_export, None, self.action_close, self.action_quit):
            if item is None:
                self.file_menu.addSeparator()
            elif isinstance(item, QtWidgets.QMenu):
                self.file_menu.addMenu(item)
            else:
                self.file_menu.addAction(item)
        self.view_menu = bar.addMenu("&View")
        self.action_find = a(self, "&Find…", self._focus_search, QtGui.QKeySequence.StandardKey.Find)
        self.view_menu.addAction(self.action_find)
        self.view_menu.addSeparator()
        self.help_menu = bar.addMenu("&Help")
        self.help_menu.addAction(a(self, "&Keyboard and Mouse", self._show_shortcuts))
        self.action_about = a(self, "&About ptprof-gui", self._show_about)
        self.action_about.setMenuRole(QtGui.QAction.MenuRole.AboutRole)
        self.help_menu.addAction(self.action_about)

    def menu(self, title: str) -> QtWidgets.QMenu:
        """The menu named `title` ("File", "View", "Help" or a new one)."""
        for act in self.menuBar().actions():
            if act.menu() is not None and act.text().replace("&", "") == title:
                return act.menu()
        return self.menuBar().addMenu(title)

    def add_menu_action(self, menu_title: str, action: QtGui.QAction, before: QtGui.QAction | None = None) -> None:
        m = self.menu(menu_title)
        if before is not None:
            m.insertAction(before, action)
        else:
            m.addAction(action)

    def add_dock(self, widget: QtWidgets.QWidget, title: str,
                 area: QtCore.Qt.DockWidgetArea = QtCore.Qt.DockWidgetArea.RightDockWidgetArea) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(f"dock_{title}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.view_menu.addAction(dock.toggleViewAction())
        return dock

    def set_issues_widget(self, widget: QtWidgets.QWidget) -> QtWidgets.QDockWidget:
        self.issues_dock.setWidget(widget)
        self.issues_dock.show()
        return self.issues_dock

    @staticmethod
    def _placeholder(text: str) -> QtWidgets.QLabel:
        lbl = QtWidgets.QLabel(text)
        lbl.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        lbl.setWordWrap(True)
        return lbl

    def _wire_start_page(self) -> None:
        sp = self.start_page
        sp.sig_open_file_clicked.connect(self.ask_open_file)
        sp.sig_open_folder_clicked.connect(self.ask_open_folder)
        sp.sig_sample_clicked.connect(self.open_sample)
        sp.sig_recent_clicked.connect(self.open_path)
        sp.sig_run_script_clicked.connect(self.action_run_script.trigger)
        self.action_run_script.changed.connect(lambda: sp.run_btn.setEnabled(self.action_run_script.isEnabled()))

    # --- opening ------------------------------------------------------------------------------
    def ask_open_file(self) -> None:
        path = actions.ask_trace_file(self)
        if path:
            self.open_path(path)

    def ask_open_folder(self) -> None:
        path = actions.ask_trace_folder(self)
        if path:
            self.open_path(path)

    def open_sample(self) -> None:
        self.open_path(str(actions.SAMPLE))

    def open_path(self, path: str | Path, in_process: bool | None = None, oom_view: bool = True) -> LoadJob:
        """Load in the background: in a worker thread, or a child process when the parse would hold the
        GIL for long (gui.load_process.use_process). A run bundle that died of OOM opens on the OOM view
        (gui/snapshot/oom_view.py; `oom_view=False`: its traces, as the view's button asks)."""
        from core.analysis.oom_view import is_oom_bundle
        from core.snapshot import is_snapshot_path
        from gui.workers import LoadJob
        if is_snapshot_path(path):  # memory snapshot pickle: its own worker and tab (gui/snapshot)
            from gui.snapshot.job import SnapshotJob
            job = SnapshotJob(path, self)
        elif oom_view and is_oom_bundle(path):
            from gui.snapshot.oom_job import OomJob
            job = OomJob(path, self)
        else:
            job = LoadJob(path, self, in_process=in_process)
        job.sig_progress_changed.connect(self.progress.set_progress)
        job.sig_job_loaded.connect(lambda ts, idx, j=job: self._on_job_loaded(j, ts, idx))
        job.sig_job_failed.connect(lambda p, why, j=job: self._on_job_failed(j, p, why))
        job.sig_job_cancelled.connect(lambda p, j=job: self._on_job_done(j))
        self.jobs.append(job)
        self.progress.start(Path(path).name)
        job.start()
        return job

    def cancel_loads(self) -> None:
        for job in list(self.jobs):
            job.cancel()
        self.progress.finish()
        self.statusBar().showMessage("Loading cancelled", 4000)

    def _on_job_done(self, job: LoadJob) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
        if not self.jobs:
            self.progress.finish()

    def _on_job_loaded(self, job: LoadJob, trace_set: TraceSet, indexes) -> None:
        self._on_job_done(job)
        if indexes is None:  # a SnapshotJob's SnapshotReport
            return self._add_snapshot_tab(trace_set)
        from gui.trace_view import TraceView
        view = TraceView(trace_set, indexes, self.theme)
        # the recent list, the Issues analysis and the other listeners: once the view has filled its
        # second turn (TraceView.sig_ready), not in the turn that opens it
        view.sig_ready.connect(lambda ts=trace_set: self._on_view_ready(ts))
        # the tab, with its first layout and paint, a turn later: after the view's construction they were one
        # 100-115 ms freeze at 32 ranks
        self._pending_views.append(view)
        QtCore.QTimer.singleShot(0, self, lambda: self._show_view(view))

    def _show_view(self, view) -> None:
        if view not in self._pending_views:  # closed before its turn (the window closing)
            return
        self._pending_views.remove(view)
        i = self.tabs.addTab(view, Path(view.trace_set.path).name)
        self.tabs.setTabToolTip(i, view.trace_set.path)
        self.tabs.setCurrentIndex(i)
        self.stack.setCurrentWidget(self.tabs)

    def _on_view_ready(self, trace_set: TraceSet) -> None:
        if Path(trace_set.path).resolve() != actions.SAMPLE:
            actions.add_recent(trace_set.path)
            self._refresh_recent()
        self.session.trace_loaded(trace_set)  # the panels' hooks (HTA tab, CSV export, a run's cycle tabs)
        self.sig_trace_loaded.emit(trace_set)
        # a big parsed model's cache write waits for the after-open work (gui/workers._thread_gen)
        from core.trace import cache
        from gui import lane
        lane.when_idle(cache.release_behind)

    def _add_snapshot_tab(self, report) -> None:
        from core.analysis.oom_view import OomView as OomData
        if isinstance(report, OomData):
            from gui.snapshot.oom_view import OomView
            view = OomView(report, self.theme)
            view.sig_open_traces_requested.connect(lambda p: self.open_path(p, oom_view=False))
        else:
            from gui.snapshot.view import SnapshotView
            view = SnapshotView(report, self.theme)
        i = self.tabs.addTab(view, Path(report.path).name)
        self.tabs.setTabToolTip(i, report.path)
        self.tabs.setCurrentIndex(i)
        self.stack.setCurrentWidget(self.tabs)
        actions.add_recent(report.path)
        self._refresh_recent()
        self.sig_snapshot_loaded.emit(report)

    def _on_job_failed(self, job: LoadJob, path: str, reason: str) -> None:
        self._on_job_done(job)
        QtWidgets.QMessageBox.critical(self, "Cannot open trace", f"{Path(path).name}: {reason}")
        self.sig_load_failed.emit(path, reason)

    # --- tabs ---------------------------------------------------------------------------------
    def current_view(self) -> TraceView | None:
        w = self.tabs.currentWidget()
        trace_view = sys.modules.get("gui.trace_view")  # not imported yet: no trace is open
        return w if trace_view is not None and isinstance(w, trace_view.TraceView) else None

    def views(self) -> list[TraceView]:
        trace_view = sys.modules.get("gui.trace_view")
        if trace_view is None:
            return []
        return [w for i in range(self.tabs.count()) if isinstance(w := self.tabs.widget(i), trace_view.TraceView)]

    def close_tab(self, i: int) -> None:
        if i < 0:
            return
        w = self.tabs.widget(i)
        self.tabs.removeTab(i)
        if w is not None:
            w.deleteLater()
        if self.tabs.count() == 0:
            self.stack.setCurrentWidget(self.start_page)

    def _on_tabs_changed(self, _i: int) -> None:
        self._show_tab_summary()
        view = self.current_view()  # a tab says what it is by its class's `tab_kind` ("trace", "compare", …)
        kind = getattr(self.tabs.currentWidget(), "tab_kind", None) if self.tabs.count() else None
        self.session.set_tab(view.trace_set if view is not None else None, kind)

    def _show_tab_summary(self) -> None:
        view = self.current_view()
        if view is None:  # start page, or a tab that is not a trace (a memory snapshot)
            self.summary.setText("")
            self.warn_btn.hide()
            other = self.tabs.tabText(self.tabs.currentIndex()) if self.tabs.count() else ""
            self.setWindowTitle(f"ptprof — {other}" if other else "ptprof")
            return
        ts = view.trace_set
        self.setWindowTitle(f"ptprof — {Path(ts.path).name}")
        from gui.workers import describe_set
        self.summary.setText(describe_set(ts))
        n = len(ts.all_warnings)
        self.warn_btn.setText(f"⚠ {n} warning{'s' if n != 1 else ''}")
        self.warn_btn.setVisible(n > 0)

    def show_warnings(self) -> None:
        view = self.current_view()
        if view is None:
            return
        text = "\n".join(f"• {w}" for w in view.trace_set.all_warnings)
        QtWidgets.QMessageBox.warning(self, "Partial load", f"The trace loaded with warnings:\n\n{text}")

    def _refresh_recent(self) -> None:
        paths = actions.recent_files()
        self.recent_menu.clear()
        for p in paths:
            self.recent_menu.addAction(actions.make_action(self, p, lambda _=False, p=p: self.open_path(p)))
        self.recent_menu.setEnabled(bool(paths))
        self.start_page.set_recent(paths)

    def _focus_search(self) -> None:
        view = self.current_view()
        if view is not None:
            view.search.edit.setFocus()
            view.search.edit.selectAll()

    def _show_shortcuts(self) -> None:
        QtWidgets.QMessageBox.information(self, "Keyboard and mouse", actions.SHORTCUTS_HTML)

    def about_html(self) -> str:
        import PySide6

        from core.version import docs_url, version
        return (f"<h3>ptprof-gui {version()}</h3><p>A desktop profiler for PyTorch training.</p>"
                f"<p>Documentation: <a href=\"{docs_url()}\">{docs_url()}</a></p>"
                f"<p>Python {sys.version.split()[0]} · PySide6 {PySide6.__version__} · Qt {QtCore.qVersion()}</p>")

    def _show_about(self) -> None:
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, "About ptprof-gui", self.about_html(),
                                    QtWidgets.QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(QtCore.Qt.TextFormat.RichText)
        box.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextBrowserInteraction)
        box.exec()

    # --- drag and drop ------------------------------------------------------------------------
    def dragEnterEvent(self, ev: QtGui.QDragEnterEvent) -> None:
        if ev.mimeData().hasUrls() and any(u.isLocalFile() for u in ev.mimeData().urls()):
            ev.acceptProposedAction()

    def dropEvent(self, ev: QtGui.QDropEvent) -> None:
        from gui.compare.wiring import shift_drop_target
        baseline = shift_drop_target(self, ev)  # Shift+drop on an open trace: compare with it
        for u in ev.mimeData().urls():
            if not u.isLocalFile():
                continue
            if baseline is not None:
                self.compare_paths(baseline, u.toLocalFile())
            else:
                self.open_path(u.toLocalFile())
        ev.acceptProposedAction()

    def _stop_run_with_progress(self, run) -> None:
        """Stop the run and wait for its trace to be written, with the window responsive and saying so
        (the stop escalates to SIGTERM / SIGKILL by itself when the script ignores it)."""
        run.stop()
        if not run.is_running:
            return
        dlg = QtWidgets.QProgressDialog("Stopping the run and writing its trace…", None, 0, 0, self)
        dlg.setWindowTitle("Stopping")
        dlg.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
        dlg.setMinimumDuration(0)
        dlg.show()
        loop = QtCore.QEventLoop(self)
        run.controller.sig_run_finished.connect(loop.quit)
        if run.is_running:
            loop.exec()
        run.controller.sig_run_finished.disconnect(loop.quit)
        dlg.close()

    def confirm_quit_during_run(self) -> bool:
        """The one question closing the window asks (modal; tests answer it: tests/conftest.py)."""
        answer = QtWidgets.QMessageBox.question(
            self, "Run in progress", "A profiling run is in progress. Stop it (its trace is saved) and quit?")
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def closeEvent(self, ev) -> None:
        session = getattr(self, "session", None)  # the Run dock's run as the window follows it (core/session.py)
        if session is not None and session.run_in_progress:
            if not self.confirm_quit_during_run():
                ev.ignore()
                return
            run = getattr(getattr(self, "integrations", None), "run_panel", None)  # what stops it: the dock
            if run is not None and run.is_running:
                self._stop_run_with_progress(run)
        for job in list(self.jobs):
            job.cancel()
        actions.flush_recent()
        super().closeEvent(ev)

"""File > Compare with… / Compare with Folder…, two selected Recent entries on the start page, Shift+drop on
an open tab, and `MainWindow.compare_paths(a, b)`.

Both runs load in parallel workers with the status-bar progress and Cancel; the result is a CompareView
tab. A failure is one dialog with the reason."""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from gui import actions
from gui.compare.job import CompareJob
from gui.compare.view import CompareView


class CompareActions(QtCore.QObject):
    sig_compare_shown = QtCore.Signal(object)  # the CompareView, once it is the current tab

    def __init__(self, win) -> None:
        super().__init__(win)
        self.win = win
        self.jobs: list[CompareJob] = []
        self.action = actions.make_action(win, "Co&mpare with…", lambda: self.ask_compare(folder=False),
                                          "Ctrl+Shift+D", "Compare the current trace (A) with another run (B)")
        # runs are mostly folders (run bundles, TensorBoard log dirs, multi-rank dirs): a file dialog cannot pick one
        self.action_folder = actions.make_action(win, "Compare with &Folder…", lambda: self.ask_compare(folder=True),
                                                 None, "Compare the current trace (A) with a run bundle, TensorBoard "
                                                 "log dir or multi-rank dir (B)")
        win.file_menu.insertAction(win.action_run_script, self.action)
        win.file_menu.insertAction(win.action_run_script, self.action_folder)
        win.start_page.sig_recent_pair_chosen.connect(self.compare_paths)

    def _ask(self, title: str, start: str, folder: bool) -> str:
        if folder:
            return QtWidgets.QFileDialog.getExistingDirectory(self.win, title, start) or ""
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self.win, title, start, actions.TRACE_FILTER)
        return path or ""

    def ask_compare(self, folder: bool = False) -> None:
        view = self.win.current_view()
        start = str(Path(view.trace_set.path).parent) if view is not None else str(Path.home())
        if view is None:
            path_a = self._ask("Baseline run (A)", start, folder)
            if not path_a:
                return
        else:
            path_a = view.trace_set.path
        path_b = self._ask(f"Compare {Path(path_a).name} with (B)", start, folder)
        if path_b:
            self.compare_paths(path_a, path_b)

    def compare_paths(self, path_a: str | Path, path_b: str | Path, in_process: bool | None = None) -> CompareJob:
        job = CompareJob(path_a, path_b, self, in_process=in_process)
        job.sig_progress_changed.connect(self.win.progress.set_progress)
        job.sig_compare_ready.connect(lambda d, a, b, j=job: self._on_ready(j, d, a, b))
        job.sig_compare_failed.connect(lambda p, why, j=job: self._on_failed(j, p, why))
        job.sig_compare_cancelled.connect(lambda j=job: self._done(j))
        self.jobs.append(job)
        self.win.jobs.append(job)  # the status bar's Cancel and closing the window stop it too
        self.win.progress.start(f"{Path(path_a).name} vs {Path(path_b).name}")
        job.start()
        return job

    def _done(self, job: CompareJob) -> None:
        for jobs in (self.jobs, self.win.jobs):
            if job in jobs:
                jobs.remove(job)
        if not self.win.jobs:
            self.win.progress.finish()

    def _on_ready(self, job: CompareJob, diff, side_a, side_b) -> None:
        self._done(job)
        view = CompareView(diff, side_a, side_b, self.win.theme)
        title = f"{Path(side_a[0].path).name} ↔ {Path(side_b[0].path).name}"
        i = self.win.tabs.addTab(view, title)
        self.win.tabs.setTabToolTip(i, f"A: {side_a[0].path}\nB: {side_b[0].path}")
        self.win.tabs.setCurrentIndex(i)
        self.win.stack.setCurrentWidget(self.win.tabs)
        self.sig_compare_shown.emit(view)

    def _on_failed(self, job: CompareJob, path: str, reason: str) -> None:
        self._done(job)
        QtWidgets.QMessageBox.critical(self.win, "Cannot compare", f"{Path(path).name}: {reason}")


def shift_drop_target(win, ev: QtGui.QDropEvent) -> str | None:
    """The current trace's path when a drop with Shift held should compare instead of open."""
    if not (ev.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier):
        return None
    view = win.current_view()
    return view.trace_set.path if view is not None else None

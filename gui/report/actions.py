"""Export actions for the main window: timeline / memory / GPU PNG, tables as CSV, report folder.

    exporter = ReportActions(main_window, context=lambda: ExportContext(trace_set, findings, view_range_ns))
    file_menu.addMenu(exporter.menu())          # or add exporter.actions() where they belong

All work runs in a superqt generator worker with a cancellable progress dialog: numpy preparation and
file writing in the worker; painting (tens of ms per figure) is handed to the GUI thread by QtRenderer.
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import shiboken6
from PySide6 import QtCore, QtGui, QtWidgets
from superqt.utils import create_worker

from core.export import breakdown_data, findings as findings_src, outdir, plots_data, tables, timeline_data
from core.export.csv import write_table
from core.export.figures import FigureSpec
from core.export.findings import FindingsResult
from core.export.writer import ExportProgress, ReportOptions, iter_write_report
from core.trace.model import TraceSet
from gui.export_png import save_png, widget_png
from gui.report.dialogs import PngOptionsDialog
from gui.report.places import default_export_dir, ensure_dir, show_done
from gui.report.renderer import QtRenderer


@dataclass(frozen=True, slots=True)
class ExportContext:
    """What the window shows now. Only trace_set is required."""

    trace_set: TraceSet
    findings: object = None  # core.rules Analysis, list of Findings or FindingsResult; None: the report runs the rules
    view_range_ns: tuple[int, int] | None = None  # the timeline's visible x range


_TABLE_FILES = tuple(f"{t}.csv" for t in outdir.TABLE_NAMES)


def _collect(trace_set) -> FindingsResult:
    """Run the rules now (rank by rank, then across ranks, for several); imported here: loads core.rules."""
    from core.ranks.inset import collect_findings
    return collect_findings(trace_set)


def _as_result(findings) -> FindingsResult | None:
    """None (the report runs the rules itself) or the window's rules result, whatever its form."""
    return None if findings is None else findings_src.wrap(findings)


class ReportActions(QtCore.QObject):
    sig_export_finished = QtCore.Signal(object)  # Path of the file or folder written
    sig_export_failed = QtCore.Signal(str)  # one-line reason

    def __init__(self, parent: QtWidgets.QWidget, context: Callable[[], ExportContext | None],
                 live: Callable[[], QtWidgets.QWidget | None] | None = None) -> None:
        super().__init__(parent)
        self._window = parent
        self._context = context
        self._live = live or (lambda: None)  # the live GPU panel while a run is in progress
        self._renderer = QtRenderer()
        self._workers: set = set()  # running exports (references keep them alive)
        self._menus: list[QtWidgets.QMenu] = []  # menus of these actions (`menu()`): enabled while one of theirs is
        self._report_too: list[QtGui.QAction] = []  # the window's own "Export Report…" (`follow_report`)
        self.act_timeline_png = self._action("Export timeline PNG…", self.export_timeline_png)
        self.act_memory_png = self._action("Export memory plot PNG…", self.export_memory_png)
        self.act_gpu_png = self._action("Export GPU plot PNG…", self.export_gpu_png)
        self.act_tables_csv = self._action("Export tables as CSV…", self.export_tables_csv)
        self.act_report = self._action("Export report…", self.export_report, QtGui.QKeySequence("Ctrl+Shift+E"))

    def _action(self, text: str, slot, shortcut=None) -> QtGui.QAction:
        act = QtGui.QAction(text, self)
        if shortcut is not None:
            act.setShortcut(shortcut)
        act.triggered.connect(slot)
        return act

    def actions(self) -> list[QtGui.QAction]:
        return [self.act_timeline_png, self.act_memory_png, self.act_gpu_png, self.act_tables_csv, self.act_report]

    def menu(self, title: str = "Export") -> QtWidgets.QMenu:
        m = QtWidgets.QMenu(title, self._window)
        for a in self.actions():
            m.addAction(a)
        self._menus.append(m)
        return m

    def follow_report(self, action: QtGui.QAction) -> None:
        """`action` (the window's "Export Report…") is enabled when `act_report` is."""
        self._report_too.append(action)

    def update_enabled(self) -> None:
        """Call when the current tab changes, a trace opens / closes or a run starts / ends."""
        ctx = self._context()
        for a in self.actions():
            a.setEnabled(ctx is not None)
        if self._live() is not None:  # a run in progress: its GPU plot can be saved, tabs or not
            self.act_gpu_png.setEnabled(True)
        for m in self._menus:  # a menu opens while any entry in it can (a run's GPU plot with no trace tab)
            m.setEnabled(any(a.isEnabled() for a in m.actions()))
        for a in self._report_too:
            a.setEnabled(self.act_report.isEnabled())

    # --- actions ---------------------------------------------------------------------------
    def _ctx_or_warn(self) -> ExportContext | None:
        ctx = self._context()
        if ctx is None:
            QtWidgets.QMessageBox.information(self._window, "Export", "Open a trace first.")
        return ctx

    def export_timeline_png(self) -> None:
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        steps = sorted({int(n) for n in ctx.trace_set.primary.steps.number.tolist()})
        dlg = PngOptionsDialog(self._window, "Export timeline PNG", steps, has_view=ctx.view_range_ns is not None)
        if dlg.exec() != QtWidgets.QDialog.DialogCode.Accepted:
            return
        path = self._ask_file("timeline.png")
        if path:
            spec = dlg.spec(ctx.view_range_ns)
            self.run_png(lambda: timeline_data.build(ctx.trace_set, spec), path)

    def export_memory_png(self) -> None:
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        if plots_data.memory_peak(ctx.trace_set) == []:
            QtWidgets.QMessageBox.information(self._window, "Export", "This trace has no memory events "
                                              "(record with profile_memory=True).")
            return
        self._figure_png("memory", lambda spec: plots_data.memory(ctx.trace_set, spec))

    def export_gpu_png(self) -> None:
        live = self._live()
        ctx = self._context()
        if live is not None and (ctx is None or ctx.trace_set.nvml is None or not len(ctx.trace_set.nvml)):
            path = self._ask_file("gpu.png")
            if path:  # a run in progress: its samples live in the panel, export what it shows
                self._done(save_png(widget_png(live, scale=2.0), path))
            return
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        if plots_data.gpu(ctx.trace_set) is None:
            QtWidgets.QMessageBox.information(self._window, "Export", "No NVML samples for this trace "
                                              "(they come with run bundles and *.nvml.csv files).")
            return
        self._figure_png("gpu", lambda spec: plots_data.gpu(ctx.trace_set, spec))

    def export_breakdown_png(self) -> None:
        ctx = self._ctx_or_warn()
        if ctx is not None:
            self._figure_png("breakdown", lambda spec: breakdown_data.build(ctx.trace_set, spec))

    def _figure_png(self, name: str, build: Callable[[FigureSpec], object]) -> None:
        dlg = PngOptionsDialog(self._window, f"Export {name} PNG")
        if dlg.exec() != QtWidgets.QDialog.DialogCode.Accepted:
            return
        path = self._ask_file(f"{name}.png")
        if path:
            spec = dlg.spec()
            self.run_png(lambda: build(spec), path)

    def export_tables_csv(self) -> None:
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(self._window, "Export tables as CSV into folder",
                                                            str(ensure_dir(default_export_dir(ctx.trace_set.path))))
        folder = self._folder_answered(folder, _TABLE_FILES) if folder else None
        if folder:
            self.run_tables(ctx, folder)

    def export_table_csv(self, name: str, shown=None) -> None:
        """One table (kernels | ops | steps | findings | nvml) - for the tables' context menus. `shown`:
        (CSV column, {rank: keys}) of the rows a filtered table shows; only those are written."""
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        path = self._ask_file(f"{name}.csv", "CSV (*.csv)")
        if path:
            self.run_tables(ctx, Path(path).parent, only=name, path=Path(path), shown=shown)

    def export_report(self) -> None:
        ctx = self._ctx_or_warn()
        if ctx is None:
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(self._window, "Export report into folder",
                                                            str(ensure_dir(default_export_dir(ctx.trace_set.path))))
        folder = self._folder_answered(folder) if folder else None
        if folder:
            self.run_report(ctx, folder)

    def _folder_answered(self, folder: str | Path, names: tuple[str, ...] = outdir.OUR_NAMES) -> Path | None:
        """The chosen folder, or a new subfolder of it when it holds files ptprof did not write (a run
        bundle's nvml.csv, the user's own metrics.csv) and the user agrees; None: nothing is written."""
        folder = Path(folder)
        why = outdir.problem(folder, names)
        if why is None:
            return folder
        sub = outdir.subfolder(folder)
        if self.ask_subfolder(why, sub):
            return sub
        self.sig_export_failed.emit(why)
        return None

    def ask_subfolder(self, why: str, sub: Path) -> bool:
        """The question itself (tests replace this method: no modal box nothing answers)."""
        answer = QtWidgets.QMessageBox.question(
            self._window, "Folder holds other files",
            f"{why.split(': pick')[0]}.\n\nptprof never replaces files it did not write. "
            f"Export into a new subfolder instead?\n{sub}",
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.Cancel,
            QtWidgets.QMessageBox.StandardButton.Yes)
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    # --- workers (public so tests and the lead can call them without dialogs) -----------------
    def run_png(self, build: Callable[[], object], path: Path | str) -> None:
        def job() -> Generator[ExportProgress, None, Path]:
            yield ExportProgress("figures", 0.1, "preparing")
            fig = build()
            yield ExportProgress("figures", 0.6, "painting")
            return save_png(self._renderer.render(fig), path)
        self._start(job, "Exporting PNG")

    def run_tables(self, ctx: ExportContext, folder: Path, only: str | None = None, path: Path | None = None,
                   shown: tuple[str, dict] | None = None) -> None:
        def job() -> Generator[ExportProgress, None, Path]:
            builders = {"kernels": lambda: tables.kernels(ctx.trace_set), "ops": lambda: tables.ops(ctx.trace_set),
                        "steps": lambda: tables.steps_table(ctx.trace_set),
                        # no cached analysis yet (the Issues panel still working): run the rules here,
                        # as the report does, rather than writing a header-only file
                        "findings": lambda: tables.findings_table(
                            (_as_result(ctx.findings) or _collect(ctx.trace_set)).findings, ctx.trace_set),
                        "nvml": lambda: tables.nvml(ctx.trace_set)}
            names = [only] if only else list(builders)
            if path is None:  # a folder export (one file from a save dialog was confirmed there)
                folder.mkdir(parents=True, exist_ok=True)
                outdir.claim(folder, _TABLE_FILES)  # ExportRefused: "Export failed" with the one line
            for i, name in enumerate(names):
                yield ExportProgress("tables", i / len(names), f"{name}.csv")
                table = builders[name]()
                if table is not None and shown is not None:
                    table = tables.select_rows(table, *shown)
                if table is not None:
                    write_table(table, path or folder / f"{name}.csv")
            return path or folder
        self._start(job, "Exporting CSV")

    def run_report(self, ctx: ExportContext, folder: Path, spec: FigureSpec | None = None) -> None:
        def job():
            findings = _as_result(ctx.findings)
            if findings is None:  # no cached analysis yet: run the rules here (rank by rank for several ranks)
                yield ExportProgress("findings", 0.02, "running rules")
                findings = _collect(ctx.trace_set)
            opts = ReportOptions(spec=spec or FigureSpec(), findings=findings)
            result = yield from iter_write_report(ctx.trace_set, folder, self._renderer, opts)
            return result.out_dir / "report.html"
        self._start(job, "Exporting report")

    def _start(self, job, title: str) -> None:
        progress = QtWidgets.QProgressDialog(title, "Cancel", 0, 100, self._window)
        progress.setWindowTitle(title)
        progress.setMinimumDuration(300)
        progress.setAutoClose(True)
        # errors go to _failed (one line in a box), not re-raised into the event loop as a traceback
        worker = create_worker(job, _start_thread=False, _ignore_errors=True)
        worker.yielded.connect(lambda p: shiboken6.isValid(progress) and (
            progress.setValue(int(p.fraction * 100)), progress.setLabelText(p.detail or p.stage)))
        worker.returned.connect(self._done)
        worker.errored.connect(lambda exc: self._failed(
            str(exc) if isinstance(exc, outdir.ExportRefused) else f"{type(exc).__name__}: {exc}"))
        worker.aborted.connect(lambda: self._failed("cancelled"))
        worker.finished.connect(progress.close)
        worker.finished.connect(lambda: self._workers.discard(worker))
        progress.canceled.connect(worker.quit)
        self._workers.add(worker)
        worker.start()

    def _done(self, path) -> None:
        show_done(self._window, Path(path))  # "written to … [Open folder] [Open report]", not modal
        self.sig_export_finished.emit(Path(path))

    def _failed(self, reason: str) -> None:
        self.sig_export_failed.emit(reason)
        if reason != "cancelled" and self._window.isVisible():
            QtWidgets.QMessageBox.warning(self._window, "Export failed", reason)

    def _ask_file(self, default_name: str, filt: str = "PNG image (*.png)") -> Path | None:
        ctx = self._context()
        start = default_export_dir(ctx.trace_set.path if ctx is not None else None)
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self._window, "Save as", str(ensure_dir(start) / default_name),
                                                        filt)
        return Path(path) if path else None

    def is_busy(self) -> bool:
        return bool(self._workers)

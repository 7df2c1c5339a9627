"""HTA tab: Holistic Trace Analysis tables and simple plots, run in a worker when the user presses Run HTA.

Opening the tab does not start HTA (its pandas parse takes seconds to minutes on a big trace): the Run
button does, with a progress bar and Cancel. HTA (traceinsight) is the optional extra `.[hta]`, imported
lazily inside core.analysis.hta.run_hta; when it is not installed the tab says so and its Install button
pip-installs it into the app's interpreter (gui/hta/install.py, progress and Cancel). When it cannot run
(CPU-only trace, no ProfilerStep, trace too large, HTA error) the tab says why instead of failing.
"""
from __future__ import annotations

import logging

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6 import QtCore, QtGui, QtWidgets
from superqt.utils import create_worker

from core.analysis.hta import ANALYSES, NOT_INSTALLED, TITLES, HtaReport, check_available, launch_summary, run_hta
from core.trace.model import Kind
from gui.hta.frame_model import DataFrameModel
from gui.hta.install import HtaInstaller
from gui.theme import Theme, category_color, load_theme, style_plot

log = logging.getLogger(__name__)


class HtaTab(QtWidgets.QWidget):
    sig_report_ready = QtCore.Signal(object)
    """The HtaReport, once HTA has returned (or said why it cannot run)."""
    _sig_progress = QtCore.Signal(int, float, str)  # token, fraction, what: from the worker thread (queued)

    def __init__(self, parent=None, auto_run: bool = False, theme: Theme | None = None,
                 install_command: list[str] | None = None) -> None:
        super().__init__(parent)
        self.theme = theme or load_theme()
        self._trace_set = None
        self._report: HtaReport | None = None
        self._worker = None
        self._token = 0
        self._pending = False
        self._auto_run = auto_run

        self.status = QtWidgets.QLabel("No trace loaded.")
        self.status.setWordWrap(True)
        self.run_button = QtWidgets.QPushButton("Run HTA")
        self.run_button.setEnabled(False)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setVisible(False)
        self.cancel_button.setToolTip("Stop waiting for HTA (its parse cannot be interrupted; the result is dropped)")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(220)
        self.progress.setVisible(False)
        self.install_button = QtWidgets.QPushButton("Install HTA")
        self.install_button.setToolTip("pip install traceinsight psutil into the interpreter running this app")
        self.install_button.setVisible(False)
        self.installer = HtaInstaller(self, install_command)
        self.list = QtWidgets.QListWidget()
        self.list.setMinimumHeight(48)
        for name in ANALYSES:
            item = QtWidgets.QListWidgetItem(TITLES[name].split(" (")[0])
            item.setData(QtCore.Qt.ItemDataRole.UserRole, name)
            self.list.addItem(item)
        self.list.setMaximumWidth(300)
        self.list.setMinimumWidth(min(300, self.list.sizeHintForColumn(0) + 12))
        self.list.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.reason = QtWidgets.QLabel()
        self.reason.setWordWrap(True)
        self.frame_model = DataFrameModel(parent=self)
        self.table = QtWidgets.QTableView()
        self.table.setMinimumHeight(48)
        self.table.setModel(self.frame_model)
        self.table.setSortingEnabled(False)
        self.table.verticalHeader().setVisible(False)  # the frame's 0..n index says nothing
        self.table.setWordWrap(False)
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(90)  # the bottom tabs share one min height: keep it small for the timeline
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        style_plot(self.plot, self.theme)
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.plot)
        right.addWidget(self.table)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        body = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        body.addWidget(self.list)
        body.addWidget(right)
        body.setStretchFactor(1, 1)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        top.addWidget(self.install_button)
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.reason)
        lay.addWidget(body, 1)

        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self.install_button.clicked.connect(self.install)
        self.installer.sig_line.connect(self._on_install_line)
        self.installer.sig_done.connect(self._on_install_done)
        self._sig_progress.connect(self._on_progress)
        self.list.currentRowChanged.connect(self._on_list_row_changed)

    # --- public API -----------------------------------------------------------------------
    def set_trace_set(self, trace_set) -> None:
        """Remember the trace; HTA runs on Run (or when shown, with auto_run)."""
        self._token += 1
        self._worker = None
        self._trace_set = trace_set
        self._report = None
        self._show_result(None)
        if trace_set is None:
            self.status.setText("No trace loaded.")
            self.run_button.setEnabled(False)
            return
        why = check_available(trace_set)
        self.run_button.setEnabled(why is None)
        self.install_button.setVisible(why == NOT_INSTALLED)
        if why:
            self._apply(HtaReport({}, why))
            return
        self.status.setText("HTA has not run on this trace: press Run HTA (it parses the file again: seconds to "
                            "minutes on a big trace).")
        self._pending = True
        if self._auto_run and self.isVisible():
            self.run()

    def run(self) -> None:
        if self._trace_set is None or self._worker is not None:
            return
        self._pending = False
        self._token += 1
        token = self._token
        self.status.setText("Running HTA…")
        self.run_button.setEnabled(False)
        self.cancel_button.setVisible(True)
        self.progress.setValue(0)
        self.progress.setVisible(True)

        def progress(fraction: float, what: str, t=token) -> None:  # worker thread: a queued signal
            self._sig_progress.emit(t, fraction, what)

        self._worker = create_worker(run_hta, self._trace_set, progress=progress, _start_thread=False,
                                     _connect={"returned": lambda r, t=token: self._on_worker_returned(t, r),
                                               "errored": lambda e, t=token: self._on_worker_errored(t, e)})
        self._worker.start()

    def cancel(self) -> None:
        """Stop the install, or drop the running HTA job's result (HTA itself cannot be interrupted; its
        thread finishes alone)."""
        if self.installer.running():
            self.installer.cancel()
            return
        if self._worker is None:
            return
        self._token += 1
        self._worker = None
        self.cancel_button.setVisible(False)
        self.progress.setVisible(False)
        self.run_button.setEnabled(True)
        self.status.setText("HTA cancelled.")

    def install(self) -> None:
        """pip-install HTA into the app's interpreter (a QProcess: the UI stays live; Cancel kills it)."""
        if self.installer.running():
            return
        self.install_button.setEnabled(False)
        self.cancel_button.setVisible(True)
        self.progress.setRange(0, 0)  # pip does not say how many packages are left: busy
        self.progress.setVisible(True)
        self.status.setText("Installing HTA (traceinsight) with pip…")
        self.installer.start()

    def report(self) -> HtaReport | None:
        return self._report

    # --- slots ------------------------------------------------------------------------------
    def _on_progress(self, token: int, fraction: float, what: str) -> None:
        if token != self._token or not shiboken6.isValid(self.progress):
            return
        self.progress.setValue(int(round(100 * max(0.0, min(1.0, fraction)))))
        self.status.setText(f"Running HTA… {what}")

    def _on_install_line(self, line: str, collected: int) -> None:
        if shiboken6.isValid(self.status):
            self.status.setText(f"Installing HTA: {collected} packages collected · {line}")

    def _on_install_done(self, ok: bool, message: str) -> None:
        if not shiboken6.isValid(self.status):
            return
        self.install_button.setEnabled(True)
        self.cancel_button.setVisible(False)
        self.progress.setRange(0, 100)
        self.progress.setVisible(False)
        if ok:
            self.set_trace_set(self._trace_set)  # re-checks: HTA is found now, Run is enabled
        if not ok or self._trace_set is None:
            self.status.setText(message)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._pending and self._auto_run:
            self.run()

    def _on_worker_returned(self, token: int, report: HtaReport) -> None:
        if token != self._token or not shiboken6.isValid(self.status):
            return
        self._worker = None
        self.run_button.setEnabled(True)
        self.cancel_button.setVisible(False)
        self.progress.setVisible(False)
        self._apply(report)

    def _on_worker_errored(self, token: int, exc: BaseException) -> None:
        if token != self._token or not shiboken6.isValid(self.status):
            return
        self._worker = None
        self.run_button.setEnabled(True)
        self.cancel_button.setVisible(False)
        self.progress.setVisible(False)
        self._apply(HtaReport({}, f"HTA failed: {type(exc).__name__}: {exc}"))

    def _apply(self, report: HtaReport) -> None:
        self._report = report
        if report.unavailable == NOT_INSTALLED:
            self.status.setText("HTA is not installed: press Install HTA (pip, into this app's Python).")
            self.reason.setText(report.unavailable)
        elif report.unavailable:
            self.status.setText("HTA unavailable.")
            self.reason.setText(f"HTA cannot run on this trace: {report.unavailable}")
        else:
            ok = sum(1 for r in report.results.values() if r.ok)
            self.status.setText(f"HTA: {ok} of {len(report.results)} analyses (parsed in {report.load_s:.1f} s).")
            self.reason.setText("")
        self.list.setCurrentRow(-1)
        self.list.setCurrentRow(0)
        self.sig_report_ready.emit(report)

    def _on_list_row_changed(self, row: int) -> None:
        if row < 0 or self._report is None:
            self._show_result(None)
            return
        name = self.list.item(row).data(QtCore.Qt.ItemDataRole.UserRole)
        self._show_result(self._report.results.get(name), name)

    def _show_result(self, result, name: str = "") -> None:
        self.plot.clear()
        self.plot.getAxis("bottom").setTicks(None)  # bar plots set category ticks; scatter needs numbers
        self.plot.setLabel("bottom", "", color=self.theme.text.name())
        self.plot.setLabel("left", "", color=self.theme.text.name())
        self.plot.enableAutoRange()
        if result is None or not result.ok:
            self.frame_model.set_frame(None)
            if result is not None and self._report is not None and not self._report.unavailable:
                self.reason.setText(f"{result.title}: {result.unavailable}")
            return
        if self._report is not None and not self._report.unavailable:
            extra = ""
            if name == "kernel_launch_stats":
                s = launch_summary(result.table)
                extra = (f" · {s['gpu_shorter_than_launch_pct']:.0f} % of kernels are shorter than their launch, "
                         f"median launch delay {s['median_launch_delay_us']:.0f} µs") if s else ""
            self.reason.setText(result.title + extra)
        self.frame_model.set_frame(result.table)
        self.table.resizeColumnsToContents()
        self.table.resizeRowsToContents()
        try:
            _PLOTS.get(name, lambda *_: None)(self.plot, result.table, self.theme)
        except (KeyError, ValueError, TypeError) as exc:  # a column HTA renamed: table only
            log.info("HTA plot %s skipped: %r", name, exc)


def _bars(plot, labels, values, brush) -> None:
    """brush: one colour, or one per bar."""
    x = np.arange(len(values), dtype=float)
    brushes = brush if isinstance(brush, list) else None
    plot.addItem(pg.BarGraphItem(x=x, height=np.asarray(values, float), width=0.7, pen=None,
                                 **({"brushes": brushes} if brushes else {"brush": brush})))
    plot.getAxis("bottom").setTicks([[(float(i), str(label)[:24]) for i, label in enumerate(labels)]])


_TEMPORAL_COLORS = {"idle": "host_wait_ns", "compute": "compute_ns", "non_compute": "memcpy_ns"}


def _plot_temporal(plot, df, theme) -> None:
    cols = [c for c in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg") if c in df.columns]
    labels = [f"rank {r} {c.replace('_time_pctg', '').replace('_', '-')}" for r in df["rank"] for c in cols]
    values = [float(df.loc[i, c]) for i in df.index for c in cols]
    brushes = [category_color(theme, _TEMPORAL_COLORS[c.replace("_time_pctg", "")]) for _ in df.index for c in cols]
    _bars(plot, labels, values, brushes)
    plot.setLabel("left", "% of time", color=theme.text.name())


_IDLE_COLORS = {"host_wait": "host_wait_ns", "kernel_wait": "kernel_wait_ns", "other": "other_idle_ns"}


def _plot_idle(plot, df, theme) -> None:
    labels = [f"stream {s}: {c.replace('_', ' ')}" for s, c in zip(df["stream"], df["idle_category"])]
    brushes = [category_color(theme, _IDLE_COLORS.get(str(c), "host_wait_ns")) for c in df["idle_category"]]
    _bars(plot, labels, 100.0 * df["idle_time_ratio"].to_numpy(dtype=float), brushes)
    plot.setLabel("left", "% of idle time", color=theme.text.name())


def _plot_kernels(plot, df, theme) -> None:
    brushes = [category_color(theme, "comm_ns" if "COMM" in str(k).upper() else
                              "memcpy_ns" if "MEM" in str(k).upper() else "compute_ns") for k in df["kernel_type"]]
    _bars(plot, df["kernel_type"], df["percentage"].to_numpy(dtype=float), brushes)
    plot.setLabel("left", "% of kernel time", color=theme.text.name())


def _plot_launch(plot, df, theme) -> None:
    cpu = df["cpu_duration"].to_numpy(dtype=float)
    gpu = df["gpu_duration"].to_numpy(dtype=float)
    dot = QtGui.QColor(theme.kind_color(Kind.KERNEL))
    dot.setAlpha(140)
    plot.addItem(pg.ScatterPlotItem(x=cpu, y=gpu, size=4, pen=None, brush=pg.mkBrush(dot)))
    hi = float(max(cpu.max(initial=1), gpu.max(initial=1)))
    plot.plot([0, hi], [0, hi], pen=pg.mkPen(theme.selection, style=QtCore.Qt.PenStyle.DashLine))
    plot.setLabel("bottom", "CPU launch (µs)", color=theme.text.name())
    plot.setLabel("left", "GPU kernel (µs)", color=theme.text.name())


def _plot_overlap(plot, df, theme) -> None:
    _bars(plot, [f"rank {r}" for r in df["rank"]], np.nan_to_num(df.iloc[:, -1].to_numpy(dtype=float)),
          category_color(theme, "comm_ns"))
    plot.setLabel("left", "% overlap", color=theme.text.name())


_PLOTS = {"temporal_breakdown": _plot_temporal, "idle_time_breakdown": _plot_idle, "kernel_breakdown": _plot_kernels,
          "kernel_launch_stats": _plot_launch, "comm_comp_overlap": _plot_overlap}

"""`ptprof-gui [PATH...]` / `python main.py [PATH...]`: start the desktop app.

With no PATH it opens the bundled sample trace. `--help` prints usage without starting Qt. When Qt
cannot start (no display, system libraries its platform plugin needs are missing: gui/qt_preflight.py)
it prints one line saying what to do and exits 2 instead of letting Qt abort.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

USAGE = "ptprof-gui [PATH ...]"
DESCRIPTION = ("Desktop profiler for PyTorch training. PATH is a trace (*.pt.trace.json[.gz]), a TensorBoard "
               "log dir, a multi-rank dir, a run bundle or a CUDA memory snapshot (*.pickle); each opens in its "
               "own tab. Without PATH the bundled sample trace opens.")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ptprof-gui", usage=USAGE, description=DESCRIPTION)
    p.add_argument("paths", nargs="*", metavar="PATH", help="trace file or folder to open")
    p.add_argument("--start-page", action="store_true", help="show the start page instead of the sample trace")
    p.add_argument("--theme", choices=("auto", "light", "dark"), default="auto",
                   help="colour scheme (default: follow the desktop)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"ptprof-gui: no such file or folder: {missing[0]}", file=sys.stderr)
        return 2
    from gui import qt_preflight
    cannot_start = qt_preflight.problem()
    if cannot_start:  # Qt would abort the process with a long plugin message instead
        print(cannot_start, file=sys.stderr)
        return 2
    from PySide6 import QtWidgets

    from gui.main_window import MainWindow
    from gui.theme import apply_scheme

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("ptprof")
    app.setOrganizationName("ptprof")
    apply_scheme(app, args.theme)
    # the window's shell paints first (PySide6 only); numpy, pyqtgraph, superqt and the rule engine are imported
    # after its first paint, then the panels are built and the traces open (bench/bench_startup.py: issue 31)
    win = MainWindow(defer=True)
    win.show()

    def finish() -> None:
        from core.blas import one_blas_thread
        one_blas_thread()  # before pyqtgraph imports numpy: OpenBLAS's spinning threads took CPU from the loader
        import pyqtgraph as pg  # after PySide6 (imported above): pyqtgraph binds to the Qt already imported
        pg.setConfigOptions(antialias=False, useOpenGL=False)
        win.finish_startup()
        if args.paths:
            for p in args.paths:
                win.open_path(p)
        elif not args.start_page:
            win.open_sample()

    after_first_paint(win, finish)
    rc = app.exec()
    from PySide6 import QtCore

    from gui import lane
    lane.wait(3000)  # let the after-open jobs (tables, health, issues) finish before teardown
    QtCore.QThreadPool.globalInstance().waitForDone(3000)
    return rc


def after_first_paint(win, fn, fallback_ms: int = 1000) -> None:
    """Call `fn` once, in the event-loop turn after `win` first painted (or after `fallback_ms` when no paint
    comes: a minimised window)."""
    from PySide6 import QtCore

    done = []

    def run() -> None:
        if not done:
            done.append(True)
            win.removeEventFilter(spy)
            fn()

    class FirstPaint(QtCore.QObject):
        def eventFilter(self, obj, ev):  # noqa: N802 (Qt API)
            if ev.type() == QtCore.QEvent.Type.Paint:
                QtCore.QTimer.singleShot(0, run)
            return False

    spy = FirstPaint(win)
    win.installEventFilter(spy)
    QtCore.QTimer.singleShot(fallback_ms, run)


if __name__ == "__main__":
    sys.exit(main())

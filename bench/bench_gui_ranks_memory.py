"""The window's memory for Compare and Export report of a multi-rank run: peak RSS of the window's process
(psutil, every 20 ms) over what it held before the action, and the wall time, in the app's MainWindow.

    QT_QPA_PLATFORM=offscreen nice -n 10 python -P bench/bench_gui_ranks_memory.py RUN [--export] [--cache-dir D]

compare: File > Compare of RUN with itself (two sides); export: RUN opened in a tab (its set held, as the
window holds it), then Export report into a temporary folder: the window's growth over the opened tab.
Run it with PYTHONPATH pointing at the checkout to measure (before / after).
"""
import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--cache-dir", type=Path, default=None)
    a = ap.parse_args()
    if a.cache_dir:
        os.environ["PTPROF_CACHE_DIR"] = str(a.cache_dir)
    from PySide6 import QtCore, QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    from gui.main_window import MainWindow
    win = MainWindow()
    win.resize(1600, 1000)
    win.show()
    app.processEvents()
    proc = psutil.Process()
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.02)

    def wait(cond, limit=1800):
        t = time.perf_counter()
        while not cond() and time.perf_counter() - t < limit:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            time.sleep(0.005)

    out = {"run": str(a.run), "action": "export" if a.export else "compare"}
    if a.export:
        loaded = []
        win.sig_trace_loaded.connect(lambda ts: loaded.append(ts))
        win.open_path(str(a.run))
        wait(lambda: bool(loaded))
        from gui import lane
        wait(lambda: lane.idle() and win.integrations.issues._worker is None)
        ctx = win.integrations.exporter._context()  # what Export report exports: the current tab
        dest = Path(tempfile.mkdtemp(prefix="h33f-export-"))
        base = proc.memory_info().rss
        done = []
        ex = win.integrations.exporter
        ex.sig_export_finished.connect(lambda p: done.append(p))
        ex.sig_export_failed.connect(lambda r: done.append(r))
        th = threading.Thread(target=sample, daemon=True)
        peak[0] = base
        th.start()
        t0 = time.perf_counter()
        ex.run_report(ctx, dest)
        wait(lambda: bool(done))
        out["result"] = str(done[0])[-60:]
        shutil.rmtree(dest, ignore_errors=True)
    else:
        base = proc.memory_info().rss
        th = threading.Thread(target=sample, daemon=True)
        peak[0] = base
        th.start()
        shown = []
        win.integrations.compare.sig_compare_shown.connect(lambda v: shown.append(v))
        t0 = time.perf_counter()
        win.compare_paths(str(a.run), str(a.run))
        wait(lambda: bool(shown))
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    out.update({"wall_s": round(wall, 1), "rss_before_mb": round(base / 2**20), "peak_rss_mb": round(peak[0] / 2**20),
                "growth_mb": round((peak[0] - base) / 2**20), "load": [round(x, 1) for x in os.getloadavg()]})
    print(json.dumps(out), flush=True)
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())

"""Regenerate docs/screenshot.png: `python docs/make_screenshot.py [TRACE] [--theme light|dark]`.

Opens the trace in the real main window (offscreen unless $DISPLAY is set) at a 1920x1080 screen's
size, selects the top finding (its evidence in the Issues dock, its events outlined), then a CPU op
that launched kernels in the first shown step (flow arrows + details) and grabs the window.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser()
    shared = Path(os.environ.get("PTPROF_SHARED_TRACES") or REPO.parent / "shared" / "traces")
    ap.add_argument("trace", nargs="?", default=str(shared / "gpu_issues.pt.trace.json.gz"))
    ap.add_argument("--theme", default="light")
    ap.add_argument("--op", default="aten::conv2d", help="select the first call of this op in the shown step")
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshot.png"))
    a = ap.parse_args()
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if not Path(a.trace).exists():
        print(f"make_screenshot: no such trace: {a.trace}", file=sys.stderr)
        return 2
    import tempfile
    os.environ["PTPROF_SETTINGS_DIR"] = tempfile.mkdtemp(prefix="ptprof-shot-")  # leave the recent list alone
    import numpy as np
    from PySide6 import QtWidgets

    from core.trace import query
    from gui.main_window import MainWindow
    from gui.theme import apply_scheme

    app = QtWidgets.QApplication([])
    apply_scheme(app, a.theme)
    win = MainWindow()
    win.resize(1904, 1040)
    win.show()
    loaded = []
    win.sig_trace_loaded.connect(loaded.append)
    win.open_path(a.trace)
    t = time.time()
    while not loaded and time.time() - t < 300:
        app.processEvents()
        time.sleep(0.01)
    view = win.current_view()
    m = view.models[0]
    t0, t1 = view.timeline.view_range()
    issues = win.integrations.issues
    t = time.time()
    while issues.analysis() is None and time.time() - t < 120:
        app.processEvents()
        time.sleep(0.01)
    if issues.model.rowCount():
        issues.select_row(0)  # zooms the timeline to the finding: back to the step afterwards
        app.processEvents()
        view.show_range(t0, t1)
    rows = query.rows_named(m, a.op)
    rows = rows[(m.slices.ts_ns[rows] >= t0) & (m.slices.ts_ns[rows] <= t1)]
    if len(rows):
        view.timeline.select_slice(0, int(rows[0]), reveal=False)
    view.kernels.select_source_row(0)
    view.tabs.setCurrentWidget(view.details)
    for _ in range(30):
        app.processEvents()
        time.sleep(0.02)
    win.grab().save(a.out)
    print(a.out, "selected", m.name(int(rows[0])) if len(rows) else None, np.round(view.timeline.view_range()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

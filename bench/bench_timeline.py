"""Timeline paint benchmark (offscreen): full view, a 1 % zoom and a pan, medians per frame.

    python bench/bench_timeline.py [TRACE ...] [--frames N] [--size 1600x1000] [--expand]
    python bench/bench_timeline.py --ui-stalls [--open [--app]] [--thread | --process] [TRACE ...]

Default traces: ../shared/traces/gpu_gpt_big.pt.trace.json.gz and /tmp/gpu_big_stack.pt.trace.json
(decompress once: xz -dk -c ../shared/traces/gpu_big_stack.pt.trace.json.xz > /tmp/gpu_big_stack.pt.trace.json).
Reports: load s, index s (SliceIndex, built in the load worker by the app), first paint s after the
model is ready (index + set_models + first frame), slices in the time range (all rows) and in the
drawn rows, and per view the median of the timeline item's own paint and of the whole widget frame.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PTPROF_SHARED_TRACES") or next(
    (p for p in (_REPO.parent / "shared" / "traces", _REPO.parent.parent / "shared" / "traces") if p.is_dir()),
    _REPO.parent / "shared" / "traces"))
DEFAULTS = [SHARED / "gpu_gpt_big.pt.trace.json.gz", Path("/tmp/gpu_big_stack.pt.trace.json")]


def slices_in(widget, t0: float, t1: float, drawn_only: bool) -> int:
    n = 0
    vis = set()
    if drawn_only:
        y0, y1 = widget.vb.viewRange()[1]
        vis = set(range(max(0, int(y0)), int(y1) + 1))
    for i, r in enumerate(widget.rows):
        if r.track < 0 or (drawn_only and i not in vis):
            continue
        n += widget.indexes[r.model].count(r.track, r.depth, t0, t1)
    if not drawn_only:  # rows hidden by collapsed tracks count too
        n = sum(int(((m.slices.ts_ns <= t1) & (m.slices.ts_ns + m.slices.dur_ns >= t0)).sum())
                for m in widget.models)
    return n


def frame(app, widget, img) -> tuple[float, float]:
    from PySide6 import QtGui
    t = time.perf_counter()
    img.fill(0)
    p = QtGui.QPainter(img)
    widget.render(p)
    p.end()
    return widget.item.last_paint_s, time.perf_counter() - t


def bench(path: Path, frames: int, size: tuple[int, int], expand: bool) -> dict:
    from PySide6 import QtGui, QtWidgets

    from core.trace import query
    from core.trace.loader import load
    from gui.theme import load_theme
    from gui.timeline.view import TimelineWidget

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    t = time.perf_counter()
    ts = load(path)
    load_s = time.perf_counter() - t
    t_ready = time.perf_counter()
    indexes = [query.SliceIndex(m) for m in ts.models]
    index_s = time.perf_counter() - t_ready
    w = TimelineWidget(load_theme(dark=False))
    w.resize(*size)
    w.set_models(list(ts.models), indexes)
    if expand:
        for r in list(w.rows):
            if r.collapsed:
                w.toggle_track(r.model, r.track)
    w.show()
    img = QtGui.QImage(size[0], size[1], QtGui.QImage.Format.Format_RGB32)
    s0, s1 = w.item._span
    w.show_range(s0, s1)
    app.processEvents()
    frame(app, w, img)
    first_paint_s = time.perf_counter() - t_ready
    out = {"trace": path.name, "slices": sum(len(m.slices) for m in ts.models), "load_s": round(load_s, 2),
           "index_s": round(index_s, 3), "first_paint_s": round(first_paint_s, 3)}

    def run(name, ranges):
        items, totals = [], []
        for a, b in ranges:
            w.show_range(a, b)
            app.processEvents()
            it, tot = frame(app, w, img)
            items.append(it)
            totals.append(tot)
        a, b = ranges[0]
        out[name] = {"in_range": slices_in(w, a, b, False), "in_drawn_rows": slices_in(w, a, b, True),
                     "rects": w.item.last_rects, "item_ms": round(1e3 * statistics.median(items), 1),
                     "frame_ms": round(1e3 * statistics.median(totals), 1)}

    span = s1 - s0
    run("full", [(s0, s1)] * frames)
    c = s0 + span / 2
    z = span / 100
    run("zoom_1pct", [(c - z / 2, c + z / 2)] * frames)
    run("pan", [(c - z / 2 + k * z * 0.05, c + z / 2 + k * z * 0.05) for k in range(frames)])
    run("pan_full", [(s0 + k * span * 0.01, s1 + k * span * 0.01) for k in range(frames)])
    w.close()
    # the app's path: a whole TraceView (timeline, memory plots, counter rows, legend; tables start
    # in workers) built from the loaded model and its index, until the first frame is on screen
    from gui.trace_view import TraceView
    t = time.perf_counter()
    view = TraceView(ts, indexes, load_theme(dark=False))
    view.resize(*size)
    view.show()
    app.processEvents()
    view.grab()
    out["trace_view_first_paint_s"] = round(time.perf_counter() - t, 3)
    view.close()
    from PySide6 import QtCore
    QtCore.QThreadPool.globalInstance().waitForDone(120_000)  # table workers
    return out


def ui_stalls(path: Path, in_process: bool | None, paint: bool = False, whole_window: bool = False) -> dict:
    """Load through the app's LoadJob (a worker thread, or a child process handing the model over
    through the cache: `gui.load_process.use_process`) while a 10 ms UI timer ticks: the longest gaps
    between ticks are how long the window would freeze. `paint`: then build the TraceView as the
    window does and report the first paint after opening, and this process's peak RSS (the child's
    apart)."""
    import resource
    import tempfile

    from PySide6 import QtCore, QtWidgets

    from gui.workers import LoadJob

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    keep = os.environ.get("PTPROF_BENCH_CACHE_DIR")  # --cache-dir: a reopen from the entry a run before wrote
    cache_dir = keep or tempfile.mkdtemp(prefix="ptprof-bench-")  # else a cold load; removed at the end (GBs)
    os.environ["PTPROF_CACHE_DIR"] = cache_dir
    ticks: list[float] = []
    cpu: list[float] = []  # the UI thread's CPU time at each tick: a gap with little of it waited for a core
    timer = QtCore.QTimer(interval=10)
    timer.timeout.connect(lambda: (ticks.append(time.perf_counter()), cpu.append(time.thread_time())))
    win = None
    if paint and whole_window:  # the app's window exists before a trace is opened in it
        from gui.main_window import MainWindow
        win = MainWindow()
        win.resize(1600, 1000)
        win.show()
        app.processEvents()
    done = []
    job = LoadJob(path, in_process=in_process)
    job.sig_job_loaded.connect(lambda *a: done.append(a))
    job.sig_job_failed.connect(lambda *a: done.append(None))
    t0 = time.perf_counter()
    timer.start()
    job.start()
    while not done:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.001)
    loaded_s = time.perf_counter() - t0
    n_load = len(ticks)
    gaps = sorted((b - a) * 1e3 for a, b in zip(ticks, ticks[1:]))
    out = {"trace": path.name, "in_process": job.in_process, "load_in_worker_s": round(loaded_s, 2),
           "ui_gap_max_ms": round(gaps[-1], 1) if gaps else None,
           "ui_gap_p99_ms": round(gaps[int(len(gaps) * 0.99)], 1) if gaps else None,
           "ui_gaps_load_top_ms_cpu_ms": [(round(g), round(c)) for g, c in sorted(
               (((b - a) * 1e3, (cb - ca) * 1e3) for a, b, ca, cb in zip(ticks, ticks[1:], cpu, cpu[1:])),
               reverse=True)[:4]]}
    if paint and done[0] is not None:
        try:
            from gui import lane
        except ImportError:  # a build before the after-open lane (A/B runs)
            lane = None
        from gui.theme import load_theme
        from gui.trace_view import TraceView
        trace_set, indexes = done[0]
        tp = time.perf_counter()
        issues = None
        painted: list[float] = []

        class FirstPaint(QtCore.QObject):  # the new timeline's first Paint event, as the user sees it
            def eventFilter(self, obj, ev):  # noqa: N802 (Qt API)
                if ev.type() == QtCore.QEvent.Type.Paint and not painted:
                    painted.append(time.perf_counter())
                return False

        spy = FirstPaint()

        def watch(v) -> None:
            v.timeline.viewport().installEventFilter(spy)

        if win is not None:  # the app's window: the Issues analysis runs after the open too
            view = win
            issues = view.integrations.issues
            # the new tab becomes current in the open's own turn, before its first paint
            # (sig_trace_loaded comes after the view's last turn: too late to see the first paint)
            win.tabs.currentChanged.connect(lambda _i: watch(win.current_view()) if win.current_view() else None)
            # what a finished LoadJob's signal calls, from the event loop (the UI timer keeps ticking
            # between the open's own event-loop turns, as it would for a user)
            QtCore.QTimer.singleShot(0, lambda: view._on_job_loaded(job, trace_set, indexes))  # noqa: SLF001
        else:
            view = TraceView(trace_set, indexes, load_theme(dark=False))
            watch(view)
            view.resize(1600, 1000)
            view.show()
        while not painted and time.perf_counter() - tp < 300:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            time.sleep(0.001)
        paint_s = (painted[0] if painted else time.perf_counter()) - tp
        out["first_paint_after_open_s"] = round(tp + paint_s - t0, 2)
        # then the window's own work after the first paint (tables, health, issues: gui/lane.py): keep
        # ticking until it is done, so a result applied on the UI thread shows as a gap too
        pool = QtCore.QThreadPool.globalInstance()
        t1 = time.perf_counter()

        def busy() -> bool:
            return bool(pool.activeThreadCount() or (lane is not None and not lane.idle())
                        or (issues is not None and issues._worker is not None))

        while (busy() or time.perf_counter() - t1 < 2.0) and time.perf_counter() - t1 < 300:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            time.sleep(0.001)
        out["after_open_work_s"] = round(time.perf_counter() - t1, 1)
        if issues is not None:
            out["issues_status"] = issues.status.text()[:70]
        after = ticks[max(0, n_load - 1):]
        after_cpu = cpu[max(0, n_load - 1):]
        gaps2 = sorted((b - a) * 1e3 for a, b in zip(after, after[1:]))
        # (gap ms, UI-thread CPU ms in it), longest first: wall minus CPU is time the thread did not run
        with_cpu = sorted((((b - a) * 1e3, (cb - ca) * 1e3) for a, b, ca, cb
                           in zip(after, after[1:], after_cpu, after_cpu[1:])), reverse=True)
        out["ui_gaps_after_load_top_ms_cpu_ms"] = [(round(g), round(c)) for g, c in with_cpu[:6]]
        out["ui_gaps_over_100ms_cpu_over_100ms"] = sum(c > 100 for _g, c in with_cpu)
        out["load_avg"] = [round(x, 1) for x in os.getloadavg()]
        out["ui_gap_max_ms_open_and_after"] = round(gaps2[-1], 1) if gaps2 else None
        out["ui_gaps_over_100ms_after_load"] = sum(g > 100 for g in gaps2)
        out["ui_gaps_after_load_top_ms"] = [round(g) for g in gaps2[::-1][:4]]
        out["open_to_paint_s"] = round(paint_s, 2)
        timer.stop()
        view.close()
        if lane is not None:
            lane.wait(120_000)
        pool.waitForDone(120_000)
    timer.stop()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["child_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    out["cpu_s"] = round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1)
    from core.trace import cache
    cache.flush()
    if not keep:
        import shutil
        shutil.rmtree(cache_dir, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--frames", type=int, default=15)
    ap.add_argument("--size", default="1600x1000")
    ap.add_argument("--expand", action="store_true", help="expand collapsed (python) tracks first")
    ap.add_argument("--ui-stalls", action="store_true", help="measure UI freezes during a cold load instead")
    ap.add_argument("--cache-dir", type=Path, help="with --ui-stalls: this cache folder, kept (run twice: the "
                    "second run is a reopen from the cache)")
    ap.add_argument("--thread", action="store_true", help="with --ui-stalls: load in a thread, not a process")
    ap.add_argument("--process", action="store_true", help="with --ui-stalls: load in a child process")
    ap.add_argument("--app", action="store_true",
                    help="with --open: open it in the app's MainWindow (Issues analysis included), not a bare TraceView")
    ap.add_argument("--open", action="store_true",
                    help="with --ui-stalls: then the TraceView's first paint after opening, and peak RSS")
    a = ap.parse_args()
    size = tuple(int(x) for x in a.size.split("x"))
    if a.cache_dir is not None:
        a.cache_dir.mkdir(parents=True, exist_ok=True)
        os.environ["PTPROF_BENCH_CACHE_DIR"] = str(a.cache_dir)
    for p in a.traces or DEFAULTS:
        if not p.exists():
            print(f"skip {p}: not found", file=sys.stderr)
            continue
        mode = False if a.thread else True if a.process else None  # None: as the app decides
        print(ui_stalls(p, mode, a.open, a.app) if a.ui_stalls else bench(p, a.frames, size, a.expand), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

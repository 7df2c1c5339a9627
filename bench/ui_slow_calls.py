"""bench_timeline.py --ui-stalls with the window's UI-thread entry points timed: every call of one of them
that takes over $SLOW_MS (default 30) of UI-thread CPU is printed (name, CPU ms, wall ms), so a long gap can be
put on the call that made it (its CPU) or on the machine's load (wall without CPU).

    QT_QPA_PLATFORM=offscreen python bench/ui_slow_calls.py --ui-stalls --open --app TRACE_OR_FOLDER
"""
import functools
import importlib
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
TARGETS = ["gui.main_window:MainWindow._on_job_loaded", "gui.trace_view:TraceView.__init__",
           "gui.stats.panels:StatsPanel._on_worker_returned", "gui.issues.panel:IssuesPanel.set_analysis",
           "gui.issues.panel:IssuesPanel._on_worker_yielded", "gui.memory.panel:MemoryPanel.set_trace",
           "gui.timeline.view:TimelineWidget.set_models", "gui.timeline.view:TimelineWidget.paintEvent",
           "gui.timeline.rank_strip:RankStrip.paintEvent", "gui.gc_guard:check"]
SLOW = float(os.environ.get("SLOW_MS", "30"))


def _wrap(owner, name, label):
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*a, **k):
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            c, w = (time.thread_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3
            if c > SLOW:
                print(f"SLOW {label}: cpu {c:.0f} ms, wall {w:.0f} ms", flush=True)
    setattr(owner, name, timed)


def _timed_app():
    """The QApplication, made here with its notify() timed: every top-level event dispatch over SLOW_MS of UI
    CPU is printed with its receiver's class and the event type (paints, resizes, queued signal calls)."""
    from PySide6 import QtCore, QtWidgets
    depth = [0]

    class TimedApp(QtWidgets.QApplication):
        def notify(self, receiver, event):  # noqa: N802 (Qt API)
            depth[0] += 1
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return super().notify(receiver, event)
            finally:
                depth[0] -= 1
                c = (time.thread_time() - c0) * 1e3
                if depth[0] == 0 and c > SLOW:
                    w = (time.perf_counter() - w0) * 1e3
                    kind = event.type()
                    name = getattr(kind, "name", str(kind))
                    extra = ""
                    if kind == QtCore.QEvent.Type.MetaCall:
                        extra = " (a queued signal / invokeMethod)"
                    print(f"SLOW event {name} -> {type(receiver).__name__}{extra}: cpu {c:.0f} ms, wall {w:.0f} ms",
                          flush=True)
    return TimedApp([sys.argv[0]])


if __name__ == "__main__":
    _APP = _timed_app()
    for t in TARGETS:
        mod, _, attr = t.partition(":")
        try:
            owner = importlib.import_module(mod)
            parts = attr.split(".")
            for p in parts[:-1]:
                owner = getattr(owner, p)
            _wrap(owner, parts[-1], t.split(":")[1])
        except (ImportError, AttributeError) as exc:
            print(f"(not timed: {t}: {exc})")
    import bench_timeline
    sys.argv = ["bench_timeline"] + sys.argv[1:]
    bench_timeline.main()

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
from ui_timing import event_label, timed_app  # noqa: E402

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


def _print_slow(receiver, event, cpu_ms, wall0, wall1):
    """Every top-level event dispatch over SLOW_MS of UI CPU, with its receiver's class and the event type
    (paints, resizes, queued signal calls)."""
    if cpu_ms > SLOW:
        what = event_label(receiver, event, "a queued signal / invokeMethod")
        print(f"SLOW event {what}: cpu {cpu_ms:.0f} ms, wall {(wall1 - wall0) * 1e3:.0f} ms", flush=True)


if __name__ == "__main__":
    _APP = timed_app([sys.argv[0]], _print_slow)
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

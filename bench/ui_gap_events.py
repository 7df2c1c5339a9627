"""The UI thread's longest gaps at the open of a run in the app's window, each with what ran in it: every
top-level event dispatch (QApplication.notify) that took over $EVENT_MS (default 5) ms of UI-thread CPU is
recorded with its start, and the gaps of a 10 ms UI timer are listed longest-UI-CPU first with those events.
The UI thread's own CPU in a gap does not depend on the machine's load; its wall time does.

    QT_QPA_PLATFORM=offscreen nice -n 10 python bench/ui_gap_events.py --ui-stalls --open --app [--thread] \
        [--cache-dir DIR] RUN

(the arguments are bench/bench_timeline.py's: this wraps its `ui_stalls`)
"""
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
from ui_timing import event_label, timed_app  # noqa: E402

EVENT_MS = float(os.environ.get("EVENT_MS", "5"))
PROFILE = float(os.environ.get("PROFILE_MS", "0"))  # cProfile every top-level event; print those over this
PROFILES: list = []
EVENTS: list[tuple[float, float, float, str]] = []  # (start wall s, end wall s, UI CPU ms, what)
TICKS: list[tuple[float, float]] = []  # (wall s, UI thread CPU s) of every UI timer tick


def _record(receiver, event, cpu_ms, wall0, wall1):
    if cpu_ms > EVENT_MS:
        EVENTS.append((wall0, wall1, cpu_ms, event_label(receiver, event, _slot_hint())))


_LAST_SLOT = [""]


def _slot_hint() -> str:
    return _LAST_SLOT[0]


def _trace_slots():
    """Name the Python function a queued call ran (the deepest gui.* frame entered at depth 1)."""
    import threading
    main = threading.main_thread()

    def prof(frame, event, arg):
        if event == "call" and threading.current_thread() is main:
            co = frame.f_code
            if "/gui/" in co.co_filename and frame.f_back is not None and "/gui/" not in frame.f_back.f_code.co_filename:
                _LAST_SLOT[0] = f"{os.path.basename(co.co_filename)}:{co.co_name}"
    sys.setprofile(prof)


def report(top: int = 6) -> None:
    gaps = []
    for (a, ca), (b, cb) in zip(TICKS, TICKS[1:]):
        gaps.append(((cb - ca) * 1e3, (b - a) * 1e3, a, b))
    gaps.sort(reverse=True)
    print(f"load average {os.getloadavg()}")
    for cpu, wall, a, b in gaps[:top]:
        inside = [f"{what} {c:.0f} ms" for w0, w1, c, what in EVENTS if w1 > a and w0 < b]
        print(f"gap {wall:.0f} ms wall, {cpu:.0f} ms UI CPU: " + "; ".join(inside))


if __name__ == "__main__":
    _APP = timed_app([sys.argv[0]], _record, PROFILE, PROFILES)
    import bench_timeline
    from PySide6 import QtCore
    real_timer = QtCore.QTimer

    class TickTimer(real_timer):  # the bench's 10 ms UI timer: its ticks with the UI thread's CPU time
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            if k.get("interval") == 10:
                self.timeout.connect(lambda: TICKS.append((time.perf_counter(), time.thread_time())))

    QtCore.QTimer = TickTimer
    if os.environ.get("SLOT_NAMES"):
        _trace_slots()
    sys.argv = ["bench_timeline"] + sys.argv[1:]
    try:
        bench_timeline.main()
    finally:
        QtCore.QTimer = real_timer
        report()
        for c, what, text in sorted(PROFILES, key=lambda p: -p[0])[:6]:
            print(f"=== {what}: {c:.0f} ms (profiled)")
            print("\n".join(line for line in text.splitlines() if line.strip())[:3500])

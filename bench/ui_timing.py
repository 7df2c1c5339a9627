"""What bench/ui_gap_events.py and bench/ui_slow_calls.py share: the QApplication made with its notify() timed
(every top-level event dispatch, its UI-thread CPU and wall) and an event's label for a report line."""
import time
from collections.abc import Callable


def timed_app(argv: list, on_event: Callable, profile_over_ms: float = 0.0, profiles: list | None = None):
    """The QApplication; `on_event(receiver, event, cpu_ms, wall0_s, wall1_s)` after every top-level dispatch.
    profile_over_ms > 0: each top-level dispatch runs under cProfile and those over it are appended to
    `profiles` as (cpu ms, "type -> receiver class", the 22 heaviest calls by cumulative time)."""
    from PySide6 import QtWidgets
    depth = [0]

    class TimedApp(QtWidgets.QApplication):
        def notify(self, receiver, event):  # noqa: N802 (Qt API)
            depth[0] += 1
            prof = None
            if profile_over_ms and depth[0] == 1:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return super().notify(receiver, event)
            finally:
                depth[0] -= 1
                c = (time.thread_time() - c0) * 1e3
                if prof is not None:
                    prof.disable()
                    if c > profile_over_ms:
                        import io
                        import pstats
                        out = io.StringIO()
                        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(22)
                        profiles.append((c, f"{event.type()} -> {type(receiver).__name__}", out.getvalue()))
                if depth[0] == 0:
                    on_event(receiver, event, c, w0, time.perf_counter())
    return TimedApp(argv)


def event_label(receiver, event, queued_call: str = "") -> str:
    """"Paint -> TimelineWidget"; a queued signal / invokeMethod (MetaCall) with `queued_call` in brackets."""
    from PySide6 import QtCore
    kind = event.type()
    what = f"{getattr(kind, 'name', str(kind))} -> {type(receiver).__name__}"
    if kind == QtCore.QEvent.Type.MetaCall and queued_call:
        what += f" ({queued_call})"
    return what

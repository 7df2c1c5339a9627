"""bench_timeline.py --ui-stalls with faulthandler's C watchdog re-armed on every 5 ms UI tick: a tick later than
$LATE_MS (default 60) dumps every thread's stack to $DUMPS (no GIL needed: a worker holding it in C is caught).

    QT_QPA_PLATFORM=offscreen python bench/ui_watchdog.py --ui-stalls --open --app TRACE
"""
import faulthandler
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
def _main():
    LATE = float(os.environ.get("LATE_MS", "60")) / 1e3
    from PySide6 import QtCore, QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])  # noqa: F841 - kept alive
    out = open(os.environ.get("DUMPS", "ui_watchdog_dumps.txt"), "w")
    T0 = time.perf_counter()
    def tick():
        faulthandler.dump_traceback_later(LATE, repeat=False, file=out)
    t = QtCore.QTimer(interval=5)
    t.timeout.connect(tick)
    t.start()
    import bench_timeline

    import gui.workers as W
    seen = []
    orig_init = W.LoadJob.__init__
    def init(self, *a, **k):
        orig_init(self, *a, **k)
        def prog(stage, frac):
            st = stage.split(" ")[0]
            if not seen or seen[-1] != st:
                seen.append(st)
                print(f"[{time.perf_counter()-T0:7.2f}s] stage {stage[:60]} {frac:.2f}", flush=True)
        self.sig_progress_changed.connect(prog)
        self.sig_job_loaded.connect(lambda *a: print(f"[{time.perf_counter()-T0:7.2f}s] loaded", flush=True))
    W.LoadJob.__init__ = init
    sys.argv = ["bench_timeline"] + sys.argv[1:]
    try:
        bench_timeline.main()
    finally:
        faulthandler.cancel_dump_traceback_later()
        out.close()
if __name__ == "__main__":
    _main()

"""The screens docs/make_screenshots.py renders, one function each, in one QApplication per theme.

Each screen opens what it shows in a fresh MainWindow the size of a 1920x1080 screen (the live
run: the Run dock at its default height), waits for the workers it needs (load, analysis, tables, HTA), grabs
the window and closes it. A screen whose input is missing is skipped (and says so on stderr).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

SIZE = (1904, 1040)


class Skip(Exception):
    pass


def _app():
    from PySide6 import QtWidgets
    return QtWidgets.QApplication.instance()


def wait_until(cond, timeout_s: float = 120.0) -> bool:
    app = _app()
    t_end = time.time() + timeout_s
    while time.time() < t_end:
        app.processEvents()
        if cond():
            return True
        time.sleep(0.01)
    return False


def settle(seconds: float = 0.3) -> None:
    wait_until(lambda: False, seconds)


def new_window():
    from gui.main_window import MainWindow
    win = MainWindow()
    win.resize(*SIZE)
    win.show()
    settle(0.1)
    return win


def open_in(win, path: Path):
    if not Path(path).exists():
        raise Skip(f"{path} not found")
    box = []
    win.sig_trace_loaded.connect(box.append)
    win.sig_snapshot_loaded.connect(box.append)
    win.sig_load_failed.connect(lambda p, why: box.append(None))
    win.open_path(str(path))
    if not wait_until(lambda: box, 300) or box[0] is None:
        raise Skip(f"{path} did not load")
    view = win.current_view()
    if view is not None:
        wait_until(lambda: all(p.ready for p in view.stats_panels()), 120)
    settle(0.2)
    return view


def wait_analysis(win) -> None:
    issues = win.integrations.issues
    wait_until(lambda: issues.analysis() is not None, 180)
    settle(0.2)


def grab(widget, out: Path) -> Path:
    settle(0.2)
    widget.grab().save(str(out))
    return out


# --- screens -------------------------------------------------------------------------------------
def start_page(win, traces: Path):
    return win


def sample(win, traces: Path):
    from gui.actions import SAMPLE
    open_in(win, SAMPLE)
    wait_analysis(win)
    return win


def gpt_big(win, traces: Path):
    open_in(win, traces / "gpu_gpt_big.pt.trace.json.gz")
    wait_analysis(win)
    return win


def compiled(win, traces: Path):
    open_in(win, traces / "gpu_compile_small.pt.trace.json.gz")
    wait_analysis(win)
    return win


def _issues_trace(traces: Path) -> Path:
    p = traces / "gpu_issues.pt.trace.json.gz"
    if p.exists():
        return p
    from gui.actions import SAMPLE
    return SAMPLE


def finding(win, traces: Path):
    open_in(win, _issues_trace(traces))
    wait_analysis(win)
    issues = win.integrations.issues
    if issues.model.rowCount() == 0:
        raise Skip("no findings")
    issues.select_row(0)
    return win


def kernels(win, traces: Path):
    view = open_in(win, _issues_trace(traces))
    wait_analysis(win)
    view.tabs.setCurrentWidget(view.kernels)
    view.kernels.select_source_row(0)
    return win


def breakdown(win, traces: Path):
    open_in(win, _issues_trace(traces))
    wait_analysis(win)
    issues = win.integrations.issues
    issues.tabs.setCurrentWidget(issues.breakdown)
    return win


def hta(win, traces: Path):
    view = open_in(win, _issues_trace(traces))
    wait_analysis(win)
    tab = next((view.tabs.widget(i) for i in range(view.tabs.count()) if view.tabs.tabText(i) == "HTA"), None)
    if tab is None:
        raise Skip("no HTA tab")
    view.tabs.setCurrentWidget(tab)  # a placeholder until first opened: this builds the HtaTab
    tab = view.tabs.currentWidget()
    if not hasattr(tab, "report"):
        raise Skip("no HTA tab")
    if tab.run_button.isEnabled():
        tab.run_button.click()  # HTA runs on request only
    wait_until(lambda: tab.report() is not None, 240)
    for row in range(tab.list.count()):  # the first analysis with a table
        tab.list.setCurrentRow(row)
        if tab.frame_model.rowCount():
            break
    return win


def snapshot(win, traces: Path):
    open_in(win, traces / "gpu_memory.snapshot.pickle")
    return win


def multi_rank(win, traces: Path):
    open_in(win, traces / "gpu_ddp2")
    wait_analysis(win)
    return win


def cpu_run(win, traces: Path):
    open_in(win, traces / "cpu_train.pt.trace.json.gz")
    wait_analysis(win)
    return win


def export(win, traces: Path):
    """The sample trace after File > Export report: the status bar says where it went, with Open folder /
    Open report (written to a throwaway folder, as the dialog would)."""
    import tempfile

    from gui.actions import SAMPLE
    open_in(win, SAMPLE)
    wait_analysis(win)
    exporter = win.integrations.exporter
    ctx = exporter._context()
    if ctx is None:
        raise Skip("nothing to export")
    done = []
    exporter.sig_export_finished.connect(done.append)
    exporter.sig_export_failed.connect(lambda why: done.append(None))
    exporter.run_report(ctx, Path(tempfile.mkdtemp(prefix="ptprof-report-")))
    if not wait_until(lambda: done, 240) or done[0] is None:
        raise Skip("the report export did not finish")
    return win


def compare(win, traces: Path):
    a, b = traces / "gpu_issues.pt.trace.json.gz", traces / "gpu_clean.pt.trace.json.gz"
    if not (a.exists() and b.exists()):
        raise Skip("gpu_issues / gpu_clean not found")
    comp = getattr(win.integrations, "compare", None)
    if comp is None:
        raise Skip("no compare view in this build")
    shown = []
    comp.sig_compare_shown.connect(shown.append)
    comp.compare_paths(a, b)
    if not wait_until(lambda: shown, 300):
        raise Skip("compare did not finish")
    settle(0.5)
    return win


def _fake_run(panel, with_gpu: bool) -> None:
    """60 s of a run: 10 Hz samples of a fake GPU, ~120 ms steps, schedule wait 5 / warmup 2 / active 5 x 2."""
    import numpy as np

    from core.gpu.backend import COLUMNS, FakeBackend, NoGpu
    from core.gpu.sampler import Sampler
    from core.runner.config import Schedule
    backend = FakeBackend(2) if with_gpu else NoGpu("no NVIDIA driver: the NVML library (libnvidia-ml.so) "
                                                    "was not found")
    sampler = Sampler(backend, rate_hz=10)  # not started: its rings are filled below
    t0 = 1_700_000_000 * 10**9
    schedule = Schedule(wait=20, warmup=5, active=30, repeat=3)
    panel.attach(sampler, t0, schedule)
    end_s = 48.0
    for ring_gpu, ring in sampler.rings.items():
        for k in range(int(end_s * 10)):
            t_s = k / 10
            util = max(0.0, min(100.0, 70 + 25 * math.sin(t_s / 3 + ring_gpu) - (60 if t_s < 4 else 0)))
            row = np.full(len(COLUMNS), np.nan)
            row[COLUMNS.index("util_pct")] = util
            row[COLUMNS.index("mem_used_mb")] = 900 + min(t_s, 6) * 2500 + 300 * ring_gpu
            row[COLUMNS.index("mem_total_mb")] = 81_559
            row[COLUMNS.index("power_w")] = 90 + util * 4.5
            row[COLUMNS.index("temp_c")] = 38 + t_s / 4
            ring.append(t0 + int(t_s * 1e9), row)
    panel.add_event({"type": "start", "t_ns": t0 + 10**9, "rank": 0})
    t_ns, step = t0 + 4 * 10**9, 0
    phases = {1: "wait"}
    for c in range(3):
        base = c * 55
        phases[base + 20] = "warmup"
        phases[base + 25] = "active"
        phases[base + 55] = "wait" if c < 2 else "done"
    cycle = 0
    while t_ns < t0 + end_s * 1e9:
        step += 1
        dur = int((1.6 if step == 1 else 0.12 + 0.02 * math.sin(step / 4) + (0.05 if step % 55 > 25 else 0)) * 1e9)
        t_ns += dur
        panel.add_event({"type": "step", "step": step, "dur_ns": dur, "t_ns": t_ns, "rank": 0})
        if step in phases:
            if phases[step] in ("wait", "done") and step > 1:
                cycle += 1
                panel.add_event({"type": "cycle", "cycle": cycle, "step": step, "t_ns": t_ns + 3 * 10**8, "rank": 0})
            panel.add_event({"type": "phase", "phase": phases[step], "step": step, "t_ns": t_ns, "rank": 0})
    panel._on_timer_timeout()


def _live(win, with_gpu: bool):
    """The Run dock as a run shows it: at its default height under the start page, fed a fake run."""
    from PySide6 import QtWidgets

    from gui.run.dock import show_run_dock
    dock = next(d for d in win.findChildren(QtWidgets.QDockWidget) if d.windowTitle() == "Run")
    show_run_dock(win, dock)
    panel = win.live_panel
    _fake_run(panel, with_gpu)
    panel.timer.stop()
    run_panel = win.integrations.run_panel
    run_panel.status.setText("Running · " + panel.state_line())  # what the run controller writes there
    return win


def live(win, traces: Path):
    return _live(win, True)


def live_no_gpu(win, traces: Path):
    return _live(win, False)


LAPTOP = (1366, 740)  # a 1366x768 laptop screen's available area


def _sized(win, size) -> None:
    win.resize(*size)
    settle(0.2)


def laptop_finding(win, traces: Path):
    """1366x768: the issues panel's titles and the timeline's height on a small screen."""
    _sized(win, LAPTOP)
    return finding(win, traces)


def _after_run(win, traces: Path, size):
    """A run's trace just opened under the Run dock (what File > Run Script shows when the script ends)."""
    _sized(win, size)
    _live(win, True)
    box = []
    win.sig_trace_loaded.connect(box.append)
    win.integrations.run_panel.sig_bundle_ready.emit(str(_issues_trace(traces)))
    if not wait_until(lambda: box, 300):
        raise Skip("the run's trace did not load")
    view = win.current_view()
    wait_until(lambda: all(p.ready for p in view.stats_panels()), 120)
    wait_analysis(win)
    return win


def laptop_after_run(win, traces: Path):
    return _after_run(win, traces, LAPTOP)


def desktop_after_run(win, traces: Path):
    return _after_run(win, traces, SIZE)


SCREENS = {
    "start": start_page, "sample": sample, "gpt_big": gpt_big, "compiled": compiled, "finding": finding,
    "kernels": kernels, "breakdown": breakdown, "hta": hta, "snapshot": snapshot, "multi_rank": multi_rank,
    "cpu_run": cpu_run, "export": export, "compare": compare, "live": live, "live_no_gpu": live_no_gpu,
    "laptop_finding": laptop_finding, "laptop_after_run": laptop_after_run, "desktop_after_run": desktop_after_run,
}


# Qt's offscreen platform plugin has no propagateSizeHints(): every top-level window whose layout sets
# its minimum size (each MainWindow, dock and dialog, on every relayout) printed this line, ~40 per theme.
# Under a real display (xcb) there is no such line; offscreen it says nothing about the screenshots.
_OFFSCREEN_NOISE = ("This plugin does not support propagateSizeHints()",)


def quiet_offscreen_noise() -> None:
    """Drop the offscreen plugin's propagateSizeHints line; every other Qt message still reaches stderr."""
    from PySide6 import QtCore

    def handler(mode, context, message):
        if message in _OFFSCREEN_NOISE:
            return
        sys.stderr.write(f"{message}\n")

    QtCore.qInstallMessageHandler(handler)


def render_all(out: Path, theme: str, traces: Path, only: set[str]) -> list[Path]:
    import pyqtgraph as pg
    from PySide6 import QtWidgets

    from gui.theme import apply_scheme
    quiet_offscreen_noise()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    apply_scheme(app, theme)
    pg.setConfigOptions(antialias=False, useOpenGL=False)
    written = []
    for name, screen in SCREENS.items():
        if only and name not in only:
            continue
        win = new_window()
        try:
            widget = screen(win, traces)
            written.append(grab(widget, out / f"{name}.{theme}.png"))
            if widget is not win:
                widget.close()
                widget.deleteLater()
        except Skip as why:
            print(f"skipped {name}: {why}", file=sys.stderr)
        finally:
            win.close()
            win.deleteLater()
            settle(0.05)
    return written

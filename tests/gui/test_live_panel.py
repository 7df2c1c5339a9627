"""LivePanel: curves fed from a fake sampler's ring buffers, step curve and markers, no-GPU message."""
from __future__ import annotations

import time

from core.gpu.backend import FakeBackend, NoGpu
from core.gpu.sampler import Sampler
from gui.live.panel import LivePanel
from gui.run.console import ConsoleWidget


def test_curves_follow_the_sampler(qtbot):
    panel = LivePanel()
    qtbot.addWidget(panel)
    sampler = Sampler(FakeBackend(2), rate_hz=50).start()
    t0 = time.time_ns()
    panel.attach(sampler, t0)
    for i in range(1, 6):
        panel.add_event({"type": "step", "step": i, "dur_ns": 20_000_000 + i, "t_ns": t0 + i * 10**8, "rank": 0})
    panel.add_event({"type": "phase", "phase": "active", "step": 3, "t_ns": t0 + 3 * 10**8, "rank": 0})
    panel.add_event({"type": "cycle", "cycle": 1, "step": 5, "t_ns": t0 + 5 * 10**8, "rank": 0})
    panel.add_event({"type": "step", "step": 9, "dur_ns": 5, "t_ns": t0, "rank": 1})  # other ranks: not plotted
    qtbot.wait(600)
    sampler.stop()
    panel.detach()
    assert not panel.message.isVisible()
    x, y = panel._util_curves[1].getData()
    assert len(x) >= 5 and 0 <= y.min() and y.max() <= 100
    mx, my = panel._mem_curves[0].getData()
    assert my.max() < 100  # GiB, not MiB
    sx, sy = panel.step_curve.getData()
    assert panel.step_count() == 4  # step 1 (interpreter start + setup) is not plotted
    assert abs(sy[0] - 20.000002) < 1e-6 and abs(sx[0] - 0.2) < 1e-9
    band = panel._markers[0]
    assert [round(v, 3) for v in band.getRegion()] == [0.3, 0.5]  # the recorded window, shaded
    assert "GPU1" in panel.values.text() and "step 5" in panel.values.text()


def test_no_gpu_says_why(qtbot):
    panel = LivePanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.attach(Sampler(NoGpu("no NVIDIA driver: the NVML library (libnvidia-ml.so) was not found")), time.time_ns())
    assert panel.message.isVisible() and "no NVIDIA driver" in panel.message.text()
    panel.detach()


def test_console_is_bounded_and_searchable(qtbot):
    c = ConsoleWidget(max_lines=100)
    qtbot.addWidget(c)
    c.append_lines([("stdout", f"line {i}") for i in range(250)])
    c.append_lines([("stderr", "Traceback: boom")])
    assert c.line_count() == 100
    assert "line 0\n" not in c.text.toPlainText() and "line 249" in c.text.toPlainText()
    assert c.find("boom") and c.text.textCursor().selectedText() == "boom"
    assert not c.find("not there at all")


def test_one_time_axis_state_line_and_no_gpu_plots_without_a_gpu(qtbot):
    from core.runner.config import Schedule
    panel = LivePanel()
    qtbot.addWidget(panel)
    panel.resize(1100, 300)
    panel.show()
    t0 = time.time_ns()
    panel.attach(Sampler(FakeBackend(1), rate_hz=50), t0, Schedule(wait=1, warmup=1, active=2, repeat=2))
    assert all(p.isVisible() for p in panel.plots())
    # one time axis: every GPU plot follows the step plot's x; only the lowest plot draws the labels
    for p in panel.gpu_plots():
        assert p.getViewBox().linkedView(0) is panel.step_plot.getViewBox()
    assert [p.getAxis("bottom").style["showValues"] for p in panel.plots()] == [False, False, False, True]
    assert not panel.power_plot.getAxis("bottom").autoSIPrefix  # no "(x0.001)"
    ev = lambda **k: panel.add_event(dict(k, t_ns=t0 + k.get("step", 0) * 10**8, rank=0))  # noqa: E731
    assert panel.state_line() == "waiting for the script to start"
    ev(type="start")
    ev(type="step", step=1, dur_ns=10**9)
    ev(type="phase", phase="wait", step=1)
    assert panel.state_line().startswith("waiting · step 1 (recording starts after step 2)")
    ev(type="phase", phase="warmup", step=2)
    assert panel.state_line().startswith("warm-up")
    ev(type="step", step=3, dur_ns=10**8)
    ev(type="phase", phase="active", step=3)
    assert panel.state_line() == "recording cycle 1 of 2 · step 3"
    assert len(panel._live_bands) == 4  # the window being recorded is shaded on every plot
    ev(type="step", step=5, dur_ns=10**8)
    assert panel.state_line().startswith("saving the trace of cycle 1 of 2")
    ev(type="cycle", cycle=1, step=5)
    ev(type="phase", phase="done", step=5)
    assert panel.state_line().startswith("done recording · step 5 · 1 trace saved")
    assert len(panel._markers) == 5 and not panel._live_bands  # 4 bands + its label line
    panel._on_timer_timeout()
    ticks = panel.step_plot.getAxis("left")._tickLevels[0]
    assert [v for v, _ in ticks] == sorted(v for v, _ in ticks) and len(ticks) == 3  # 3 labels, never overlapping
    panel.attach(Sampler(NoGpu("no NVIDIA driver")), t0)
    assert panel.step_plot.isVisible() and not any(p.isVisible() for p in panel.gpu_plots())
    assert panel.step_plot.getAxis("bottom").style["showValues"]
    panel.detach()


def test_a_remote_hosts_skewed_clock_is_plotted_on_the_desktops(qtbot):
    """A remote run: its GPU rows arrive on the desktop clock already (MirrorSampler), its events carry the
    host's clock (here one hour behind): both land on the same seconds since Run, never 3600 s apart."""
    from core.remote.mirror import MirrorSampler
    skew = 3600 * 10**9  # desktop - host
    panel = LivePanel()
    qtbot.addWidget(panel)
    t0 = time.time_ns()
    sampler = MirrorSampler(["GPU 0"], "", clock_offset_ns=skew)
    panel.attach(sampler, t0, clock_offset_ns=skew)
    host_t0 = t0 - skew
    sampler.feed("".join(f"{host_t0 + i * 10**8},0,50,10,1000,80000,300,50,1700,,,\n" for i in range(1, 21)).encode())
    for i in range(1, 6):
        panel.add_event({"type": "step", "step": i, "dur_ns": 20_000_000, "t_ns": host_t0 + i * 4 * 10**8, "rank": 0})
    panel._on_timer_timeout()
    sx, _ = panel.step_curve.getData()
    ux, _ = panel._util_curves[0].getData()
    assert abs(sx[0] - 0.8) < 1e-6 and abs(sx[-1] - 2.0) < 1e-6  # seconds since Run, not -3600
    assert abs(ux[0] - 0.1) < 1e-6 and abs(ux[-1] - 2.0) < 1e-6  # the GPU curve on the same axis
    panel.detach()

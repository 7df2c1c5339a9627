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

"""Qt renderer: every report figure paints to a PNG of the asked size that is not blank, at 1x and 2x,
from the GUI thread and from a worker thread."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import shared_trace
from PySide6 import QtCore, QtGui

from core.export import breakdown_data, plots_data, timeline_data
from core.export.figures import FigureSpec, NoteFigure, header
from core.trace.loader import load
from gui.report.renderer import QtRenderer


def png_stats(data: bytes) -> tuple[int, int, int, float]:
    """(width, height, distinct colours, grey-level std) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = QtGui.QImage.fromData(data, "PNG").convertToFormat(QtGui.QImage.Format.Format_RGB32)
    w, h = img.width(), img.height()
    arr = np.frombuffer(img.constBits(), np.uint32, count=img.bytesPerLine() // 4 * h).reshape(h, -1)[:, :w]
    rgb = np.stack([(arr >> 16) & 255, (arr >> 8) & 255, arr & 255], axis=-1).astype(float)
    return w, h, len(np.unique(arr)), float(rgb.mean(axis=-1).std())


@pytest.fixture(scope="module")
def issues():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


@pytest.fixture(scope="module")
def renderer(qapp):
    return QtRenderer()


@pytest.mark.parametrize("name", ["timeline", "memory", "gpu", "breakdown"])
def test_figures_paint_legible_pngs(issues, renderer, name):
    spec = FigureSpec(width_px=1400)
    build = {"timeline": timeline_data.build, "memory": plots_data.memory, "gpu": plots_data.gpu,
             "breakdown": breakdown_data.build}[name]
    png = renderer.render(build(issues, spec))
    w, h, colours, std = png_stats(png)
    assert w == 1400 and 150 < h < 3000
    assert colours >= 8 and std > 5.0  # text, axes, data in several colours: not a blank page


def test_timeline_colours_its_kinds(issues, renderer):
    fig = timeline_data.build(issues, FigureSpec(width_px=1200))
    img = QtGui.QImage.fromData(renderer.render(fig), "PNG")
    colours = {img.pixelColor(x, y).name() for x in range(0, img.width(), 3) for y in range(0, img.height(), 3)}
    kernel = QtGui.QColor("#2e9e4f")  # resources/report.toml [kind] KERNEL and its two shades
    shades = {kernel.name(), kernel.lighter(115).name(), kernel.darker(115).name()}
    assert colours & shades, "no kernel-coloured pixels on the GPU rows"


def test_2x_dpi_doubles_pixels_not_layout(issues, renderer):
    fig1 = breakdown_data.build(issues, FigureSpec(width_px=800))
    fig2 = breakdown_data.build(issues, FigureSpec(width_px=800, scale=2.0))
    w1, h1, *_ = png_stats(renderer.render(fig1))
    w2, h2, *_ = png_stats(renderer.render(fig2))
    assert (w2, h2) == (2 * w1, 2 * h1)


def test_note_page_for_missing_data(issues, renderer):
    png = renderer.render(NoteFigure(header(issues, "memory", "none"), FigureSpec(width_px=900), "No memory events"))
    w, h, colours, _ = png_stats(png)
    assert w == 900 and colours > 2


def test_render_from_a_worker_thread_is_painted_on_the_gui_thread(issues, renderer, qtbot):
    fig = breakdown_data.build(issues, FigureSpec(width_px=700))
    out: dict = {}

    def work():
        out["png"] = renderer.render(fig)
        out["thread"] = threading.current_thread()

    t = threading.Thread(target=work)
    t.start()
    qtbot.waitUntil(lambda: "png" in out, timeout=20_000)  # GUI thread keeps spinning its event loop
    t.join()
    assert out["thread"] is not threading.main_thread()
    assert png_stats(out["png"])[0] == 700
    assert QtCore.QThread.currentThread() is renderer._painter.thread()

"""docs/make_screenshots.py renders the key screens offscreen in both themes: every file exists and
shows something (pixel variance), and the plots use the theme's background."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtGui

REPO = Path(__file__).resolve().parents[2]
SMALL = "start,sample,finding,snapshot,multi_rank,live,live_no_gpu"


def _pixels(path: Path) -> np.ndarray:
    img = QtGui.QImage(str(path)).convertToFormat(QtGui.QImage.Format.Format_RGB32)
    assert not img.isNull(), path
    buf = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return buf[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[:, :, :3].copy()  # own the pixels


def test_screens_render_in_both_themes(qtbot, tmp_path):  # qtbot: a QApplication for QImage
    from helpers import SHARED_TRACES as SHARED
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PTPROF_SHARED_TRACES=str(SHARED))
    env.pop("DISPLAY", None)
    run = subprocess.run([sys.executable, str(REPO / "docs" / "make_screenshots.py"), "--out", str(tmp_path),
                          "--only", SMALL], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    noise = [line for line in run.stderr.splitlines()
             if not line.startswith(("skipped ", "/")) and "screenshot(s) in" not in line]
    assert not noise, noise[:5]  # issue 31: ~80 Qt "propagateSizeHints" warnings
    shots = sorted(tmp_path.glob("*.png"))
    names = {p.name for p in shots}
    expected = {f"{s}.{t}.png" for s in ("start", "sample", "finding", "live", "live_no_gpu") for t in ("light", "dark")}
    assert expected <= names, run.stderr[-2000:]
    for p in shots:
        px = _pixels(p)
        assert px.std() > 8, f"{p.name} is blank"
    light, dark = _pixels(tmp_path / "live.light.png"), _pixels(tmp_path / "live.dark.png")
    assert light.mean() > dark.mean() + 40  # the light theme's plots are not black
    if (SHARED / "gpu_memory.snapshot.pickle").exists():
        assert {"snapshot.light.png", "snapshot.dark.png"} <= names


def test_the_full_set_is_at_least_16_screenshots():
    """Both themes of every screen (the test above renders a subset: the full set takes ~2 min)."""
    sys.path.insert(0, str(REPO / "docs"))
    try:
        from screens import SCREENS
    finally:
        sys.path.remove(str(REPO / "docs"))
    assert len(SCREENS) * 2 >= 16
    for name in ("sample", "gpt_big", "compiled", "finding", "kernels", "snapshot", "multi_rank", "live",
                 "live_no_gpu", "compare", "export"):
        assert name in SCREENS


@pytest.mark.parametrize("dark", [False, True])
def test_plots_use_the_theme_background(qtbot, dark):
    from gui.live.panel import LivePanel
    from gui.memory.panel import MemoryPanel
    from gui.theme import load_theme
    theme = load_theme(dark=dark)
    live, memory = LivePanel(theme=theme), MemoryPanel(theme)
    for w in (live, memory):
        qtbot.addWidget(w)
    assert live.graphs.backgroundBrush().color() == theme.background
    assert memory.backgroundBrush().color() == theme.background
    for p in live.plots():
        assert p.getAxis("left").textPen().color() == theme.text

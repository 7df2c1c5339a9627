"""Screenshots of a many-rank run in the app's window, both themes: the rank summary lane (heat strip of step
times per rank, straggler marked) above the folded ranks, and the strip alone at full size.

    QT_QPA_PLATFORM=offscreen python bench/shots_ranks.py RUN_FOLDER OUT_DIR
Writes ranks_window.<theme>.png and rank_strip.<theme>.png (one process per theme).
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))


def shoot(run: Path, out: Path, theme: str) -> None:
    import pyqtgraph as pg
    from PySide6 import QtWidgets
    from screens import grab, new_window, open_in, quiet_offscreen_noise, settle, wait_analysis

    from gui.theme import apply_scheme
    quiet_offscreen_noise()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    apply_scheme(app, theme)
    pg.setConfigOptions(antialias=False, useOpenGL=False)
    win = new_window()
    view = open_in(win, run)
    wait_analysis(win)  # the straggler finding marks its rank on the strip
    settle(1.0)
    out.mkdir(parents=True, exist_ok=True)
    grab(win, out / f"ranks_window.{theme}.png")
    if view is not None and view.rank_strip is not None:
        grab(view.rank_strip, out / f"rank_strip.{theme}.png")
    win.close()


if __name__ == "__main__":
    run, out = Path(sys.argv[1]), Path(sys.argv[2])
    if len(sys.argv) > 3:
        shoot(run, out, sys.argv[3])
    else:
        for theme in ("light", "dark"):
            subprocess.run([sys.executable, __file__, str(run), str(out), theme], check=True)

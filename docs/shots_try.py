"""Screenshots of Try it (issue 29) in both themes: `python docs/shots_try.py --out DIR [--theme light,dark]`.

The H100 bundles of tests/data/device/try: the mlp run's Issues panel with the single_tensor_optimizer finding
selected (Try it button, Try column, the Measured line from its tried.json), and the Compare of its runs with
the verdict banner Try it puts on top (from the stored measurement). One process per theme."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "docs"))
DATA = REPO / "tests" / "data" / "device" / "try"


def render(out: Path, theme: str) -> list[Path]:
    import pyqtgraph as pg
    from PySide6 import QtWidgets
    from screens import grab, new_window, open_in, settle, wait_analysis, wait_until

    from gui.theme import apply_scheme
    from gui.tryfix.controller import verdict_html
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    apply_scheme(app, theme)
    pg.setConfigOptions(antialias=False, useOpenGL=False)
    win = new_window()
    open_in(win, DATA / "mlp")
    wait_analysis(win)
    issues = win.integrations.issues
    for r in range(issues.proxy.rowCount()):
        if issues.model.finding(issues.proxy.mapToSource(issues.proxy.index(r, 0)).row()).rule == "single_tensor_optimizer":
            issues.select_row(r)
    settle(0.5)
    written = [grab(win, out / f"try_issues.{theme}.png")]
    entry = json.loads((DATA / "mlp" / "tried.json").read_text())["fixes"]["foreach"]
    entry = dict(entry, fix="foreach", after=entry["after"][0] if entry.get("after") else None)
    box = []
    win.integrations.compare.sig_compare_shown.connect(box.append)
    win.compare_paths(str(DATA / "mlp"), str(DATA / "mlp.tries" / "foreach"))
    wait_until(lambda: box, 300)
    box[0].set_verdict(verdict_html(entry))
    settle(0.5)
    written.append(grab(win, out / f"try_compare.{theme}.png"))
    return written


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--theme", default="light,dark")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    themes = [t for t in a.theme.split(",") if t]
    if len(themes) > 1:
        return max(subprocess.call([sys.executable, __file__, "--out", str(out), "--theme", t]) for t in themes)
    for p in render(out, themes[0]):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

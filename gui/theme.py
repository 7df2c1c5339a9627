"""Colours and layout constants from resources/theme.toml, picked for the current light/dark scheme."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from core.compat import tomllib

THEME_PATH = Path(__file__).resolve().parents[1] / "resources" / "theme.toml"
SHADES = 3  # colour variants per kind (by name id) so neighbouring slices stay distinguishable


@dataclass(frozen=True, slots=True)
class Theme:
    dark: bool
    background: QtGui.QColor
    row_alt: QtGui.QColor
    text: QtGui.QColor
    text_on_slice: QtGui.QColor
    label_bg: QtGui.QColor
    grid: QtGui.QColor
    step_band: QtGui.QColor
    selection: QtGui.QColor
    highlight: QtGui.QColor
    flow: QtGui.QColor
    kind_colors: tuple[QtGui.QColor, ...]  # indexed by Kind value
    row_px: int
    label_px: int
    min_text_px: int
    max_texts: int
    hover_rate_hz: int
    depth_cap: int = 4  # CPU-thread levels shown before a deep track is unfolded

    def slice_brushes(self) -> list[QtGui.QBrush]:
        """Brushes indexed by kind * SHADES + shade."""
        out = []
        for c in self.kind_colors:
            out.extend(QtGui.QBrush(x) for x in (c, c.lighter(112), c.darker(112)))
        return out

    def kind_color(self, kind: int) -> QtGui.QColor:
        return self.kind_colors[kind] if 0 <= kind < len(self.kind_colors) else self.kind_colors[0]


def is_dark() -> bool:
    app = QtWidgets.QApplication.instance()
    if app is None:
        return False
    hints = app.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    if scheme is not None and scheme() == QtCore.Qt.ColorScheme.Dark:
        return True
    return app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128


@lru_cache(maxsize=4)
def _raw() -> dict:
    with open(THEME_PATH, "rb") as fh:
        return tomllib.load(fh)


def load_theme(dark: bool | None = None) -> Theme:
    raw = _raw()
    dark = is_dark() if dark is None else dark
    pal = raw["dark" if dark else "light"]
    lay = raw["layout"]
    kinds = pal["kind"]
    from core.trace.model import Kind  # numpy: not before the window's first paint (gui/app.py)
    colors = tuple(QtGui.QColor(kinds.get(k.name, kinds["OTHER"])) for k in Kind)
    c = {k: QtGui.QColor(v) for k, v in pal.items() if isinstance(v, str)}
    return Theme(dark=dark, kind_colors=colors, row_px=lay["row_px"], label_px=lay["label_px"],
                 min_text_px=lay["min_text_px"], max_texts=lay["max_texts"],
                 hover_rate_hz=lay["hover_rate_hz"], depth_cap=lay.get("depth_cap", 4), **c)


ISSUES_PATH = THEME_PATH.with_name("issues.toml")


@lru_cache(maxsize=1)
def _issues_raw() -> dict:
    with open(ISSUES_PATH, "rb") as fh:
        return tomllib.load(fh)


def category_color(theme: Theme, category: str, index: int = 0) -> QtGui.QColor:
    """Colour of a breakdown category (`compute_ns`, `comm_ns`, ...) in this theme: theme.toml
    [<scheme>.breakdown], else issues.toml [breakdown], else a kind colour by position, so a
    category added later slots in with a colour of its own."""
    own = _raw()["dark" if theme.dark else "light"].get("breakdown", {})
    if category in own:
        return QtGui.QColor(own[category])
    shared = _issues_raw().get("breakdown", {})
    if category in shared:
        return QtGui.QColor(shared[category])
    return QtGui.QColor(theme.kind_colors[(index + 1) % len(theme.kind_colors)])


def style_plot(plot, theme: Theme) -> None:
    """A pyqtgraph PlotWidget / PlotItem in the theme's colours (background, axes, text)."""
    import pyqtgraph as pg
    if isinstance(plot, pg.PlotWidget):
        plot.setBackground(theme.background)
        item = plot.getPlotItem()
    else:
        item = plot
    for name in ("left", "bottom", "right", "top"):
        ax = item.getAxis(name)
        ax.setPen(theme.grid)
        ax.setTextPen(theme.text)


def dark_palette() -> QtGui.QPalette:
    """The dark theme's Fusion palette."""
    pal = QtGui.QPalette()
    R = QtGui.QPalette.ColorRole
    for role, color in ((R.Window, "#2b2d31"), (R.WindowText, "#e6e6e6"), (R.Base, "#1e1f22"),
                        (R.AlternateBase, "#26282c"), (R.Text, "#e6e6e6"), (R.Button, "#33363b"),
                        (R.ButtonText, "#e6e6e6"), (R.Highlight, "#3d6bd6"), (R.HighlightedText, "#ffffff"),
                        (R.ToolTipBase, "#33363b"), (R.ToolTipText, "#e6e6e6"), (R.Link, "#7fb0ff"),
                        (R.PlaceholderText, "#8d939a")):
        pal.setColor(role, QtGui.QColor(color))
    # disabled widgets must look disabled (a greyed-out Stop button read as clickable)
    for role in (R.WindowText, R.Text, R.ButtonText):
        pal.setColor(QtGui.QPalette.ColorGroup.Disabled, role, QtGui.QColor("#7a7f87"))
    pal.setColor(QtGui.QPalette.ColorGroup.Disabled, R.Button, QtGui.QColor("#2e3035"))
    return pal


def apply_scheme(app: QtWidgets.QApplication, scheme: str) -> None:
    """'dark' / 'light' force a Fusion palette; 'auto' keeps the platform's (followed by load_theme)."""
    if scheme == "auto":
        return
    app.setStyle("Fusion")
    hints = app.styleHints()
    if hasattr(hints, "setColorScheme"):
        hints.setColorScheme(QtCore.Qt.ColorScheme.Dark if scheme == "dark" else QtCore.Qt.ColorScheme.Light)
    if scheme == "dark":
        app.setPalette(dark_palette())
    else:
        app.setPalette(app.style().standardPalette())

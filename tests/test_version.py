"""`ptprof --version` and Help > About name the version (pyproject's) and link the documentation."""
from __future__ import annotations

import subprocess
import sys

from helpers import REPO

from core.compat import tomllib
from core.version import docs_url, version

PYPROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_ptprof_version_prints_the_version():
    out = subprocess.run([sys.executable, "-m", "core.cli", "--version"], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"ptprof {PYPROJECT_VERSION}"
    assert version() == PYPROJECT_VERSION


def test_help_about_names_the_version_and_the_docs(qtbot):
    from gui.main_window import MainWindow
    win = MainWindow()
    qtbot.addWidget(win)
    assert win.action_about in win.help_menu.actions()
    html = win.about_html()
    assert f"ptprof-gui {PYPROJECT_VERSION}" in html and f'href="{docs_url()}"' in html
    assert docs_url().startswith(("file://", "https://")) and "README" in docs_url()

"""The README's two set-up commands: CI runs the test command verbatim, the run command installs what
the app's Qt check (gui/qt_preflight.py) asks for."""
from __future__ import annotations

import re

from helpers import REPO

from gui import qt_preflight


def _setup_commands() -> list[str]:
    section = (REPO / "README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^    (\S.*)$", section, re.M)


def test_readme_has_the_run_and_the_test_command():
    run, test = _setup_commands()
    assert run.endswith("&& pip install -e . && python main.py") and "apt-get install -y" in run
    assert test.endswith('&& pip install -q torch==2.13.0 -e ".[test,hta]" && python -m pytest -q -n 2')
    assert "traceinsight" not in run  # the app runs without HTA (an optional extra); the tests need it
    assert run.startswith("$(command -v sudo) apt-get update") and test.startswith("$(command -v sudo) apt-get update")


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text()
    block = ci.split("# --- the README's test command, verbatim ---\n", 1)[1].splitlines()[0]
    assert block == _setup_commands()[1]


def test_run_command_installs_the_packages_the_app_asks_for():
    run = _setup_commands()[0]
    packages = set(run.split("apt-get install -y", 1)[1].split("&&", 1)[0].split())
    assert packages <= set(qt_preflight.PACKAGES.values())
    # the three a fresh Debian lacked (issue 13), the GL/EGL/fontconfig ones QtGui links
    assert {"libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libegl1", "libgl1", "libfontconfig1"} <= packages

"""gui.qt_preflight: one line and exit 2 instead of Qt's abort, when there is no display or the platform
plugin's system libraries are missing (a fresh Debian without libxcb-cursor0 / -icccm4 / -keysyms1)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from helpers import REPO

from gui import qt_preflight

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the checks run on Linux only")


def _env_without_display():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.pop("XDG_SESSION_TYPE", None)
    return env


def test_no_display_is_one_line_exit_2_before_qt_loads():
    code = ("import sys\nfrom gui.app import main\nrc = main([])\n"
            "assert 'PySide6.QtWidgets' not in sys.modules, 'Qt loaded before the check'\nsys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_env_without_display(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0]
    assert "ptprof report" in lines[0] and "QT_QPA_PLATFORM=offscreen" in lines[0]
    assert "Traceback" not in proc.stderr and "Aborted" not in proc.stderr


def test_main_py_without_display_says_so():
    proc = subprocess.run([sys.executable, "main.py"], cwd=REPO, env=_env_without_display(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no display" in proc.stderr


def test_missing_xcb_libraries_name_the_packages(monkeypatch, capsys):
    faked = ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    monkeypatch.setattr(qt_preflight, "missing_libraries", lambda name: faked if name == "xcb" else [])
    line = qt_preflight.problem({"DISPLAY": ":0"})
    assert line.startswith("ptprof-gui: Qt's xcb platform plugin cannot load") and "\n" not in line
    assert all(so in line for so in faked)
    assert "apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in line
    # the app prints it and stops before Qt
    from gui import app
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("QT_QPA_PLATFORM")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    assert app.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "libxcb-cursor.so.0" in err


def test_unknown_library_is_named_without_a_package(monkeypatch):
    monkeypatch.setattr(qt_preflight, "missing_libraries", lambda name: ["libfoo-bar.so.7", "libEGL.so.1"])
    line = qt_preflight.problem({"DISPLAY": ":0"})
    assert "apt-get install -y libegl1" in line and "the packages providing libfoo-bar.so.7" in line


def test_offscreen_and_a_working_fallback_do_not_fire(monkeypatch):
    assert qt_preflight.candidate_platforms({"QT_QPA_PLATFORM": "offscreen"}) == ["offscreen"]
    assert qt_preflight.problem({"QT_QPA_PLATFORM": "offscreen"}) is None  # CI: offscreen, no xcb libraries
    env = {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}
    assert qt_preflight.candidate_platforms(env) == ["wayland", "xcb"]
    monkeypatch.setattr(qt_preflight, "missing_libraries", lambda name: ["libwayland-egl.so.1"] if name == "wayland" else [])
    assert qt_preflight.problem(env) is None  # Qt falls back to xcb
    assert "wayland platform plugin" in qt_preflight.problem({"WAYLAND_DISPLAY": "wayland-0"})
    assert "no display" in qt_preflight.problem({"QT_QPA_PLATFORM": "xcb"})
    assert "no display" in qt_preflight.problem({"QT_QPA_PLATFORM": "wayland;xcb"})


def test_installed_pyside6_plugins_load_here():
    """On this machine (the test VM and CI install the libraries) nothing is reported missing."""
    assert qt_preflight.plugin_path("offscreen") is not None
    assert qt_preflight.missing_libraries("offscreen") == []
    assert qt_preflight.plugin_path("no-such-platform") is None
    assert qt_preflight.missing_libraries("no-such-platform") == []


@pytest.mark.skipif(shutil.which("ldd") is None or shutil.which("cc") is None, reason="needs ldd and a C compiler")
def test_ldd_finds_a_library_that_is_gone(tmp_path, monkeypatch):
    """A real plugin-like .so linked against a library that was then removed: ldd says "not found"."""
    stub = tmp_path / "libptprofgone.so.3"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stub), "-Wl,-soname,libptprofgone.so.3", "-x", "c", "-"],
                   input="int gone(void){return 1;}\n", text=True, check=True, timeout=60)
    plugin = tmp_path / "libqfake.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(plugin), "-x", "c", "-", "-x", "none", str(stub)],
                   input="int gone(void); int use(void){return gone();}\n", text=True, check=True, timeout=60)
    stub.unlink()
    monkeypatch.setattr(qt_preflight, "plugin_path", lambda name: plugin)
    assert qt_preflight.missing_libraries("xcb") == ["libptprofgone.so.3"]
    line = qt_preflight.problem({"DISPLAY": ":0"})
    assert "missing libptprofgone.so.3" in line and "packages providing libptprofgone.so.3" in line


def test_without_ldd_the_libraries_are_probed_with_ctypes(monkeypatch):
    monkeypatch.setattr(qt_preflight.shutil, "which", lambda name: None)
    monkeypatch.setattr(qt_preflight, "XCB_SONAMES", ("libc.so.6", "libptprof-not-there.so.9"))
    assert qt_preflight.missing_libraries("xcb") == ["libptprof-not-there.so.9"]

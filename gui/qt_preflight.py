"""Before QApplication exists: can Qt start here? One line instead of Qt's abort.

Qt aborts the process (SIGABRT, "Could not load the Qt platform plugin "xcb" ... Aborted") when the
platform plugin cannot be loaded, e.g. on a fresh Debian where libxcb-cursor0 / libxcb-icccm4 /
libxcb-keysyms1 are not installed, and when there is no display at all. `problem()` finds both
cases first - without importing Qt - and returns the line to print (the app then exits 2).

How: the platform Qt will pick is worked out from QT_QPA_PLATFORM / DISPLAY / WAYLAND_DISPLAY the way
QGuiApplication does on Linux; its plugin (PySide6/Qt/plugins/platforms/libq<name>.so) is run through
`ldd`, and every "not found" library is named together with the Debian/Ubuntu package that ships it.
Without `ldd` the libraries the plugin is known to need are probed with ctypes instead.
Only Linux is checked; elsewhere Qt's own platform plugins have no such system dependencies.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# soname -> Debian/Ubuntu package that ships it (what Qt 6.9-6.11's xcb, wayland and offscreen plugins
# and libQt6Gui link on x86_64/arm64; `dpkg -S` on Debian 12).
PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",  # Qt >= 6.5
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libGLX.so.0": "libglx0",
    "libOpenGL.so.0": "libopengl0",
    "libGLdispatch.so.0": "libglvnd0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}
# What the xcb plugin needs beyond libQt6* (the ctypes fallback when there is no `ldd`).
XCB_SONAMES = ("libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-image.so.0",
               "libxcb-render-util.so.0", "libxcb-randr.so.0", "libxcb-shape.so.0", "libxcb-sync.so.1",
               "libxcb-xfixes.so.0", "libxcb-xkb.so.1", "libX11-xcb.so.1", "libxkbcommon-x11.so.0",
               "libxkbcommon.so.0", "libEGL.so.1", "libGL.so.1", "libfontconfig.so.1", "libglib-2.0.so.0",
               "libdbus-1.so.3")
GUI_SONAMES = ("libEGL.so.1", "libGL.so.1", "libxkbcommon.so.0", "libfontconfig.so.1", "libglib-2.0.so.0")
NEEDS_DISPLAY = {"xcb": "DISPLAY", "wayland": "WAYLAND_DISPLAY", "wayland-egl": "WAYLAND_DISPLAY"}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.M)
_UNLOADABLE = re.compile(r"error while loading shared libraries: (\S+?):")  # found but damaged / wrong arch


def problem(env: dict[str, str] | None = None) -> str | None:
    """The one line to print when Qt cannot start here, else None."""
    if not sys.platform.startswith("linux"):
        return None
    env = os.environ if env is None else env
    platforms = candidate_platforms(env)
    if not platforms:
        return ("ptprof-gui: no display (DISPLAY and WAYLAND_DISPLAY are unset): start it from a desktop session "
                "(or ssh -X), write a headless report with `ptprof report PATH --out DIR`, "
                "or run it offscreen with QT_QPA_PLATFORM=offscreen")
    first_missing: tuple[str, list[str]] | None = None
    for name in platforms:
        missing = missing_libraries(name)
        if not missing:
            return None  # Qt falls through the list to this one
        if first_missing is None:
            first_missing = (name, missing)
    name, missing = first_missing
    return (f"ptprof-gui: Qt's {name} platform plugin cannot load, missing {', '.join(missing)}; "
            f"install them with: {install_command(missing)}")


def candidate_platforms(env) -> list[str]:
    """Platform plugins Qt would try, in order ([] = none can reach a display)."""
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if requested:
        names = [part.split(":", 1)[0].strip() for part in requested.split(";")]
    elif env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        names = ["wayland", "xcb"]
    else:
        names = ["xcb"]
    return [n for n in names if n and (n not in NEEDS_DISPLAY or env.get(NEEDS_DISPLAY[n]))]


def plugin_path(name: str) -> Path | None:
    """PySide6/Qt/plugins/platforms/libq<name>.so of the installed PySide6 (found without importing it)."""
    spec = importlib.util.find_spec("PySide6")
    for root in (spec.submodule_search_locations or []) if spec else []:
        p = Path(root) / "Qt" / "plugins" / "platforms" / f"libq{name}.so"
        if p.exists():
            return p
    return None


def missing_libraries(name: str) -> list[str]:
    """Sonames the platform plugin `name` needs that the dynamic loader cannot find ([] when it loads,
    or when it cannot be checked: a system Qt, an unknown plugin)."""
    plugin = plugin_path(name)
    if plugin is None:
        return []
    ldd = shutil.which("ldd")
    if ldd:
        try:
            proc = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            proc = None
        if proc is not None:
            missing = set(_NOT_FOUND.findall(proc.stdout))
            missing |= {Path(lib).name for lib in _UNLOADABLE.findall(proc.stderr)}
            if missing or proc.returncode == 0:
                return sorted(missing)
    return probe_sonames(XCB_SONAMES if name == "xcb" else GUI_SONAMES)


def probe_sonames(sonames) -> list[str]:
    """The sonames ctypes cannot load."""
    missing = []
    for soname in sonames:
        try:
            ctypes.CDLL(soname)
        except OSError:
            missing.append(soname)
    return missing


def install_command(missing: list[str]) -> str:
    packages = sorted({PACKAGES.get(s, "") for s in missing} - {""})
    unknown = [s for s in missing if s not in PACKAGES]
    sudo = "" if hasattr(os, "geteuid") and os.geteuid() == 0 else "sudo "
    cmd = f"{sudo}apt-get install -y {' '.join(packages)}" if packages else ""
    if unknown:
        cmd = (cmd + " and " if cmd else "") + f"the packages providing {', '.join(unknown)}"
    return cmd

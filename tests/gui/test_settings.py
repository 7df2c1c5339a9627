"""One settings accessor for the whole app (gui/settings.py): it honours PTPROF_SETTINGS_DIR, lists are read
typed (a one-item list comes back from the file as a plain string), and the suite never touches the user's
own config file."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from PySide6 import QtCore

from gui import settings as settings_mod
from gui.run.dialog import RunDialog

REPO = Path(__file__).resolve().parents[2]


def _native_config() -> Path:
    return Path(QtCore.QSettings(settings_mod.ORG, settings_mod.APP).fileName())


def _stat(path: Path):
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns
    except OSError:
        return None


def test_interpreter_list_survives_a_second_run(qtbot, tmp_path):
    """Run dialog twice: the remembered one-item interpreter list must not turn into characters."""
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    other = str(tmp_path / "venv" / "bin" / "python")
    native = _stat(_native_config())
    first = RunDialog(script=str(script))
    qtbot.addWidget(first)
    first.python.setEditText(other)
    first.save_settings(first.config())
    second = RunDialog(script=str(script))  # reads the list back from the ini file: a plain str for one item
    qtbot.addWidget(second)
    items = [second.python.itemText(i) for i in range(second.python.count())]
    assert other in items and sys.executable in items
    assert all(len(i) > 1 for i in items), items
    assert Path(os.environ["PTPROF_SETTINGS_DIR"], "ptprof-gui.ini").is_file()
    assert _stat(_native_config()) == native  # the user's own config file was not touched


def test_typed_reads():
    s = settings_mod.settings()
    s.setValue("a", "/usr/bin/python3")
    s.setValue("b", ["x", "", 3, "y"])
    s.setValue("c", 12)
    s.sync()
    assert settings_mod.string_list("a") == ["/usr/bin/python3"]
    assert settings_mod.string_list("b") == ["x", "y"]
    assert settings_mod.string_list("c") == [] and settings_mod.string_list("missing") == []
    assert settings_mod.string("c", "d") == "d" and settings_mod.string("a") == "/usr/bin/python3"


def test_every_qsettings_is_made_by_the_accessor():
    offenders = []
    for path in (REPO / "gui").rglob("*.py"):
        if path.name == "settings.py" and path.parent.name == "gui":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"QSettings\(", line) and not line.lstrip().startswith("#"):
                offenders.append(f"{path.relative_to(REPO)}:{n}")
    assert not offenders, f"make QSettings through gui.settings.settings(): {offenders}"

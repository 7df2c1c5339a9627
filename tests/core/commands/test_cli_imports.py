"""`ptprof` imports only what the command it runs needs (a warm `ptprof info` is mostly start-up)."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO, SAMPLE

from core.cli import COMMANDS, build_parser

_PROBE = """
import json, sys
from core.cli import main
rc = main(sys.argv[1:])
mods = sorted(m for m in sys.modules if m.startswith(("core.", "PySide6")))
sys.stdout.flush()
print("\\n" + json.dumps({"rc": rc, "modules": mods}))
"""


def _modules_after(*argv: str, tmp_path) -> tuple[int, set[str]]:
    env = {"PATH": "/usr/bin:/bin", "PTPROF_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc["rc"], set(doc["modules"])


def test_info_imports_neither_the_other_commands_nor_the_snapshot_reader(tmp_path):
    rc, mods = _modules_after("info", str(SAMPLE), tmp_path=tmp_path)
    assert rc == 0 and "core.commands.info" in mods
    others = {module for name, (module, _) in COMMANDS.items() if name != "info"}
    assert not mods & others, mods & others
    assert "core.snapshot.detect" in mods  # the snapshot check ran...
    assert not {"core.snapshot.load", "core.snapshot.model", "core.snapshot.unpickle"} & mods  # ...cheaply
    assert not any(m.startswith("PySide6") for m in mods)


def test_every_command_still_has_its_arguments_and_help_lists_all():
    full = build_parser()
    for name in COMMANDS:
        lazy = build_parser([name, "--help"])
        sub_full = full._subparsers._group_actions[0].choices[name]
        sub_lazy = lazy._subparsers._group_actions[0].choices[name]
        assert [a.dest for a in sub_lazy._actions] == [a.dest for a in sub_full._actions], name
        assert len(sub_full._actions) > 1, name  # more than --help: its module added them
    top = build_parser([]).format_help()
    assert all(name in top for name in COMMANDS)


def test_options_before_the_command_and_unknown_commands(tmp_path):
    rc, mods = _modules_after("-v", "info", str(SAMPLE), "--json", tmp_path=tmp_path)
    assert rc == 0 and "core.commands.analyze" not in mods
    proc = subprocess.run([sys.executable, "-m", "core.cli", "nosuch"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "invalid choice" in proc.stderr

"""Malloc settings of a load (core/trace/alloc.py): one shared arena only where no UI thread runs."""
from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def test_single_arena_is_off_with_malloc_tuning_off(monkeypatch):
    from core.trace import alloc
    monkeypatch.setenv("PTPROF_MALLOC_TUNE", "0")
    assert alloc.single_arena() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc mallopt")
def test_single_arena_takes_effect_in_a_fresh_process():
    code = "from core.trace.alloc import single_arena; print(single_arena())"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


def test_only_processes_without_a_ui_share_one_arena():
    """The window must not call it: its UI thread would wait on the arena's lock while a load thread
    frees or trims gigabytes (200-660 ms UI gaps measured at the end of a 10 GB load)."""
    callers = sorted(str(p.relative_to(REPO)) for root in ("core", "gui") for p in (REPO / root).rglob("*.py")
                     if re.search(r"\bsingle_arena\(\)", p.read_text(encoding="utf-8"))
                     and p.name != "alloc.py")
    # core/ranks/executor.py: the process pool's worker initializer (a rank-mapping process, never the window)
    assert callers == ["core/cli.py", "core/ranks/executor.py", "gui/load_process.py"]
    src = (REPO / "core" / "ranks" / "executor.py").read_text(encoding="utf-8")
    init = src[src.index("def _worker_init("):src.index("\nclass ", src.index("def _worker_init("))]
    assert "single_arena()" in init and src.count("single_arena()") == 1
    src = (REPO / "gui" / "load_process.py").read_text(encoding="utf-8")
    child = src[src.index("def _child("):src.index("\ndef ", src.index("def _child("))]
    assert "single_arena()" in child  # in the loader child, not in the window's code

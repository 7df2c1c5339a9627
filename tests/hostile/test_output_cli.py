"""Every hostile output place and run-time input of gen_output.py through the real CLI (issue 37): one clear
line or success, never a traceback; what sat at the output path, and every user file behind a link, comes
out unchanged; nothing printed or written holds a raw ESC / C0 / C1 / bidi character."""
from __future__ import annotations

import json
import os
import threading

import pytest
from helpers import no_torch_skip

from core.terminal import printable
from hostile import gen_output as g
from hostile.gen_store import run_cli

pytestmark = pytest.mark.timeout(600)


def _raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if printable(c) != c})


def _check(case: g.OutCase, before: dict, proc) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in case.exits, (proc.returncode, proc.stderr[-2000:])
    if proc.returncode == 2:
        assert proc.stderr.count("\n") == 1, proc.stderr
    for path, snap in before.items():
        assert g.snapshot(path) == snap, f"{path.name} was changed"
    assert not _raw_controls(proc.stdout) and not _raw_controls(proc.stderr), _raw_controls(proc.stdout + proc.stderr)
    for path in case.written:
        text = path.read_text(encoding="utf-8")
        assert text and not _raw_controls(text.replace("\r\n", "\n")), (path.name, _raw_controls(text))


@pytest.mark.parametrize("name", sorted(g.OUTPUT_CASES))
def test_hostile_output_place(name, tmp_path):
    case = g.OUTPUT_CASES[name](tmp_path)
    before = {p: g.snapshot(p) for p in case.protected}
    got: list[bytes] = []
    reader = None
    if case.fifo is not None:
        reader = threading.Thread(target=lambda: got.append(case.fifo.read_bytes()), daemon=True)
        reader.start()
    try:
        proc = run_cli(case.args)
    finally:
        if reader is not None and reader.is_alive():  # release a reader the command never fed
            os.close(os.open(case.fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(30)
    _check(case, before, proc)
    if case.fifo is not None:
        assert got and got[0].startswith(b"rule,severity"), got
    if "stdout" in name:
        assert proc.stdout.startswith("rule,severity"), proc.stdout[:200]


@pytest.mark.needs_torch
@no_torch_skip
@pytest.mark.parametrize("name", sorted(g.RECORD_CASES))
def test_hostile_record(name, tmp_path):
    case = g.RECORD_CASES[name](tmp_path)
    before = {p: g.snapshot(p) for p in case.protected}
    proc = run_cli(case.args, real=True, timeout=300)
    _check(case, before, proc)
    run = json.loads(case.written[0].read_text())
    assert run["traces"] == ["traces/rank0.cycle1.pt.trace.json.gz"], run
    if name == "record_forged_events":  # the forged "done" / cycle / end were not believed
        assert run["stop_reason"] == "window_done" and run["cycles"] == 1 and run["steps"] >= 4, run
        assert run["forged_event_lines"] >= 4 and "owned" not in json.dumps(run["notices"])

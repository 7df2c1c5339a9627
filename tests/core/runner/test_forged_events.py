"""Issue 37: the training script can append to its bundle's events.jsonl. The launcher acts only on lines
the child signed with the run's key (core/runner/auth.py): a forged `phase: done` / `cycle` no longer stops a
--stop-after-window run before its real window, a copied authentic line is a replay, the key is nowhere in
the script's reach (environment, fds), and text stored in run.json is escaped."""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from helpers import finish
from runner_scripts import TRAIN

from core.gpu.backend import NoGpu
from core.runner.auth import RunKey
from core.runner.bundle import read_json
from core.runner.config import RunConfig, Schedule, validate
from core.runner.protocol import EventWriter, read_events
from core.runner.session import RunSession

ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m bidi\u202eevil \x9b"
FORGER = f'''
import json, os
_path = os.path.join(os.environ["PTPROF_BUNDLE"], "events.jsonl")
print("key in env:", [k for k in os.environ if "KEY" in k and k.startswith("PTPROF")])
_open = []
for fd in range(3, 64):
    try:
        _open.append(os.readlink(f"/proc/self/fd/{{fd}}"))
    except OSError:
        pass
print("open fds:", _open)
_real = [line for line in open(_path) if '"start"' in line]
with open(_path, "a") as fh:
    for ev in [{{"type": "phase", "phase": "done", "step": 1, "rank": 0, "source": "optimizer"}},
               {{"type": "cycle", "cycle": 1, "path": "traces/x", "bytes": 1, "step": 1, "rank": 0}},
               {{"type": "notice", "code": "x", "message": {ESC!r}, "rank": 0}},
               {{"type": "end", "exit_code": 0, "rank": 0, "mac": "0" * 32, "seq": "1.99"}}]:
        fh.write(json.dumps(ev) + "\\n")
    fh.write(_real[0])  # a copy of the child's own signed start line: a replay
'''


def test_forged_events_are_not_believed(tmp_path):
    script = tmp_path / "forger.py"
    script.write_text(textwrap.dedent(FORGER) + textwrap.dedent(TRAIN).replace(
        "    loss.backward()", f"    loss.backward()\n    if i == 1:\n        print({ESC!r})"))
    cfg = validate(RunConfig(script=str(script), args=("-1",), schedule=Schedule(1, 1, 2, 1),
                             out_dir=str(tmp_path / "bundle"), nvml_hz=5, stop_after_window=True))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    finish(s, timeout_s=180)
    run = read_json(s.bundle.run_json)
    out = s.bundle.stdout_log.read_text()
    assert "key in env: []" in out, out
    assert s.stopped_after_window and run["stop_reason"] == "window_done"
    assert run["cycles"] == 1 and run["traces"] == ["traces/rank0.cycle1.pt.trace.json.gz"], run
    assert run["steps"] >= 4  # wait 1 + warmup 1 + active 2: the real window, not a forged "done" at step 0
    assert run["forged_event_lines"] >= 5 and any("not written by ptprof" in n for n in run["notices"])
    assert "owned" not in json.dumps(run["notices"])  # the forged notice never reached run.json
    text = s.bundle.run_json.read_text()
    assert "\x1b" not in text and "\\u001b" not in text and "\u202e" not in text and "\\u202e" not in text
    # the only events the session folded are the child's own, in order
    assert s.state.cycles == 1


def test_the_child_signs_and_the_launcher_checks(tmp_path):
    key = RunKey()
    from core.runner import protocol
    path = tmp_path / "e.jsonl"
    old = protocol._key
    protocol._key = key.key
    try:
        EventWriter(str(path)).emit("notice", code="n", message="hi \x1b[2J")
    finally:
        protocol._key = old
    line = path.read_bytes().rstrip(b"\n")
    assert key.check_line(line) and not RunKey().check_line(line)  # another run's key
    event = json.loads(line)
    assert key.fresh(event) and not key.fresh(event)  # the same line twice: a replay
    tampered = line.replace(b"hi", b"ho")
    assert not key.check_line(tampered)
    assert not key.check_line(b'{"type":"notice"}') and not key.check_line(b"")
    assert [e["type"] for e in read_events(str(path))] == ["notice"]  # readers without the key still read it


def test_the_key_reaches_the_child_through_a_pipe_not_the_environment():
    key = RunKey()
    env, fds = key.child_env(torchrun=False)
    try:
        assert "PTPROF_RUN_KEY" not in env and fds and env["PTPROF_KEY_FD"] == str(fds[0])
        assert os.read(fds[0], 100) == key.key.hex().encode()
    finally:
        key.close_child_end()
    with pytest.raises(OSError):
        os.fstat(fds[0])


def test_text_the_script_controls_is_stored_escaped(tmp_path):
    """The child's own events carry the script's text (an exception message, a file name): run.json keeps
    it with ESC / C1 / bidi characters escaped visibly."""
    script = tmp_path / "evil\u202ename.py"
    script.write_text(f"raise RuntimeError({ESC!r})\n")
    cfg = validate(RunConfig(script=str(script), out_dir=str(tmp_path / "bundle"), nvml_hz=5))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    finish(s, timeout_s=180)
    run = read_json(s.bundle.run_json)
    assert run["status"] == "failed" and "\\x1b]0;owned\\x07" in run["exception"], run["exception"]
    assert "\\u202e" in run["exception"] and "\\x9b" in run["exception"]
    from core.terminal import printable
    for field in ("exception", "notices", "environment", "sync_sites", "step_source", "torch_version"):
        text = json.dumps(run.get(field), ensure_ascii=False)
        assert printable(text) == text, field  # decoded, the text holds no raw control or bidi character

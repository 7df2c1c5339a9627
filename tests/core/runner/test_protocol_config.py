"""events.jsonl protocol, RunConfig validation, launch argv (no torch needed)."""
from __future__ import annotations

import sys

import pytest

from core.runner.config import ConfigError, RunConfig, Schedule, validate
from core.runner.launch import CHILD, build_argv, build_env
from core.runner.protocol import EventTail, EventWriter, read_events


def test_tail_returns_only_complete_new_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(str(path), rank=1)
    tail = EventTail(str(path))
    assert tail.poll() == []
    w.emit("start", pid=1)
    w.emit("step", step=1, dur_ns=10)
    got = tail.poll()
    assert [e["type"] for e in got] == ["start", "step"] and got[1]["rank"] == 1 and got[1]["dur_ns"] == 10
    with open(path, "ab") as fh:  # a torn line (writer mid-way) is held back until complete
        fh.write(b'{"type":"step","step":2')
    assert tail.poll() == []
    with open(path, "ab") as fh:
        fh.write(b',"t_ns":5}\nnot json\n')
    assert [e["step"] for e in tail.poll()] == [2]
    w.close()
    assert len(read_events(str(path))) == 3


def test_long_tracebacks_are_capped(tmp_path):
    w = EventWriter(str(tmp_path / "e.jsonl"))
    e = w.emit("exception", message="x", traceback="y" * 100_000)
    assert len(e["traceback"]) < 20_000


def test_validate_messages(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    with pytest.raises(ConfigError, match="script not found"):
        validate(RunConfig(script=str(tmp_path / "nope.py")))
    with pytest.raises(ConfigError, match="interpreter not found"):
        validate(RunConfig(script=str(script), python=str(tmp_path / "bin" / "python")))
    with pytest.raises(ConfigError, match="active must be >= 1"):
        validate(RunConfig(script=str(script), schedule=Schedule(1, 1, 0, 1)))
    with pytest.raises(ConfigError, match="nproc"):
        validate(RunConfig(script=str(script), nproc=0))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not empty"):
        validate(RunConfig(script=str(script), out_dir=str(tmp_path / "full")))
    ok = validate(RunConfig(script=str(script)))
    assert ok.cwd == str(tmp_path) and ok.python == sys.executable


def test_argv_direct_and_torchrun(tmp_path):
    cfg = RunConfig(script="/x/train.py", args=("--lr", "0.1"), python="/venv/bin/python",
                    schedule=Schedule(2, 1, 3, 2), with_stack=True, record_shapes=False)
    argv = build_argv(cfg, tmp_path)
    assert argv[:3] == ["/venv/bin/python", "-u", str(CHILD)]
    assert argv[argv.index("--wait") + 1] == "2" and "--with-stack" in argv and "--no-shapes" in argv
    assert argv[-4:] == ["--", "/x/train.py", "--lr", "0.1"]
    tr = build_argv(cfg.with_(nproc=2), tmp_path)
    assert tr[:7] == ["/venv/bin/python", "-u", "-m", "torch.distributed.run", "--standalone",
                      "--nproc-per-node", "2"]
    assert build_argv(cfg.with_(use_torchrun=True), tmp_path)[3] == "torch.distributed.run"
    env = build_env(cfg.with_(env=(("A", "1"),)), tmp_path, base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "A": "1", "PYTHONUNBUFFERED": "1", "PTPROF_BUNDLE": str(tmp_path),
                   "PTPROF_LAUNCHER_PID": str(__import__("os").getpid())}  # the child stops when we die


def test_an_orphaned_child_escalates_on_its_launchers_graces(tmp_path):
    """The stop plan travels in PTPROF_STOP_PLAN: a child whose launcher died escalates (SIGTERM, then
    SIGKILL) on the graces that launcher would have kept; a missing or malformed plan is the default."""
    import math
    import signal

    from core.runner.guards import ORPHAN_ESCALATION_S, ORPHAN_FLUSH_GRACE_S, orphan_plan
    from core.runner.process import StopPlan
    env = build_env(RunConfig(script="/x/train.py"), tmp_path, base={},
                    plan=StopPlan(sigint_grace_s=2.5, sigterm_grace_s=1, flush_grace_s=30))
    assert env["PTPROF_STOP_PLAN"] == "2.5,1,30"
    assert orphan_plan(env) == (((0.0, signal.SIGINT), (2.5, signal.SIGTERM), (3.5, signal.SIGKILL)), 30.0)
    # the CLI's and the app's default plan is the escalation the child always had
    default = orphan_plan(build_env(RunConfig(script="/x/t.py"), tmp_path, base={}, plan=StopPlan()))
    assert default == (ORPHAN_ESCALATION_S, ORPHAN_FLUSH_GRACE_S)
    for raw in ("", "1,2", "a,b,c", "nan,1,1", "-1,1,1", "1,inf,1", "1,2,3,4"):
        assert orphan_plan({"PTPROF_STOP_PLAN": raw}) == (ORPHAN_ESCALATION_S, ORPHAN_FLUSH_GRACE_S), raw
    assert not math.isnan(orphan_plan({"PTPROF_STOP_PLAN": "0,0,0"})[1])

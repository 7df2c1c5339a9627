"""Every store-side hostile input (gen_store.py) through the real CLI in a child process limited in memory
and time: one clear line (exit 0 with warnings, or exit 2), never a traceback, a hang or a blown limit."""
from __future__ import annotations

import json
import re

import pytest

from hostile import gen_fields, gen_snapshot, gen_store as g

pytestmark = pytest.mark.timeout(600)


def _assert_clean(proc, allowed=(0, 2)):
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in allowed, (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("case", sorted(g.BUNDLE_CASES))
def test_hostile_bundle_analyze(case, tmp_path):
    bundle = g.BUNDLE_CASES[case](tmp_path)
    proc = g.run_cli(["analyze", str(bundle), "--no-cache"])
    _assert_clean(proc, allowed=(0,))  # a bad side file never refuses the traces
    assert "rule failed" not in proc.stdout  # and no rule trips over what it read (the engine would hide it)


@pytest.mark.parametrize("case", ["fifo_run_json", "fifo_events_jsonl", "fifo_nvml_csv", "deep_run_json",
                                  "nvml_huge_field", "run_json_list"])
@pytest.mark.parametrize("command", ["info", "report"])
def test_hostile_bundle_info_and_report(case, command, tmp_path):
    bundle = g.BUNDLE_CASES[case](tmp_path)
    args = [command, str(bundle)] + (["--out", str(tmp_path / "out")] if command == "report" else [])
    _assert_clean(g.run_cli(args), allowed=(0,))


def test_side_file_warning_is_one_line(tmp_path):
    bundle = g.BUNDLE_CASES["deep_run_json"](tmp_path)
    proc = g.run_cli(["info", str(bundle)])
    lines = [ln for ln in proc.stderr.splitlines() if "run.json" in ln]
    assert lines == ["ignoring run.json: JSON nests deeper than 64 levels"], proc.stderr


SNAPSHOT_REASON = {"billion_laughs": None, "shared_references": "100,000 device traces",
                   "memo_index_bomb": "memo index", "put_index_bomb": "memo index", "deep_frames": "nests deeper",
                   "many_devices": "100,000 devices", "gzip_bomb": "gzip inflates past", "evil_global": "refused",
                   "truncated": "truncated", "not_a_pickle": "pickle", "tuple_setting_keys": None,
                   **gen_snapshot.REASON}
SNAPSHOT_WARNING = {"billion_laughs": "not dicts", **gen_snapshot.WARNING}


@pytest.mark.parametrize("case", sorted(g.SNAPSHOT_CASES))
def test_hostile_snapshot_info(case, tmp_path):
    import json
    snap = g.write_snapshot(tmp_path, case)
    want = SNAPSHOT_REASON[case]
    for args in (["info", str(snap)], ["info", str(snap), "--json"]):
        proc = g.run_cli(args)
        _assert_clean(proc, allowed=(0,) if want is None else (2,))
        if want is not None:  # refused by the bound that applies, not by running out of memory
            (line,) = proc.stderr.strip().splitlines()
            assert want in line, line
        elif "--json" in args:
            info = json.loads(proc.stdout)
            if case == "tuple_setting_keys":
                assert info["allocator_settings"]["inf"] is None and "Infinity" not in proc.stdout
            if case in SNAPSHOT_WARNING:
                assert any(SNAPSHOT_WARNING[case] in w for w in info["warnings"]), info["warnings"]
    assert not __import__("os").path.exists("/tmp/ptprof-pwned")


def test_fifo_snapshot_does_not_hang(tmp_path):
    proc = g.run_cli(["info", str(g.fifo_snapshot(tmp_path))])
    _assert_clean(proc)
    assert proc.returncode == 2


@pytest.mark.parametrize("how", g.CACHE_POISONS)
def test_poisoned_cache_through_the_cli(how, tmp_path):
    trace, cdir = g.poisoned_cache(tmp_path, how)
    proc = g.run_cli(["info", str(trace), "--json"], env={"PTPROF_CACHE_DIR": str(cdir)})
    _assert_clean(proc, allowed=(0,))
    assert '"cache_hit": false' in proc.stdout.replace("\n", " ")


@pytest.mark.parametrize("how", gen_fields.FINDINGS_POISONS)
def test_poisoned_findings_cache_is_a_miss(how, tmp_path):
    """`diff` reads both runs' findings from beside their cache entries: a poisoned file is re-analysed
    (the same output as the first diff) and written again, never a traceback."""
    a, b, cdir = gen_fields.poisoned_findings(tmp_path, how, g.run_cli)
    fresh = g.run_cli(["diff", str(a), str(b), "--json", "--no-cache"])
    proc = g.run_cli(["diff", str(a), str(b), "--json"], env={"PTPROF_CACHE_DIR": str(cdir)})
    _assert_clean(proc, allowed=(0,))
    assert json.loads(proc.stdout) == json.loads(fresh.stdout)
    from core.ranks.findings_cache import valid_finding
    for f in cdir.glob("*/findings-*.json"):  # rebuilt: what the rules write again
        assert all(map(valid_finding, json.loads(f.read_text())))


@pytest.mark.parametrize("env", [{"PTPROF_CACHE_MAX_BYTES": "inf"}, {"PTPROF_CACHE_MAX_BYTES": "garbage"},
                                 {"PTPROF_CACHE_DIR": "~nosuchuser_ptprof/x"}, {"PTPROF_CHUNKS_PER_WORKER": "abc"},
                                 {"PTPROF_CHUNKS_PER_WORKER": "-4"}, {"PTPROF_MAX_INFLATE_BYTES": "abc"},
                                 {"PTPROF_MAX_INFLATE_BYTES": "-1"}, {"PTPROF_MAX_INFLATE_BYTES": "inf"},
                                 {"PTPROF_WORKERS": "abc"}, {"PTPROF_WORKERS": "-3"}, {"PTPROF_WORKERS": "1e3"},
                                 {"PTPROF_CACHE_PACK_MAX_BYTES": "x"}])
def test_bad_environment_is_one_warning_line(env, tmp_path):
    env = {**env, "PTPROF_CACHE_DIR": env.get("PTPROF_CACHE_DIR", str(tmp_path / "c"))}
    proc = g.run_cli(["info", str(g.SMALL_TRACE)], env=env, real=True)  # settings are read at start-up too
    _assert_clean(proc, allowed=(0,))
    name = next(k for k in env if k != "PTPROF_CACHE_DIR") if len(env) > 1 else "PTPROF_CACHE_DIR"
    assert len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1, proc.stderr
    assert name in proc.stderr or "cache off" in proc.stderr


@pytest.mark.parametrize("args", [["info", "{small}", "--no-cache"], ["info", "{small}", "--json", "--no-cache"],
                                  ["info", "{snap}"], ["analyze", "{bundle}", "--no-cache"], ["info", "--no-such-flag"], []])
def test_the_fork_server_answers_as_a_real_process(args, tmp_path):
    """tests/cli_fork.py runs most cases above: the same exit code, stdout and stderr as `python -m core.cli`."""
    paths = {"small": str(g.SMALL_TRACE), "snap": str(g.write_snapshot(tmp_path, "memo_index_bomb")),
             "bundle": str(g.BUNDLE_CASES["deep_run_json"](tmp_path))}
    args = [a.format(**paths) for a in args]
    forked, real = g.run_cli(args), g.run_cli(args, real=True)
    timings = re.compile(r'("?load_s"?:?\s*|loaded in\s+|analysed in\s+|\bin\s+)[0-9]+\.[0-9]+')
    assert forked.returncode == real.returncode
    assert timings.sub(r"\1T", forked.stdout) == timings.sub(r"\1T", real.stdout)
    assert forked.stderr == real.stderr

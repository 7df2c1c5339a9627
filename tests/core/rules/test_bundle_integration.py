"""Rules over real run bundles from `ptprof record` on an H200 (tests/data/bundles, copied from the device run):
compile.json as the runner writes it, the runner's sync sites as source lines, several trace cycles of one rank.

s1: resources/examples/train_small.py with sync debug (sites at :35 pageable .to() and :40 loss.item()).
s2: the same, recorded with today's child.py (sites with "via", :27 model.to(device) inside torch).
g1: the same script recorded before the runner recorded sync sites. c1: torch.compile with `if y.mean() > 0:`
(graph break at comp.py:8) and a batch change 64 -> 96 (2 recompiles) between the two trace cycles.
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from core.rules import analyze
from core.runner.compile_capture import CompileCapture
from core.trace.loader import load

DATA = Path(__file__).resolve().parents[2] / "data" / "bundles"
EXAMPLE = Path(__file__).resolve().parents[3] / "resources" / "examples" / "train_small.py"
RUN_PREFIX = "/work/main/.devcopy/resources/examples/train_small.py"  # where the device run's script lived


def _copy(tmp_path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(DATA / name, dst)
    return dst


def _analyze(path: Path):
    ts = load(str(path), use_cache=False)
    return ts, analyze(ts)


def _by_rule(result, rule: str) -> list:
    return [f for f in result.findings if f.rule == rule]


def _repoint_sites(bundle: Path, old: str, new: str) -> None:
    """Move the recorded sync sites to a readable copy of the same script (metadata and events.jsonl)."""
    for trace in (bundle / "traces").glob("*.gz"):
        doc = json.loads(gzip.decompress(trace.read_bytes()))
        for site in doc.get("ptprof_sync_sites", ()):
            site["file"] = site["file"].replace(old, new)
        trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    ev = bundle / "events.jsonl"
    ev.write_text(ev.read_text().replace(old, new))


# -- compile.json --------------------------------------------------------------------------------------------
def _check_compile_findings(result, ts):
    assert all(f.count >= 1 for f in result.findings)
    gb = _by_rule(result, "graph_break")
    assert len(gb) == 2 and len({f.title for f in gb}) == 2  # one per cycle, told apart
    for f in gb:
        assert "Data-dependent branching at comp.py:8" in f.title
        assert (f.source.file, f.source.line, f.source.function) == ("/tmp/comp.py", 8, "forward")
        assert "torch.cond" in f.fix
    rc = _by_rule(result, "recompile")
    # the recompiles happened between the cycles (compile.json t_ns): only cycle 2 shows recompiled frames
    assert len(rc) == 1 and "cycle2" in ts.models[rc[0].model_index].path
    f = rc[0]
    assert "cycle 2" in f.title and "0/1, 1/1" in f.title and "None" not in f.title
    assert "tensor 'x' size mismatch at index 0. expected 64, actual 96" in f.title
    assert (f.source.file, f.source.line, f.source.function) == ("/tmp/comp.py", 6, "forward")
    assert "drop_last" in f.fix and "mark_dynamic(x, 0)" in f.fix and "64 → 96" in f.fix
    guards = f.facts["guards_failed"]  # the summary line; the evidence is the recompiled frames' events
    assert "tensor 'y' size mismatch at index 0. expected 64, actual 96 in forward (after the graph break at line 8) " \
           "(/tmp/comp.py:8)" in guards
    assert all("row" in e for e in f.evidence)


def test_runner_compile_json_gives_reasons_frames_and_fixes(tmp_path):
    ts, result = _analyze(_copy(tmp_path, "c1"))
    _check_compile_findings(result, ts)


def test_compile_json_from_the_runner_writer(tmp_path):
    """compile.json produced by core/runner/compile_capture.py from torch's log messages (as the child does)."""
    bundle = _copy(tmp_path, "c1")
    real = json.loads((bundle / "compile.json").read_text())
    cap = CompileCapture(quiet=True, skip_dirs=("/opt/torch/", "/work/main/.devcopy/core/runner/"))
    brk = real["graph_breaks"][0]
    for k in range(brk["count"]):
        cap.records.append(("graph_breaks", brk["text"], brk["first_t_ns"] + k))
    for r in real["recompiles"]:
        msg = (f"Recompiling function {r['function']} in {r['file']}:{r['line']}\n"
               "    triggered by the following guard failure(s):\n" + "".join(f"    - {g}\n" for g in r["reasons"]))
        cap.records.append(("recompiles", msg, r["t_ns"]))
    (bundle / "compile.json").write_text(json.dumps(cap.report()))
    written = json.loads((bundle / "compile.json").read_text())
    assert written["graph_breaks"][0]["user_frames"][-1]["function"] == "forward"
    ts, result = _analyze(bundle)
    _check_compile_findings(result, ts)


def test_recompile_after_every_cycle_is_not_reported(tmp_path):
    bundle = _copy(tmp_path, "c1")
    (bundle / "traces" / "rank0.cycle2.pt.trace.json.gz").unlink()
    _, result = _analyze(bundle)
    assert not _by_rule(result, "recompile")  # no count-0 "recompiled before the window (regions ): None"
    assert _by_rule(result, "graph_break")[0].source.line == 8


# -- sync sites ----------------------------------------------------------------------------------------------
def test_sync_sites_name_the_lines(tmp_path):
    bundle = _copy(tmp_path, "s1")
    _repoint_sites(bundle, RUN_PREFIX, str(EXAMPLE))
    _, result = _analyze(bundle)
    hs = _by_rule(result, "host_sync")
    assert len(hs) == 1 and "aten::item" in hs[0].title
    assert (hs[0].source.file, hs[0].source.line, hs[0].source.function) == (str(EXAMPLE), 40, "main")
    assert "loss.item()" in EXAMPLE.read_text().splitlines()[39]
    pm = _by_rule(result, "pageable_memcpy")
    assert len(pm) == 1 and (pm[0].source.file, pm[0].source.line) == (str(EXAMPLE), 35)
    assert ".to(device)" in EXAMPLE.read_text().splitlines()[34]
    # torch's own frame dropped from the sites the facts list
    assert not any("module.py" in site.split(" via ")[0] for f in hs + pm for site in f.facts.get("sync_sites", ()))


def test_current_runner_sites_prefer_the_direct_call(tmp_path):
    """s2: recorded by today's child.py (sites carry "via"; no run.json: child only). model.to(device) at :27
    synced inside torch's Module.to (via module.py); the per-step pageable copy is the direct call at :35."""
    bundle = _copy(tmp_path, "s2")
    _repoint_sites(bundle, "/work/main/resources/examples/train_small.py", str(EXAMPLE))
    ts, result = _analyze(bundle)
    assert ts.bundle is None  # no run.json: the folder is still read as a bundle
    pm = _by_rule(result, "pageable_memcpy")
    assert len(pm) == 1 and (pm[0].source.line, pm[0].source.function) == (35, "main")
    sites = pm[0].facts["sync_sites"]
    assert pm[0].facts["sync_sites_matched"] == "by their line's op (copy_h2d)"
    assert sites == [f"{EXAMPLE}:35", f"{EXAMPLE}:27 via torch/nn/modules/module.py:1370"]
    hs = _by_rule(result, "host_sync")
    assert len(hs) == 1 and hs[0].source.line == 40


def test_unreadable_sync_sites_are_listed_not_guessed(tmp_path):
    _, result = _analyze(_copy(tmp_path, "s1"))
    for f in _by_rule(result, "host_sync") + _by_rule(result, "pageable_memcpy"):
        assert f.source is None
        assert f.facts["sync_sites_matched"] == "no (source not readable here, op unknown)"
        assert f"{RUN_PREFIX}:35" in f.facts["sync_sites"] and f"{RUN_PREFIX}:40" in f.facts["sync_sites"]


def test_bundle_without_sync_sites_keeps_source_null(tmp_path):
    _, result = _analyze(_copy(tmp_path, "g1"))
    hs = _by_rule(result, "host_sync")
    assert hs and all(f.source is None for f in hs)
    assert not any("sync_sites" in f.facts for f in result.findings)


def test_only_sync_site_is_the_branch_in_both_cycles(tmp_path):
    _, result = _analyze(_copy(tmp_path, "c1"))
    hs = _by_rule(result, "host_sync")
    assert len(hs) == 2 and all("aten::is_nonzero" in f.title for f in hs)
    # cycle 2's trace carries no site metadata (the list did not grow); the rank's other cycle has it
    # the script is not readable here: the function comes from compile.json's frame at the same line
    assert all((f.source.file, f.source.line, f.source.function) == ("/tmp/comp.py", 8, "forward") for f in hs)
    assert all("except host-sync lines" in n.reason for n in result.not_run if n.rule == "source")


@pytest.mark.parametrize("line,kinds", [
    ("value = loss.item()  # .to(x) in a comment", {"item"}),
    ("    if y.mean() > 0:", {"branch"}),
    ("idx = torch.nonzero(out > 3)", {"nonzero"}),
    ("preds = logits.argmax(1).cpu().tolist()", {"copy_d2h"}),
    ("x = batch.to(device)", {"copy_h2d"}),
])
def test_site_line_kinds(line, kinds):
    from core.rules.sync_sites import kinds_of
    assert kinds <= kinds_of(line)


# -- several cycles of one rank ------------------------------------------------------------------------------
def test_cycles_of_one_rank_are_labelled(tmp_path):
    ts, result = _analyze(_copy(tmp_path, "c1"))
    assert len(ts.models) == 2 and {m.rank for m in ts.models} == {0}
    assert result.summary["ranks"] == 1 and result.summary["traces"] == 2
    for f in result.findings:
        cycle = "cycle1" if "cycle1" in ts.models[f.model_index].path else "cycle2"
        assert f.title.startswith(f"[rank 0 · cycle {cycle[-1]}] ")
    titles = [f.title for f in result.findings]
    assert len(titles) == len(set(titles))
    assert any("rank 0 · cycle 1:" in n.reason for n in result.not_run if n.rule == "source")
    assert not _by_rule(result, "rank_imbalance")  # two cycles of one rank are not two ranks


def test_sync_sites_beat_python_frames_for_exact_lines(tmp_path):
    """e1: `ptprof record --with-stack` of resources/examples/train_small.py on the H200 (current runner:
    sites carry their code line). Python frames only name the enclosing function, so the exact call
    lines come from the runner's sites: the pageable .to() at :35 and the .item() at :40."""
    bundle = _copy(tmp_path, "e1")
    ts = load(bundle, use_cache=False)
    assert ts.primary.counts.python > 0  # the trace has stacks
    findings = {f.rule: f for f in analyze(ts).findings}
    assert findings["pageable_memcpy"].source.line == 35
    assert findings["host_sync"].source.line == 40
    assert findings["host_sync"].source.file.endswith("train_small.py")

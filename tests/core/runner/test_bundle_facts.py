"""What the runner records beside the trace reaches the analysis: device facts from run.json when the trace
has no deviceProperties, and sync sites inside library code with both frames."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from core.commands import record, recording
from core.rules.base import Source
from core.trace.bundle_devices import device_properties
from core.trace.loader import load

DATA = Path(__file__).resolve().parents[2] / "data"
H200 = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_109_880_320, "numSms": 132, "computeMajor": 9,
        "computeMinor": 0}
FACTS = {"index": 0, "name": "NVIDIA H200", "total_memory_bytes": 150_109_880_320, "max_sm_clock_mhz": 1980,
         "max_mem_clock_mhz": 3201}
SYNC = {"type": "sync", "rank": 0, "file": "/nowhere/train.py", "line": 12, "step": 3, "code": "trainer.train()",
        "lib_file": "/venv/lib/python3.12/site-packages/transformers/trainer.py", "lib_line": 2375,
        "lib_function": "_maybe_log_save_evaluate", "lib_label": "transformers/trainer.py:2375 in _maybe_log_save_evaluate",
        "lib_code": "print(tr_loss)"}


def _bundle(tmp_path, run: dict, events=()):
    root = tmp_path / "bundle"
    (root / "traces").mkdir(parents=True)
    doc = json.loads(gzip.decompress((DATA / "gpu_print.pt.trace.json.gz").read_bytes()))
    doc.pop("deviceProperties")
    (root / "traces" / "rank0.cycle1.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    (root / "run.json").write_text(json.dumps({"format": "ptprof-run/1", **run}))
    (root / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return root


def test_trace_without_device_properties_gets_them_from_run_json(tmp_path):
    root = _bundle(tmp_path, {"environment": {"device_properties": [H200]}, "gpu": {"facts": [FACTS]}})
    meta = load(root, use_cache=False).primary.meta
    assert meta.device_total_memory(0) == 150_109_880_320
    (props,) = meta.device_properties
    assert props["numSms"] == 132 and props["maxSmClockMHz"] == 1980 and props["source"] == "run.json"


def test_nvml_facts_alone_are_enough(tmp_path):
    root = _bundle(tmp_path, {"gpu": {"facts": [FACTS]}})
    assert load(root, use_cache=False).primary.meta.device_total_memory(0) == 150_109_880_320


def test_merge_prefers_torch_and_adds_clocks():
    (d,) = device_properties({"environment": {"device_properties": [{**H200, "totalGlobalMem": 1}]},
                              "gpu": {"facts": [FACTS]}})
    assert d["totalGlobalMem"] == 1 and d["maxMemClockMHz"] == 3201
    assert device_properties(None) == () and device_properties({"gpu": {"facts": ["bad"]}}) == ()


def test_sync_site_in_library_code_names_both_frames(tmp_path):
    from core.rules import analyze
    root = _bundle(tmp_path, {}, [SYNC])
    findings = analyze(load(root, use_cache=False)).findings
    (f,) = [f for f in findings if f.source and f.source.library]
    assert f.source.file == "/nowhere/train.py" and f.source.line == 12
    assert str(f.source) == "transformers/trainer.py:2375 in _maybe_log_save_evaluate <- /nowhere/train.py:12"
    assert f.source.to_json()["library"].startswith("transformers/trainer.py:2375")


def test_source_without_library_is_unchanged():
    assert Source("a.py", 3, "f").to_json() == {"file": "a.py", "line": 3, "function": "f"}
    assert str(Source("a.py", 3, "f")) == "a.py:3 (f)"


def _cfg(argv):
    import argparse
    p = argparse.ArgumentParser()
    record.add_arguments(p)
    return recording.config_from_args(p.parse_args(argv))


def test_record_arguments():
    cfg = _cfg(["--out", "x", "-m", "pkg.train", "--epochs", "3", "-m", "z"])
    assert cfg.module == "pkg.train" and cfg.args == ("--epochs", "3", "-m", "z") and cfg.script == ""
    assert not cfg.torchrun
    cfg = _cfg(["--nproc-per-node", "1", "--stop-after-window", "train.py", "--lr", "1"])
    assert cfg.torchrun and cfg.nproc == 1 and cfg.stop_after_window and cfg.args == ("--lr", "1")
    assert not _cfg(["train.py"]).torchrun


def test_module_argv(tmp_path):
    from core.runner.config import RunConfig, validate
    from core.runner.launch import build_argv
    cfg = validate(RunConfig(script="", module="pkg.train", args=("1",), cwd=str(tmp_path), nproc=1,
                             use_torchrun=True))
    argv = build_argv(cfg, tmp_path / "b")
    assert argv[argv.index("--module"):] == ["--module", "--", "pkg.train", "1"]
    assert "torch.distributed.run" in argv and argv[argv.index("--nproc-per-node") + 1] == "1"
    assert cfg.workdir == str(tmp_path.resolve())


def test_child_records_device_properties_in_kineto_keys():
    import types

    from core.runner.devinfo import device_properties as child_props
    props = types.SimpleNamespace(name="NVIDIA H200", total_memory=150_109_880_320, major=9, minor=0,
                                  multi_processor_count=132, warp_size=32, L2_cache_size=62_914_560)
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                 get_device_properties=lambda i: props)
    (d,) = child_props(types.SimpleNamespace(cuda=cuda))
    assert d == {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_109_880_320, "computeMajor": 9,
                 "computeMinor": 0, "numSms": 132, "warpSize": 32, "L2CacheSize": 62_914_560}
    assert child_props(types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))) == []

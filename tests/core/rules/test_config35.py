"""Issue 35 item 3: thresholds are written once (resources/rules.toml, read through core.resource_files), and
a config with a key rules.toml does not know fails at load, naming it."""
from __future__ import annotations

import pytest

from core import resource_files
from core.rules.base import RuleContext
from core.rules.config import ConfigError, defaults, load_config, with_defaults
from core.trace.model import TraceSet


def test_the_shipped_thresholds_load_and_every_rule_has_its_table():
    from core.rules import RULE_IDS
    cfg = load_config()
    assert cfg == defaults() == resource_files.load_toml("rules.toml")
    assert set(RULE_IDS) <= set(cfg)
    assert cfg["gpu_idle"]["kernel_wait_max_ns"] == 30_000


def test_an_unknown_key_fails_loudly_at_load(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text("[gpu_idle]\nkernel_wait_max_nss = 10000\n")
    with pytest.raises(ConfigError, match=r"unknown key 'kernel_wait_max_nss' in \[gpu_idle\]"):
        load_config(bad)
    bad.write_text("[gpu_idel]\nmax_idle_pct = 10.0\n")
    with pytest.raises(ConfigError, match=r"unknown table \[gpu_idel\]"):
        load_config(bad)
    bad.write_text('[launch_bound]\nmin_run = "many"\n')
    with pytest.raises(ConfigError, match=r"min_run = 'many' is not a int"):
        load_config(bad)


def test_a_config_is_laid_over_the_shipped_one(tmp_path):
    good = tmp_path / "rules.toml"
    good.write_text("[gpu_idle]\nmax_idle_pct = 10\n")
    cfg = load_config(good)
    assert cfg["gpu_idle"]["max_idle_pct"] == 10 and cfg["gpu_idle"]["kernel_wait_max_ns"] == 30_000
    assert cfg["launch_bound"] == defaults()["launch_bound"]


def test_the_rules_context_checks_a_config_given_as_a_dict():
    ts = TraceSet(path="x", models=())
    assert RuleContext(ts, None).cfg("launch_bound")["min_run"] == 32
    assert RuleContext(ts, {"launch_bound": {"min_run": 8}}).cfg("launch_bound")["min_run"] == 8
    with pytest.raises(ConfigError, match="min_rnu"):
        RuleContext(ts, {"launch_bound": {"min_rnu": 8}})
    assert with_defaults(None) == defaults()


def test_the_kernel_wait_bound_is_written_once():
    from pathlib import Path

    from core.analysis import breakdown
    assert breakdown.DEFAULT_KERNEL_WAIT_MAX_NS == defaults()["gpu_idle"]["kernel_wait_max_ns"]
    root = Path(__file__).resolve().parents[3] / "core"
    hits = [p for p in root.rglob("*.py") if "30_000" in p.read_text(encoding="utf-8")
            and "kernel_wait" in p.read_text(encoding="utf-8")]
    assert not hits, hits

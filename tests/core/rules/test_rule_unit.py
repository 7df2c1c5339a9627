"""Issue 35 item 1: a rule is one unit (id, doc, detector, what-if), a finding names its edit input
(`fix_rows`) apart from what the GUI highlights, and the README's rules table is the rules' own docs."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from core.rules import RULE_IDS, all_rules, savings
from core.rules.base import RuleContext, RuleOutput
from core.rules.config import load_config
from core.rules.explain import explain, rules_table

REPO = Path(__file__).resolve().parents[3]
PAIRS = REPO / "tests" / "data" / "device" / "pairs"


def test_every_rule_carries_its_doc_and_the_readme_table_is_made_of_them():
    rules = {r.id: r for r in all_rules()}
    assert set(rules) == set(RULE_IDS)
    assert all(r.doc and "\n" not in r.doc for r in rules.values())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert rules_table() in readme, "README's rules table differs from the rules' docs: paste rules_table()"


def test_explain_names_the_thresholds_and_the_what_if():
    text = explain("launch_bound")
    assert text.startswith("launch_bound: ") and "short_kernel_ns = 10000" in text
    assert "what-if: torch.compile" in text
    assert "what-if: none" in explain("gpu_idle")
    assert explain("no_such_rule") is None


def test_explain_on_the_command_line(capsys):
    from core.cli import main
    assert main(["analyze", "--explain", "host_sync"]) == 0
    assert capsys.readouterr().out.startswith("host_sync: CPU blocked waiting for the GPU")
    assert main(["analyze", "--explain", "hots_sync"]) == 2
    assert "unknown rule id: hots_sync" in capsys.readouterr().err


def test_whatif_keeps_only_shared_helpers():
    """No what-if branches on the rule id or re-detects: whatif.py names no rule and imports no rule module."""
    src = (REPO / "core" / "rules" / "whatif.py").read_text(encoding="utf-8")
    code = src.split('"""', 2)[2]
    assert "finding.rule" not in code and "EDITS" not in code
    assert not re.search(r"from core\.rules\.(gpu_time|sync|memcpy|layout|compile|optimizer|precision|dataloader)\b",
                         code)
    assert "finding.rule" not in (REPO / "core" / "rules" / "savings.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("pair", ["launchbound", "copy_pageable", "item_gpubound", "loader_nw0"])
def test_a_saving_reads_fix_rows_not_the_highlight(pair, loaded):
    """Emptying every finding's evidence_rows (what the GUI highlights) changes no saving."""
    path = PAIRS / pair
    if not path.exists():
        pytest.skip(f"{path} not in tests/data")
    ts = loaded(path)
    ctx = RuleContext(ts, load_config())
    out = RuleOutput()
    for r in all_rules():
        out.extend(r.run(ctx))
    priced, _ = savings.price(ctx, out.findings)
    hidden, _ = savings.price(ctx, [dataclasses.replace(f, evidence_rows=()) for f in out.findings])
    assert [f.saving_ns for f in priced] == [f.saving_ns for f in hidden]
    assert any(f.saving_ns for f in priced), "this pair has a priced finding"
    unfixed, _ = savings.price(ctx, [dataclasses.replace(f, fix_rows=(), fix_groups=()) for f in out.findings])
    assert [f.saving_ns for f in unfixed] != [f.saving_ns for f in priced], "fix_rows are the edit's input"

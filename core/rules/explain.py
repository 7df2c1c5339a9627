"""What a rule is, from the rule itself: `ptprof analyze --explain RULE` and the README's rules table.

Each rule carries its id, title, one-paragraph doc and what-if (core/rules/base.py `FnRule`); its thresholds
are its table in resources/rules.toml. Nothing here is written twice: the README table is `rules_table()`
(tests/core/rules/test_rule_unit.py checks that it is).
"""
from __future__ import annotations

from core.rules import RULE_IDS, all_rules
from core.rules.config import load_config


def rule_by_id(rule_id: str):
    """The rule object of that id, or None."""
    return next((r for r in all_rules() if r.id == rule_id), None)


def rules_table() -> str:
    """The README's rules table (markdown), in RULE_IDS order."""
    by_id = {r.id: r for r in all_rules()}
    lines = ["| rule id | reports |", "| --- | --- |"]
    lines += [f"| `{rid}` | {by_id[rid].doc} |" for rid in RULE_IDS]
    return "\n".join(lines) + "\n"


def explain(rule_id: str) -> str | None:
    """Plain text: the rule's id and title, what it reports, its thresholds and what its fix would save;
    None for an unknown id."""
    r = rule_by_id(rule_id)
    if r is None:
        return None
    lines = [f"{r.id}: {r.title}", "", r.doc, ""]
    cfg = load_config().get(r.id, {})
    if cfg:
        lines.append("thresholds (resources/rules.toml [%s]):" % r.id)
        lines += [f"  {key} = {value!r}" for key, value in cfg.items()]
    else:
        lines.append("thresholds: none of its own (resources/rules.toml)")
    what_if = getattr(r, "what_if", None)
    lines.append("what-if: " + (what_if.doc if what_if is not None else
                                "none (no saving is priced: the finding keeps the cost it measured)"))
    return "\n".join(lines) + "\n"

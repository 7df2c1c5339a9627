"""The summary line of a finding (Finding.facts) as text in findings.csv and report.html reads as the app's:
a list after a colon ("waiting ranks: 0", rank 0 waits), a single value after its label ("kernels 485")."""
from __future__ import annotations

from core.export.findings import facts_text


def test_a_list_fact_reads_after_a_colon_and_a_number_after_its_label():
    text = facts_text({"waiting_ranks": [0], "waited_ns": 253_360_000, "kernels": 3, "runs": None})
    assert text.startswith("waiting ranks: 0 · ")
    assert "kernels 3" in text and "runs" not in text
    assert facts_text({"break_reasons": ["a", "b"]}) == "break reasons: a, b"
    assert facts_text({}) == "" and facts_text(None) == ""

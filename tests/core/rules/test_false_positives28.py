"""False positives issue 28 found on public example scripts."""
from __future__ import annotations

from helpers import REPO

from core.rules import analyze
from core.trace.loader import load

BUNDLES = REPO / "tests" / "data" / "bundles"


def test_zeros_inside_autograds_own_backward_nodes_are_not_the_users():
    """AsStridedBackward0 runs new_zeros + copy_ into a strided view (script.py beside the bundle): not user
    code, so zeros_then_overwrite says nothing."""
    a = analyze(load(BUNDLES / "asstrided_backward", use_cache=False))
    assert "zeros_then_overwrite" not in [f.rule for f in a.findings]

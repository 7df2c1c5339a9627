"""HTA tab (Holistic Trace Analysis tables and plots, lazily imported in a worker)."""
from __future__ import annotations

from gui.hta.tab import HtaTab

__all__ = ["HtaTab"]

"""Compare tab: two runs side by side (core.analysis.diff), loaded and compared in workers."""
from gui.compare.job import CompareJob
from gui.compare.view import CompareView

__all__ = ["CompareJob", "CompareView"]

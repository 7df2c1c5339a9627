"""`import ptprof`: the Python API for notebooks and scripts (a thin facade over core.api; see its docstring
and the README's "Python API" section)."""
from core.api import Analysis, Run, Table, TraceParseError, analyze, diff, load

__all__ = ["Analysis", "Run", "Table", "TraceParseError", "analyze", "diff", "load"]

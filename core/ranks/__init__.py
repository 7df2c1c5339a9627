"""Runs of many ranks: analyze one rank at a time (map), then across ranks (reduce).

A multi-rank input (a folder or bundle of several trace files) is never held whole: each rank is loaded,
analyzed as a one-model set and dropped by a worker, which returns a small picklable `RankSummary`
(summary.py: findings on the rank's own clock, step times, collectives keyed by process group + sequence
number, metrics, health, tables). The reduce (reduce.py) puts the ranks on one time base, runs the
cross-rank rules (rank_imbalance, straggler - whose cause is asked of the straggler's map only), labels
and sorts the findings and builds the summary `analyze` prints. Memory: O(workers x rank).

Executors (executor.py): the stdlib process pool (default, one worker per core), in-process, or Dask
distributed (dask_backend.py, `pip install ".[cluster]"`). A rank that carries its summary next to its trace
(`<trace>.ptprof-summary.json`, written by the launcher or on first analysis: stored.py) is not mapped.
"""
from __future__ import annotations

from core.ranks.run import RunAnalysis, analyze_run, is_multi

__all__ = ["RunAnalysis", "analyze_run", "is_multi"]

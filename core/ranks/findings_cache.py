"""Findings of a run kept beside its column cache, so a second `ptprof diff` of the same runs does not
re-run every rule and what-if replay.

The findings JSON (`Analysis.to_json()["findings"]`) is stored in the cache entry of the run's first trace
file as `findings-<digest>.json`. The digest covers everything the findings depend on: every trace file's
cache key (path, size, mtime, format), the run bundle's side files (run.json, compile.json, events.jsonl,
nvml.csv: size and mtime), the rule thresholds and what-if tables, and the source of core/rules,
core/analysis and core/trace/event_names.py (a changed rule never serves stale findings). The file lives
and dies with its entry (LRU eviction removes the whole entry); it is written to a temp file in the entry
and renamed. Any problem reading it is a miss.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from core import resource_files
from core.trace import cache, safefile

log = logging.getLogger(__name__)

PACKAGE = Path(__file__).resolve().parents[1]
SIDE_FILES = ("run.json", "compile.json", "events.jsonl", "nvml.csv")
# the stored shape; part of the digest, so an entry of another format is never read (a miss, recomputed).
# 2: every finding has `facts` (its summary line) and evidence rows of one shape (issue 35)
FORMAT = 2
_code_digest: str | None = None


def _code() -> str:
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha1()
        files = sorted([*PACKAGE.joinpath("rules").glob("*.py"), *PACKAGE.joinpath("analysis").glob("*.py"),
                        PACKAGE / "trace" / "event_names.py"])
        files += [resource_files.path(name) for name in resource_files.names(".toml")]
        for path in files:
            try:
                h.update(path.name.encode() + path.read_bytes())
            except OSError:
                h.update(path.name.encode())
        _code_digest = h.hexdigest()
    return _code_digest


def _digest(trace_set) -> tuple[Path, str] | None:
    keys = []
    for model in trace_set.models:
        key = cache.source_key(Path(model.path)) if model.path else None
        if key is None:
            return None
        keys.append(key)
    root = Path(trace_set.path)
    side = []
    if root.is_dir():
        for name in SIDE_FILES:
            try:
                st = os.stat(root / name)
                side.append([name, st.st_size, st.st_mtime_ns])
            except OSError:
                side.append([name, None, None])
    entry = cache.entry_dir(keys[0]) if keys else None
    if entry is None or not entry.is_dir():
        return None
    blob = json.dumps({"traces": keys, "side": side, "code": _code(), "format": FORMAT}, sort_keys=True).encode()
    return entry, hashlib.sha1(blob).hexdigest()[:24]


def load(trace_set) -> list[dict] | None:
    where = _digest(trace_set)
    if where is None:
        return None
    entry, digest = where
    path = entry / f"findings-{digest}.json"
    try:
        data = safefile.loads_json_bounded(safefile.read_regular(path, MAX_BYTES, follow_symlinks=False),
                                           MAX_DEPTH, strict=True)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # a FIFO, a link, 200,000 nested arrays, not JSON: a miss
        log.info("ignoring cached findings %s: %s", path, exc)
        return None
    if not (isinstance(data, list) and all(map(valid_finding, data))):
        log.info("ignoring cached findings %s: not findings as the rules write them", path)
        return None
    return data


MAX_BYTES = 64 << 20
MAX_DEPTH = 16  # a finding nests 4 levels (evidence lists of dicts of lists)
_KEYS = frozenset(("rule", "severity", "title", "count", "impact_ns", "impact_pct", "time_ranges", "source",
                   "facts", "evidence", "fix", "saving_ns", "saving_pct", "estimate"))
# added since (each optional, of its type): launch_bound's savings by fix; issue 31's per-step vocabulary
_OPTIONAL = {"savings_by_fix": lambda v: isinstance(v, dict) and all(_int(x) for x in v.values()),
             "steps": lambda v: _int(v), "lost_per_step_ns": lambda v: _int(v),
             "mean_step_ns": lambda v: v is None or _int(v),
             "saving_pct_of_mean_step": lambda v: v is None or _number(v),
             "one_off": lambda v: v is None or (isinstance(v, dict) and _int(v.get("cost_ns"))
                                               and isinstance(v.get("steps"), list) and all(map(_int, v["steps"]))
                                               and isinstance(v.get("label"), str))}
_SEVERITIES = frozenset(("info", "warning", "error"))


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -2**62 < v < 2**62


def _number(v) -> bool:  # a NaN / Infinity / 1e999 refused the whole file (safefile, strict)
    return _int(v) or isinstance(v, float)


def _fact(v) -> bool:
    """A plain value of Finding.facts: str, number, bool, None or a flat list of those."""
    if isinstance(v, list):
        return all(x is None or isinstance(x, (str, bool, float)) or _int(x) for x in v)
    return v is None or isinstance(v, (str, bool, float)) or _int(v)


def valid_finding(f) -> bool:
    """A finding as Finding.to_json writes it: its keys, each of its type (the readers do arithmetic on the
    numbers and format the strings: a NaN impact was a ValueError in `diff`)."""
    if not isinstance(f, dict) or not _KEYS <= set(f) <= _KEYS | set(_OPTIONAL):
        return False
    if not all(check(f[k]) for k, check in _OPTIONAL.items() if k in f):
        return False
    src = f["source"]
    return (all(isinstance(f[k], str) for k in ("rule", "title", "fix", "estimate")) and f["severity"] in _SEVERITIES
            and _int(f["count"]) and _int(f["impact_ns"]) and _number(f["impact_pct"])
            and (f["saving_ns"] is None or _int(f["saving_ns"]))
            and (f["saving_pct"] is None or _number(f["saving_pct"]))
            and isinstance(f["time_ranges"], list)
            and all(isinstance(r, list) and len(r) == 2 and _int(r[0]) and _int(r[1]) for r in f["time_ranges"])
            and isinstance(f["evidence"], list) and all(isinstance(e, dict) for e in f["evidence"])
            and isinstance(f["facts"], dict) and all(map(_fact, f["facts"].values()))
            and (src is None or isinstance(src, dict) and isinstance(src.get("file"), str)
                 and _int(src.get("line")) and isinstance(src.get("function"), str)))


def store(trace_set, findings: list[dict]) -> bool:
    where = _digest(trace_set)
    if where is None:
        return False
    entry, digest = where
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".findings-", dir=entry)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(findings, fh)
        os.replace(tmp, entry / f"findings-{digest}.json")
        tmp = None
        return True
    except (OSError, TypeError, ValueError) as exc:
        log.info("findings not cached in %s: %s", entry, exc)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def findings_of(trace_set, use_cache: bool = True) -> list[dict]:
    """The run's findings as JSON dicts: from the cache when it holds them for exactly this input and code."""
    if use_cache:
        hit = load(trace_set)
        if hit is not None:
            return hit
    if hasattr(trace_set, "run_findings"):  # a run view (core/ranks/views.py): map / reduce over its ranks
        found = trace_set.run_findings()
    else:
        from core.ranks.inset import analyze_any  # several ranks: rank by rank, then across ranks
        found = analyze_any(trace_set).to_json()["findings"]
    if use_cache:
        store(trace_set, found)
    return found


def compare_runs(ts_a, ts_b, by_shape: bool = False, normalize_templates: bool = False, use_cache: bool = True):
    """The Diff of two loaded runs (`ptprof diff`, `ptprof gate`, `ptprof.diff`), with both runs' findings (kept
    beside the column cache, so comparing the same runs again does not re-run the rules)."""
    from core.analysis import diff
    return diff.compare(ts_a, ts_b, findings_a=findings_of(ts_a, use_cache), findings_b=findings_of(ts_b, use_cache),
                        by_shape=by_shape, normalize_templates=normalize_templates)

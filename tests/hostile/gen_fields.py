"""Hostile cache fields (issue 37): entry.json scalars that parse but are not what the parser writes
(a string count, a wall clock of 2^100, a rank of 2^40), columns written with valid fingerprints but
impossible values (a dur_ns of 2^62: what `cache.store` of a forged model writes), and poisoned findings
files (`ptprof diff`'s cache beside an entry: 200,000 nested arrays, NaN impacts, wrong types).

FIELD_POISONS join gen_store.CACHE_POISONS (every cache test walks them); FINDINGS_POISONS are read by
`diff` (test_store_cli.py). Each is a miss and a rebuild, never a traceback.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path


def _edit_entry(entry: Path, edit) -> None:
    data = json.loads((entry / "entry.json").read_text())
    edit(data)
    (entry / "entry.json").write_text(json.dumps(data))


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(d):
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return edit


def _restore_column(entry: Path, table: str, col: str, edit) -> None:
    """Rewrite one column of a per-column (.npy) entry and its fingerprint: the entry `cache.store` would
    have written for a model holding that column (only the value checks can tell)."""
    import io

    import numpy as np

    from core.trace.cache_check import fingerprint
    f = entry / f"{table}.{col}.npy"
    arr = np.load(f).copy()
    edit(arr)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    f.write_bytes(buf.getvalue())
    _edit_entry(entry, lambda d: d["fingerprints"][table].__setitem__(col, fingerprint(arr)))


def _at(index: int, value: int):
    def edit(arr):
        arr[index] = value
    return edit


FIELD_EDITS = {
    "counts_string": _set("counts", "kernels", "many"),
    "counts_float": _set("counts", "events", 1e300),
    "counts_negative": _set("counts", "cpu_ops", -5),
    "counts_missing_field": lambda d: d["counts"].pop("memcpy"),
    "counts_extra_field": _set("counts", "evil", 1),
    "meta_base_unix_huge": _set("meta", "base_unix_ns", 2**100),
    "meta_base_unix_negative": _set("meta", "base_unix_ns", -1),
    "meta_base_unix_string": _set("meta", "base_unix_ns", "1700000000000000000"),
    "meta_schema_version_huge": _set("meta", "schema_version", 10**40),
    "meta_trace_name_list": _set("meta", "trace_name", ["x"]),
    "rank_huge": _set("rank", 2**40),
    "rank_bool": _set("rank", True),
}
COLUMN_EDITS = {
    "stored_dur_2_62": ("slices", "dur_ns", _at(0, 2**62)),
    "stored_dur_negative": ("slices", "dur_ns", _at(-1, -2**62)),
    "stored_ts_2_62": ("slices", "ts_ns", _at(-1, 2**62)),
    "stored_step_dur_2_62": ("steps", "dur_ns", _at(0, 2**62)),
    "stored_instant_ts_min": ("instants", "ts_ns", _at(0, -2**63)),
}
FIELD_POISONS = tuple(FIELD_EDITS) + tuple(COLUMN_EDITS)


def poison_fields(entry: Path, how: str) -> None:
    if how in FIELD_EDITS:
        _edit_entry(entry, FIELD_EDITS[how])
    else:
        _restore_column(entry, *COLUMN_EDITS[how])


# ---- the findings cache (core/ranks/findings_cache.py) ----

def _findings_edit(how: str, data: list) -> str:
    if how == "deep_arrays":
        return "[" * 200_000 + "]" * 200_000
    if how == "deep_evidence":
        return json.dumps([{**f, "evidence": [json.loads("[" * 500 + "]" * 500)]} for f in data])
    if how == "nan_impact":
        return json.dumps([{**f, "impact_ns": float("nan"), "impact_pct": float("nan")} for f in data])
    if how == "infinite_saving":
        return json.dumps([{**f, "saving_ns": float("inf")} for f in data])
    if how == "huge_impact":
        return json.dumps([{**f, "impact_ns": 10**400} for f in data])
    if how == "string_count":
        return json.dumps([{**f, "count": "3"} for f in data])
    if how == "bad_severity":
        return json.dumps([{**f, "severity": 7} for f in data])
    if how == "ranges_not_pairs":
        return json.dumps([{**f, "time_ranges": [[1, 2, 3], "x"]} for f in data])
    if how == "source_wrong":
        return json.dumps([{**f, "source": {"file": 5, "line": "x"}} for f in data])
    if how == "nested_facts":  # Finding.facts holds plain values only (issue 35): a dict / deep list is refused
        return json.dumps([{**f, "facts": {"runs": {"n": 1}, "ns": [[1, 2]]}} for f in data])
    if how == "no_facts":  # a finding as the cache's format 1 wrote it (before facts): re-computed
        return json.dumps([{k: v for k, v in f.items() if k != "facts"} for f in data])
    if how == "not_a_list":
        return json.dumps({"findings": data})
    if how == "list_of_numbers":
        return json.dumps(list(range(1000)))
    if how == "binary":
        return bytes(range(256)).decode("latin-1")
    raise ValueError(how)


FINDINGS_POISONS = ("deep_arrays", "deep_evidence", "nan_impact", "infinite_saving", "huge_impact", "string_count",
                    "bad_severity", "ranges_not_pairs", "source_wrong", "nested_facts", "no_facts", "not_a_list",
                    "list_of_numbers", "binary")


def poisoned_findings(root: Path, how: str, run_cli) -> tuple[Path, Path, Path]:
    """(run A, run B, cache dir): two copies of the small trace compared once by `ptprof diff` (which keeps
    both runs' findings beside their cache entries), then every findings file replaced one way."""
    from hostile.gen_store import SMALL_TRACE
    work = root / f"findings_{how}"
    work.mkdir()
    a, b = work / "a.pt.trace.json.gz", work / "b.pt.trace.json.gz"
    shutil.copy(SMALL_TRACE, a)
    shutil.copy(SMALL_TRACE, b)
    cdir = work / "cache"
    proc = run_cli(["diff", str(a), str(b)], env={"PTPROF_CACHE_DIR": str(cdir)})
    assert proc.returncode == 0, proc.stderr
    files = sorted(cdir.glob("*/findings-*.json"))
    assert len(files) == 2, files
    for f in files:
        f.write_text(_findings_edit(how, json.loads(f.read_text())), encoding="utf-8")
    return a, b, cdir

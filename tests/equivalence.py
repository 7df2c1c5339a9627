"""Before / after digests of what a user sees on every trace (issue 35's safety net for refactors).

For each trace of tests/data (and, with --shared, each trace of PTPROF_SHARED_TRACES) it records:
every column of every table of every model (a hash of each numpy column, of the string pool, the metadata
and the counts), every finding (rule, severity, title, count, impact, saving, fix, source and a hash of the
evidence rows, its facts and time ranges), the checks not run, the health checks, the per-rank metrics, the summary
numbers, and the CSV files `ptprof report` writes (kernels, ops, steps, metrics, findings, nvml).
`tests/core/test_equivalence35.py` compares them with the golden files in tests/data.

Regenerate the golden files after a change that is MEANT to change what a user sees (a new title, a fixed
saving), then review `git diff tests/data/equivalence35*.json` - every changed line is a changed number:

    python tests/equivalence.py --write            # tests/data traces -> tests/data/equivalence35.json
    python tests/equivalence.py --write --shared   # also PTPROF_SHARED_TRACES -> equivalence35.shared.json
    python tests/equivalence.py                    # compare only, print what differs (exit 1 on a difference)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
GOLDEN = DATA / "equivalence35.json"
GOLDEN_SHARED = DATA / "equivalence35.shared.json"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".pt.trace.json.xz")
# the default test run checks the traces up to this size (compressed bytes of the unit's trace files):
# a few seconds on the shared 2-core VM; PTPROF_EQUIV_ALL=1 checks every one
SMALL_BYTES = 160_000
# summary keys that are not a property of the trace: wall time of the analysis, where the file lives
_VOLATILE_SUMMARY = {"analysis_s", "trace", "path", "load_s"}


def _is_trace(p: Path) -> bool:
    return p.is_file() and p.name.endswith(TRACE_SUFFIXES)


def units(root: Path) -> list[Path]:
    """What a user opens, under `root`: run bundles (a folder with run.json or traces/), multi-rank folders
    (several trace files beside each other, outside a bundle) and single trace files; sorted."""
    bundles = sorted({p.parent for p in root.rglob("run.json")} |
                     {p.parent for p in root.rglob("traces") if p.is_dir() and p.parent != root
                      and any(_is_trace(t) for t in p.iterdir())})
    out = list(bundles)
    loose = sorted(p for p in root.rglob("*") if _is_trace(p) and not any(b in p.parents for b in bundles))
    by_dir: dict[Path, list[Path]] = {}
    for p in loose:
        by_dir.setdefault(p.parent, []).append(p)
    for d, files in by_dir.items():
        if d != root and len(files) > 1 and all(f.name.startswith("rank") for f in files):
            out.append(d)  # a multi-rank folder (tests/data/traces/gpu_ddp2)
        else:
            out.extend(files)
    return sorted(out)


def unit_bytes(unit: Path) -> int:
    if unit.is_file():
        return unit.stat().st_size
    return sum(p.stat().st_size for p in unit.rglob("*") if _is_trace(p))


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _hj(obj) -> str:
    return _h(json.dumps(obj, sort_keys=True, default=str).encode())


def _column(a) -> str:
    import numpy as np

    if hasattr(a, "dense"):  # core.trace.sparse.Sparse: digest the column a reader sees
        a = a.dense()
    a = np.ascontiguousarray(np.asarray(a))
    return _h(f"{a.dtype.str}{a.shape}".encode() + a.tobytes())


def _table(table) -> dict[str, str]:
    if hasattr(table, "stored"):  # SliceTable: its stored columns, a sparse one as the dense array a reader
        cols = dict(table.stored())  # sees (built here without caching it in the table)
        cols["track_offsets"] = table.track_offsets
    else:
        cols = table.columns()
    return {c: _column(v) for c, v in sorted(cols.items())}


def model_digest(m) -> dict:
    meta = m.meta.to_json()
    return {
        "rank": m.rank,
        "strings": _hj([m.strings[i] for i in range(len(m.strings))]),
        "slices": _table(m.slices),
        **{t: _table(getattr(m, t)) for t in ("tracks", "memory", "instants", "counters", "flows", "steps")},
        "meta": _hj(meta),
        "counts": _hj([getattr(m.counts, f) for f in m.counts.__slots__]),
        "warnings": list(m.warnings),
    }


def finding_digest(f) -> dict:
    d = f.to_json()
    return {
        "rule": d["rule"], "severity": d["severity"], "title": d["title"], "count": d["count"],
        "impact_ns": d["impact_ns"], "impact_pct": d["impact_pct"], "saving_ns": d["saving_ns"],
        "saving_pct": d["saving_pct"], "estimate": d["estimate"], "fix": d["fix"], "source": d["source"],
        "model_index": int(getattr(f, "model_index", 0)),
        "savings_by_fix": d.get("savings_by_fix"),
        "evidence": _hj(d["evidence"]), "facts": _hj(d["facts"]), "time_ranges": _hj(d["time_ranges"]),
    }


def analysis_of(ts, path: Path):
    """The findings a user gets for `path`, as `ptprof analyze` and `ptprof report` compute them: the bundle's
    own findings (OOM records) first, then the rules (rank by rank and across ranks for several models)."""
    import dataclasses

    from core.rules import analyze
    from core.rules.oom_findings import bundle_findings
    if len(ts.models) > 1:
        from core.ranks.inset import analyze_any
        result = analyze_any(ts)
    else:
        result = analyze(ts)
    extra = bundle_findings(str(path))
    if extra:
        result = dataclasses.replace(result, findings=tuple(extra) + tuple(result.findings))
    return result


def csv_digest(ts, result) -> dict[str, str]:
    from core.export.csv import write_all
    from core.export.findings import wrap
    with tempfile.TemporaryDirectory(prefix="ptprof-equiv-") as tmp:
        written = write_all(ts, tmp, wrap(result).findings)
        return {Path(p).name: _h(Path(p).read_bytes()) for p in sorted(written)}


def digest(path: Path) -> dict:
    """Everything a user sees of one trace / bundle / multi-rank folder, as short hashes and plain values."""
    from core.analysis import health
    from core.analysis.metrics import trace_metrics
    from core.trace.loader import load
    from core.trace.model import TraceParseError
    try:
        ts = load(path, use_cache=False)
    except TraceParseError as exc:  # a bundle that ended before its first trace: the one line a user reads
        from core.rules.oom_findings import bundle_findings
        return {"error": exc.reason.replace(str(path), "<path>"),
                "findings": [finding_digest(f) for f in bundle_findings(str(path))]}
    result = analysis_of(ts, path)
    summary = {k: v for k, v in result.summary.items() if k not in _VOLATILE_SUMMARY}
    return {
        "models": [model_digest(m) for m in ts.models],
        "nvml": None if ts.nvml is None else _table(ts.nvml),
        "set_warnings": _hj([w.replace(str(path), "<path>") for w in ts.warnings]),
        "findings": [finding_digest(f) for f in result.findings],
        "not_run": [n.to_json() for n in result.not_run],
        "summary": _hj(summary),
        "health": _hj([h.to_json() for h in health.check(ts)]),
        "metrics": _hj([rm.to_json() for rm in trace_metrics(ts)]),
        "csv": csv_digest(ts, result),
    }


def key_of(unit: Path, root: Path) -> str:
    return unit.relative_to(root).as_posix()


def shared_root() -> Path | None:
    env = os.environ.get("PTPROF_SHARED_TRACES")
    return Path(env) if env and Path(env).is_dir() else None


def digests(root: Path, only=None, progress=None) -> dict[str, dict]:
    out = {}
    for u in units(root):
        k = key_of(u, root)
        if only is not None and k not in only:
            continue
        if progress:
            progress(k)
        out[k] = digest(u)
    return out


def _finding_key(f) -> str:
    return json.dumps([f.get("rule"), f.get("model_index"), f.get("title"), f.get("evidence")], sort_keys=True)


def differences(golden: dict, got: dict, prefix: str = "") -> list[str]:
    """Human-readable paths where two digests differ ('a/b/findings[2].title: 'x' -> 'y'')."""
    out: list[str] = []
    if isinstance(golden, dict) and isinstance(got, dict):
        for k in sorted(set(golden) | set(got)):
            p = f"{prefix}.{k}" if prefix else str(k)
            if k not in got:
                out.append(f"{p}: missing now")
            elif k not in golden:
                out.append(f"{p}: new (not in the golden file)")
            else:
                out.extend(differences(golden[k], got[k], p))
    elif prefix.endswith("findings") and isinstance(golden, list) and isinstance(got, list) and golden != got \
            and list(map(_finding_key, golden)) != list(map(_finding_key, got)) \
            and sorted(map(_finding_key, golden)) == sorted(map(_finding_key, got)):
        # the same findings in another order (a new sort key): say so, then compare each with its match
        out.append(f"{prefix}: the same {len(got)} findings in another order")
        by_key = {_finding_key(f): f for f in golden}
        for f in got:
            out.extend(differences(by_key[_finding_key(f)], f, f"{prefix}[{f.get('rule')}: {f.get('title', '')[:60]}]"))
    elif isinstance(golden, list) and isinstance(got, list) and len(golden) == len(got):
        for i, (a, b) in enumerate(zip(golden, got)):
            out.extend(differences(a, b, f"{prefix}[{i}]"))
    elif golden != got:
        g, n = repr(golden), repr(got)
        out.append(f"{prefix}: {g[:200]} -> {n[:200]}")
    return out


def dumps(got: dict) -> str:
    """The golden file: one trace per block, one field / finding / table per line (a reviewable git diff)."""
    def line(v) -> str:
        return json.dumps(v, sort_keys=True, separators=(", ", ": "))

    blocks = []
    for key in sorted(got):
        fields = []
        for name, v in sorted(got[key].items()):
            if isinstance(v, list) and v and isinstance(v[0], dict) and name in ("findings", "models"):
                items = []
                for item in v:
                    if name == "models":
                        inner = ",\n".join(f"    {json.dumps(k)}: {line(x)}" for k, x in sorted(item.items()))
                        items.append("   {\n" + inner + "\n   }")
                    else:
                        items.append(f"   {line(item)}")
                fields.append(f"  {json.dumps(name)}: [\n" + ",\n".join(items) + "\n  ]")
            else:
                fields.append(f"  {json.dumps(name)}: {line(v)}")
        blocks.append(f" {json.dumps(key)}: {{\n" + ",\n".join(fields) + "\n }")
    text = "{\n" + ",\n".join(blocks) + "\n}\n"
    assert json.loads(text) == json.loads(json.dumps(got)), "golden layout lost data"
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the golden file(s) from this checkout")
    ap.add_argument("--shared", action="store_true", help="also the traces of PTPROF_SHARED_TRACES")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    jobs = [(DATA, GOLDEN)]
    if args.shared:
        root = shared_root()
        if root is None:
            print("equivalence: --shared needs PTPROF_SHARED_TRACES naming a folder", file=sys.stderr)
            return 2
        jobs.append((root, GOLDEN_SHARED))
    status = 0
    for root, golden_path in jobs:
        got = digests(root, progress=lambda k: print(f"  {k}", file=sys.stderr))
        if args.write:
            golden_path.write_text(dumps(got))
            print(f"wrote {golden_path.relative_to(REPO)}: {len(got)} traces")
            continue
        golden = json.loads(golden_path.read_text())
        diff = differences(golden, got)
        print(f"{golden_path.relative_to(REPO)}: {len(got)} traces, {len(diff)} difference(s)")
        for line in diff:
            print(f"  {line}")
        status |= bool(diff)
    return status


if __name__ == "__main__":
    sys.exit(main())

"""A fresh hostile corpus from the project's generators, run through `ptprof info` / `analyze` (issue 37).

    python tests/hostile/corpus.py generate OUT --seed 9137 [--seeds 4]   # the cases + OUT/manifest.json
    python tests/hostile/corpus.py run OUT [--repo REPO] [--timeout 60]  # -> OUT/results-<name>.json
    python tests/hostile/corpus.py table OUT/results-a.json [OUT/results-b.json]

Every class of every generator: gen_trace's kinds (seeds drawn from --seed, containers drawn from each seed),
gen_store's bundles and cache poisons, gen_fields' findings files, gen_index's index poisons, the numeric
settings, and a few big ones (a 200 MB name, 1 GiB of NUL padding, a 20,000-column nvml.csv). Each CLI run
is a fork of a warm interpreter of REPO (tests/cli_fork.py: the same main, exit code and output) under a
4 GiB address-space cap and a time limit; `run --repo` runs the same corpus against another checkout (the
code before a change). An outcome is clean (exit 0, or exit 2 with one stderr line), a traceback, a bad exit
or over the limit (time or memory).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve()
MEMORY = 4 << 30


def _add(manifest, cls, case, args, env=None):
    manifest.append({"class": cls, "case": case, "args": [str(a) for a in args], "env": env or {}})


def generate(out: Path, seed: int, seeds: int) -> None:
    sys.path.insert(0, str(HERE.parents[1]))
    from hostile import gen_fields, gen_index, gen_store, gen_trace
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    manifest: list[dict] = []
    traces = out / "traces"
    traces.mkdir(exist_ok=True)
    for kind in gen_trace.KINDS:
        for _ in range(seeds):
            s = rng.randrange(1 << 31)
            path = gen_trace.write_case(traces, kind, s)
            for cmd in ("info", "analyze"):
                _add(manifest, f"trace:{kind}", f"{kind}-{s}", [cmd, "--no-cache", path])
    for container in ("gz_header", "gz_multi", "gz_truncated"):
        for _ in range(seeds):
            s = rng.randrange(1 << 31)
            path = gen_trace.write_case(traces, "valid", s, container)
            _add(manifest, f"container:{container}", f"{container}-{s}", ["info", "--no-cache", path])
    bundles = out / "bundles"
    bundles.mkdir(exist_ok=True)
    for name, make in sorted(gen_store.BUNDLE_CASES.items()):
        _add(manifest, "bundle", name, ["analyze", "--no-cache", make(bundles)])
    cache_root = out / "cache"
    cache_root.mkdir(exist_ok=True)
    for how in gen_store.CACHE_POISONS:
        trace, cdir = gen_store.poisoned_cache(cache_root, how)
        cls = "cache_field" if how in gen_fields.FIELD_POISONS else "cache"
        _add(manifest, cls, how, ["info", "--json", trace], {"PTPROF_CACHE_DIR": str(cdir)})
    for how in gen_index.INDEX_POISONS:
        trace, cdir, _entry = gen_index.poisoned_index(cache_root, how)
        _add(manifest, "index", how, ["info", trace], {"PTPROF_CACHE_DIR": str(cdir)})
    _findings(out, manifest, None)
    for env in ({"PTPROF_MAX_INFLATE_BYTES": "abc"}, {"PTPROF_MAX_INFLATE_BYTES": "-1"}, {"PTPROF_WORKERS": "x"},
                {"PTPROF_CACHE_MAX_BYTES": "inf"}, {"PTPROF_CHUNKS_PER_WORKER": "0"}):
        bomb = out / "traces" / "bomb300.pt.trace.json.gz"
        if not bomb.exists():
            bomb.write_bytes(gen_trace._bomb("gz", 300 << 20))
        _add(manifest, "env", ",".join(f"{k}={v}" for k, v in env.items()), ["info", "--no-cache", bomb], env)
    _names(out, manifest, rng)
    _big(out, manifest)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=0))
    print(f"{len(manifest)} runs in {len(set(m['class'] for m in manifest))} classes -> {out / 'manifest.json'}")


def _findings(out: Path, manifest: list, repo: Path | None) -> None:
    """`diff`'s findings files, written by REPO's own CLI (their digest covers the rules' source: another
    checkout's files are never read, only re-analysed)."""
    import shutil

    from hostile import gen_fields, gen_store
    findings_root = out / "findings"
    shutil.rmtree(findings_root, ignore_errors=True)
    findings_root.mkdir()

    def repo_cli(args, env=None):
        return subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=repo, capture_output=True, text=True,
                              env={**os.environ, **(env or {}), "PYTHONPATH": str(repo)}, timeout=600)
    for how in gen_fields.FINDINGS_POISONS:
        a, b, cdir = gen_fields.poisoned_findings(findings_root, how, gen_store.run_cli if repo is None else repo_cli)
        _add(manifest, "findings", how, ["diff", a, b], {"PTPROF_CACHE_DIR": str(cdir)})


def findings_for(out: Path, repo: Path) -> None:
    """Rewrite OUT's findings cases with REPO's CLI (for `run --repo REPO --only findings`)."""
    sys.path.insert(0, str(HERE.parents[1]))
    manifest = [m for m in json.loads((out / "manifest.json").read_text()) if m["class"] != "findings"]
    _findings(out, manifest, repo.resolve())
    (out / "manifest.json").write_text(json.dumps(manifest, indent=0))


def _names(out: Path, manifest: list, rng: random.Random) -> None:
    """File and folder names that are not UTF-8 (and one with a control character), with the cache on."""
    import shutil

    from hostile.gen_store import SMALL_TRACE
    for raw in (b"r\xffank0", b"\xe9t\xe9", b"caf\xc3", b"bell\x07"):
        folder = out / "names" / os.fsdecode(raw + b"-" + str(rng.randrange(1000)).encode())
        folder.mkdir(parents=True, exist_ok=True)
        trace = folder / os.fsdecode(raw + b".pt.trace.json.gz")
        shutil.copy(SMALL_TRACE, trace)
        env = {"PTPROF_CACHE_DIR": str(out / "names-cache")}
        for args in (["info", trace], ["info", "--json", trace], ["analyze", trace], ["info", folder]):
            _add(manifest, "names", repr(raw), args, env)


def _big(out: Path, manifest: list) -> None:
    """The few inputs whose cost, not their shape, was the problem."""
    import gzip

    from hostile.gen_store import SMALL_TRACE, _nvml_wide
    from hostile.gen_trace import gzip_member, write_long_name
    big = out / "big"
    big.mkdir(exist_ok=True)
    name200 = write_long_name(big / "name200mb.pt.trace.json", seed=7)
    padded = big / "nul_padded_1g.pt.trace.json"
    with open(padded, "wb") as fh:
        fh.write(gzip.decompress(SMALL_TRACE.read_bytes()))
        fh.truncate(1 << 30)
    fname = big / "fname10mb.pt.trace.json.gz"
    fname.write_bytes(gzip_member(gzip.decompress(SMALL_TRACE.read_bytes()), fname=b"n" * (10 << 20)))
    wide = _nvml_wide(big)
    for path, cls in ((name200, "big:name_200mb"), (padded, "big:nul_padding_1g"), (fname, "big:gzip_fname_10mb"),
                      (wide, "big:nvml_20000_columns")):
        for cmd in ("info", "analyze"):
            _add(manifest, cls, path.name, [cmd, "--no-cache", path])


def run(out: Path, repo: Path, timeout: float, name: str, only: str | None = None) -> Path:
    sys.path.insert(0, str(repo / "tests"))
    import cli_fork  # the target checkout's: its own core.cli, warm
    manifest = [m for m in json.loads((out / "manifest.json").read_text()) if only is None or m["class"] == only]
    results = []
    for k, m in enumerate(manifest):
        env = {**os.environ, "PYTHONPATH": str(repo), "PTPROF_CACHE_DIR": str(out / "cache-run"), **m["env"]}
        t = time.monotonic()
        try:
            proc = cli_fork.run(m["args"], env, repo, MEMORY, timeout)
            outcome = _outcome(proc, m["env"])
            tail = proc.stderr.strip()[-300:]
        except subprocess.TimeoutExpired:
            outcome, tail = "over_limit", f"no answer in {timeout:.0f} s"
        results.append({**m, "outcome": outcome, "seconds": round(time.monotonic() - t, 2), "detail": tail})
        if outcome != "clean":
            print(f"[{k + 1}/{len(manifest)}] {m['class']} {m['case']} {m['args'][0]}: {outcome} {tail[-160:]!r}",
                  flush=True)
    path = out / f"results-{name}.json"
    path.write_text(json.dumps(results, indent=0))
    return path


def _outcome(proc, env: dict) -> str:
    """clean: exit 0, or exit 2 with one line (besides one warning per bad setting the case sets on purpose)."""
    if "Traceback" in proc.stderr:
        return "traceback"
    if proc.returncode in (-9, 137) or "MemoryError" in proc.stderr or "out of memory" in proc.stderr:
        return "over_limit"
    settings = [k for k in env if k != "PTPROF_CACHE_DIR"]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not any(ln.startswith(f"{k}=") for k in settings)]
    if proc.returncode == 0 or (proc.returncode == 2 and len(lines) == 1):
        return "clean"
    return f"exit_{proc.returncode}"


def table(paths: list[Path]) -> str:
    runs = [json.loads(p.read_text()) for p in paths]
    classes = sorted({r["class"] for res in runs for r in res})
    head = "| class | runs | " + " | ".join(f"{p.stem.removeprefix('results-')}: clean / failures" for p in paths) + " |"
    lines = [head, "|" + "---|" * (2 + len(paths))]
    totals = [Counter() for _ in paths]
    for cls in classes:
        cells = []
        n = 0
        for res, tot in zip(runs, totals):
            c = Counter(r["outcome"] for r in res if r["class"] == cls)
            n = sum(c.values())
            tot.update(c)
            bad = ", ".join(f"{v} {k}" for k, v in sorted(c.items()) if k != "clean")
            cells.append(f"{c['clean']} / {bad or '0'}")
        lines.append(f"| {cls} | {n} | " + " | ".join(cells) + " |")
    cells = [f"{t['clean']} / " + (", ".join(f"{v} {k}" for k, v in sorted(t.items()) if k != "clean") or "0")
             for t in totals]
    lines.append(f"| **all** | {sum(totals[0].values())} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--seed", type=int, default=9137)
    g.add_argument("--seeds", type=int, default=4, help="cases per trace kind")
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--repo", type=Path, default=HERE.parents[2])
    r.add_argument("--timeout", type=float, default=60)
    r.add_argument("--name", default="after")
    r.add_argument("--only", help="one class (re-run it)")
    f = sub.add_parser("findings", help="re-write the findings cases with another checkout's CLI")
    f.add_argument("out", type=Path)
    f.add_argument("--repo", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("results", type=Path, nargs="+")
    a = ap.parse_args()
    if a.cmd == "generate":
        generate(a.out, a.seed, a.seeds)
    elif a.cmd == "findings":
        findings_for(a.out, a.repo)
    elif a.cmd == "run":
        print(run(a.out, a.repo.resolve(), a.timeout, a.name, a.only))
    else:
        print(table(a.results))


if __name__ == "__main__":
    main()

"""Property test over the trace loader (issue 14): every hostile trace (tests/hostile/gen_trace.py)
gives a TraceSet or a TraceParseError with a one-line reason, on both decode paths (C scanner,
msgspec), in-process and chunked / parallel, within a time limit and an address-space cap (each case
in a worker process: trace_pool.py). Never another exception, a crash, a hang or unbounded memory.

Default run: a few hundred cases (PTPROF_HOSTILE_CASES); `-m slow` / PTPROF_SLOW=1: 10,000.
Hypothesis prints the failing (kind, seed, container, config); `gen_trace.write_case` rebuilds the file.
"""
from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hostile.gen_trace import CONTAINERS, KINDS, generate, write_case
from hostile.trace_pool import CONFIGS, Worker, acceptable

DEFAULT_CASES = int(os.environ.get("PTPROF_HOSTILE_CASES", "200"))
SLOW_CASES = 10_000
CASE_TIMEOUT_S = 120.0  # generous: the machine may be loaded; a hang is minutes, not seconds
ADDRESS_SPACE_BYTES = 3 << 30  # beyond what the worker's imports use

cases = st.tuples(st.sampled_from(KINDS), st.integers(0, 2**31 - 1),
                  st.one_of(st.none(), st.sampled_from(CONTAINERS)), st.sampled_from(sorted(CONFIGS)),
                  st.booleans())


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hostile-cache")
    workers = {name: Worker(name, ADDRESS_SPACE_BYTES, str(cache)) for name in CONFIGS}
    yield workers
    for w in workers.values():
        w.close()


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile-traces")


def check_case(pool, case_dir, kind, seed, container, config, in_folder) -> None:
    folder = case_dir / f"case-{kind}-{seed}"
    folder.mkdir(exist_ok=True)
    try:
        path = write_case(folder, kind, seed, container)
        if in_folder:  # a multi-rank folder with one good rank: must load (the bad file is a warning)
            (folder / "rank0.pt.trace.json").write_bytes(generate("valid", seed, "json")[1])
            path.rename(folder / f"rank1.pt.trace{''.join(path.suffixes[-2:]) if path.suffix != '.json' else '.json'}")
            path = folder
        result = pool[config].run(path, "load", CASE_TIMEOUT_S)
        where = f"kind={kind} seed={seed} container={container} config={config} folder={in_folder}"
        assert acceptable(result) is None, f"{where}: {acceptable(result)}"
        if in_folder:
            assert result["outcome"] == "traceset", f"{where}: the good rank was not loaded: {result}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(3600)
@settings(max_examples=DEFAULT_CASES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases)
def test_hostile_traces_load_or_fail_in_one_line(pool, case_dir, case):
    check_case(pool, case_dir, *case)


@pytest.mark.slow
@pytest.mark.timeout(6 * 3600)
@settings(max_examples=SLOW_CASES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases)
def test_hostile_traces_many(pool, case_dir, case):
    check_case(pool, case_dir, *case)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("mode", ["info", "analyze", "report"])
def test_cli_on_the_corpus_exits_0_or_2_with_one_line(pool, case_dir, mode):
    """`ptprof info/analyze/report` on every kind (plain and gzip): exit 0 or 2, at most one stderr line."""
    failures = []
    for kind in KINDS:
        for seed, container in ((1, "json"), (2, None)):
            path = write_case(case_dir, kind, seed, container)
            result = pool["scanner"].run(path, mode, CASE_TIMEOUT_S)
            problem = acceptable(result)
            if problem:
                failures.append(f"{mode} kind={kind} seed={seed} container={container}: {problem}")
            path.unlink()
    assert not failures, "\n".join(failures)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["valid", "truncate", "flip", "deep", "nan_inf", "wrong_shape"])
def test_the_real_cli_process_exits_0_or_2_with_one_line(tmp_path, kind):
    """The same contract from a real `ptprof` process (exit code, stderr as the user sees it)."""
    import subprocess
    import sys

    from helpers import REPO
    path = write_case(tmp_path, kind, 7, "json")
    for command in ("info", "analyze"):
        out = subprocess.run([sys.executable, "-m", "core.cli", command, "--no-cache", str(path)], cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        result = {"outcome": "cli", "rc": out.returncode, "stderr": out.stderr}
        assert acceptable(result) is None, f"{command} {kind}: {acceptable(result)}"

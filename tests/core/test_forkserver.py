"""A forkserver killed and collected elsewhere (ECHILD on its waitpid) no longer fails every later pool of
the process: core.forkserver.revive() before a forkserver pool starts a fresh one. Seen in CI as the window's
Compare of a multi-rank run failing with "ChildProcessError: [Errno 10] No child processes"."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                                reason="no forkserver start method here")

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time, multiprocessing as mp
    from multiprocessing import forkserver as fs
    from concurrent.futures import ProcessPoolExecutor
    from core import forkserver
    from core.ranks.executor import LocalPool

    def twice(x):
        return 2 * x

    if __name__ == "__main__":
        ctx = mp.get_context("forkserver")
        with ProcessPoolExecutor(1, mp_context=ctx) as p:
            assert p.submit(twice, 2).result() == 4
        assert not forkserver.revive()  # a running one is left alone
        pid = fs._forkserver._forkserver_pid
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)  # collected by someone else
        if sys.argv[1] == "stdlib":
            try:
                with ProcessPoolExecutor(1, mp_context=ctx) as p:
                    p.submit(twice, 3).result()
            except ChildProcessError:
                print("ECHILD")
            sys.exit(0)
        import threading
        threading.Thread(target=time.sleep, args=(2,)).start()  # not single-threaded: LocalPool takes forkserver
        pool = LocalPool(2)
        assert pool.method == "forkserver", pool.method
        print(sorted(r for _, r in pool.map_unordered(twice, [1, 2, 3])))
        pool.close()
        assert fs._forkserver._forkserver_pid not in (None, pid)
""")


def _run(tmp_path, mode):
    script = tmp_path / "fs_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), *sys.path]))
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=120,
                          env=env, cwd=os.getcwd())


def test_the_stdlib_fails_every_later_pool_after_its_forkserver_was_collected(tmp_path):
    r = _run(tmp_path, "stdlib")
    assert r.returncode == 0 and "ECHILD" in r.stdout, r.stderr[-2000:]


def test_a_pool_after_a_collected_forkserver_starts_a_fresh_one(tmp_path):
    r = _run(tmp_path, "ours")
    assert r.returncode == 0 and "[2, 4, 6]" in r.stdout, r.stderr[-2000:]

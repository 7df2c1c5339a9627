"""CPU seconds from `python main.py` to the window's first paint, side by side for two checkouts.

    python bench/bench_startup.py [--runs 7] [--before DIR] [--sample]

Each run starts a fresh interpreter that runs the checkout's `gui.app.main()` (exactly what `python main.py`
does) with a paint hook: an application-wide event filter that, at the first Paint event of a top-level
window, reads the process's CPU time (user + system, getrusage, the interpreter's own start included) and the
wall time since the process started, and exits. Nothing in the app is changed for the measurement, so an old
checkout (`--before DIR`, e.g. `git worktree add /tmp/before main~3` or a `git archive` of it) is measured
the same way. `--sample` lets the app open its bundled sample as usual (the default passes `--start-page`,
which paints the same window without a trace; the paint comes first either way when the app defers loading).

Offscreen by default (QT_QPA_PLATFORM=offscreen, as the tests); with DISPLAY set and `--x11` it uses X (Xvfb).
Prints the median, min and max of each checkout and the ratio; say the machine's load (`uptime`) with it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HOOK = r"""
import json, os, resource, sys, time
t_start = float(os.environ["PTPROF_BENCH_T0"])
sys.argv = ["main.py"] + sys.argv[1:]
sys.path.insert(0, os.getcwd())
from PySide6 import QtCore, QtWidgets

def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime

class FirstPaint(QtCore.QObject):
    def eventFilter(self, obj, ev):
        if ev.type() == QtCore.QEvent.Type.Paint and isinstance(obj, QtWidgets.QWidget) and obj.window().isVisible():
            print("BENCH " + json.dumps({"cpu_s": cpu(), "wall_s": time.time() - t_start,
                                         "modules": len(sys.modules),
                                         "heavy": sorted(m for m in ("superqt", "pyqtgraph", "numpy", "core.rules",
                                                                     "core.trace.model") if m in sys.modules)}),
                  flush=True)
            os._exit(0)
        return False

_orig_init = QtWidgets.QApplication.__init__
_filter = FirstPaint()

def _init(self, *a, **k):
    _orig_init(self, *a, **k)
    self.installEventFilter(_filter)

QtWidgets.QApplication.__init__ = _init
from gui.app import main
sys.exit(main())
"""


def one_run(repo: Path, args: list[str], x11: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo), PTPROF_BENCH_T0="0")
    if not x11:
        env["QT_QPA_PLATFORM"] = "offscreen"
    env["PTPROF_SETTINGS_DIR"] = str(Path(os.environ.get("TMPDIR", "/tmp")) / f"ptprof-bench-startup-{os.getpid()}")
    import time
    env["PTPROF_BENCH_T0"] = repr(time.time())
    r = subprocess.run([sys.executable, "-c", HOOK, *args], cwd=repo, env=env, capture_output=True, text=True,
                       timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"no first paint from {repo} (rc {r.returncode}): {r.stderr[-2000:]}")
    return json.loads(line[6:])


def summary(name: str, rows: list[dict]) -> dict:
    cpu = [r["cpu_s"] for r in rows]
    wall = [r["wall_s"] for r in rows]
    out = {"checkout": name, "runs": len(rows), "cpu_median_s": round(statistics.median(cpu), 3),
           "cpu_min_s": round(min(cpu), 3), "cpu_max_s": round(max(cpu), 3),
           "wall_median_s": round(statistics.median(wall), 3), "modules": rows[0]["modules"],
           "heavy_imported_before_paint": rows[0]["heavy"]}
    print(f"{name:>8}: CPU to first paint median {out['cpu_median_s']:.3f} s (min {out['cpu_min_s']:.3f}, max "
          f"{out['cpu_max_s']:.3f}; wall median {out['wall_median_s']:.3f} s; {out['modules']} modules; heavy "
          f"before paint: {', '.join(out['heavy_imported_before_paint']) or 'none'})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", type=Path, default=None, help="another checkout to measure side by side")
    ap.add_argument("--sample", action="store_true", help="open the bundled sample (default: --start-page)")
    ap.add_argument("--x11", action="store_true", help="use $DISPLAY (Xvfb) instead of the offscreen platform")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    args = [] if a.sample else ["--start-page"]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; {a.runs} runs each; "
          f"python main.py {' '.join(args)}; {'X11' if a.x11 else 'offscreen'}")
    results = []
    order = ([("before", a.before)] if a.before else []) + [("after", REPO)]
    rows = {name: [] for name, _ in order}
    for _name, repo in order:
        one_run(repo, args, a.x11)  # warm-up, not counted
    for _ in range(a.runs):  # interleaved: a load spike hits both sides alike
        for name, repo in order:
            rows[name].append(one_run(repo, args, a.x11))
    for name, _ in order:
        results.append(summary(name, rows[name]))
    if a.before:
        ratio = results[1]["cpu_median_s"] / max(results[0]["cpu_median_s"], 1e-9)
        print(f"after / before: {ratio:.2f}x CPU to first paint")
    if a.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

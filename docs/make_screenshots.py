"""Render the key screens offscreen in both themes: `python docs/make_screenshots.py --out DIR`.

One PNG per screen and theme (`<screen>.<theme>.png`): the start page, the sample trace, gpt_big and
the compiled trace (shared traces; skipped when absent), a selected finding with its evidence, the
Kernels table, the per-step breakdown, the HTA tab, a memory snapshot, a multi-rank folder, and the
live run panel fed by a fake GPU sampler (with and without a GPU). Each theme renders in its own
process (a Qt palette is per process). `--only a,b` limits the screens; `--traces DIR` says where
the shared traces are (default $PTPROF_SHARED_TRACES or ../shared/traces). Prints one line per file.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SIZE = (1904, 1040)  # a 1920x1080 screen's available area, less the window frame


def shared_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("PTPROF_SHARED_TRACES") or REPO.parent / "shared" / "traces")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the PNGs")
    ap.add_argument("--theme", default="light,dark", help="comma-separated: light, dark")
    ap.add_argument("--only", default="", help="comma-separated screen names (default: all)")
    ap.add_argument("--traces", default=None, help="folder of the shared traces")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    themes = [t for t in a.theme.split(",") if t]
    if not a.child:  # one process per theme (a theme is set once per QApplication), side by side
        procs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", "--out", str(out),
                                   "--theme", theme, "--only", a.only] + (["--traces", a.traces] if a.traces else []))
                 for theme in themes]
        rc = 0
        for proc in procs:
            rc |= proc.wait()
        return rc
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import tempfile
    # settings (recent files) in a throwaway folder: rendering must not rewrite the user's recent list
    os.environ["PTPROF_SETTINGS_DIR"] = tempfile.mkdtemp(prefix="ptprof-shots-")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from screens import render_all
    only = {s for s in a.only.split(",") if s}
    t0 = time.time()
    written = render_all(out, themes[0], shared_dir(a.traces), only)
    for p in written:
        print(p)
    print(f"{len(written)} screenshot(s) in {time.time() - t0:.1f} s ({themes[0]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

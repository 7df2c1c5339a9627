"""bench_timeline.py --ui-stalls under cProfile on the UI thread only (worker threads are not profiled): where the
UI thread spends its CPU while a run opens and after (py-spy is not available here).

    QT_QPA_PLATFORM=offscreen python bench/ui_profile.py --ui-stalls --open --app TRACE_OR_FOLDER
Prints the bench's line, then the UI thread's top functions of the gui/ and core/ packages by cumulative time.
"""
import cProfile
import io
import os
import pstats
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
if __name__ == "__main__":
    import bench_timeline
    sys.argv = ["bench_timeline"] + sys.argv[1:]
    prof = cProfile.Profile()
    prof.enable()
    try:
        bench_timeline.main()
    finally:
        prof.disable()
        if os.environ.get("PROF_OUT"):  # for pstats queries (callees of one function, ...)
            prof.dump_stats(os.environ["PROF_OUT"])
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out).sort_stats("cumulative")
        st.print_stats(r"(gui|core)/", 60)
        print(out.getvalue()[-12000:])

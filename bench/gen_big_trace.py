"""Moved to tests/gen_big_trace.py; runnable and importable from here as before (bench/from_tests.py)."""
import sys

from from_tests import reexport

_module = reexport("gen_big_trace", globals())

if __name__ == "__main__":
    sys.exit(_module.main())

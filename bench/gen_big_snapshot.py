"""Moved to tests/gen_big_snapshot.py; runnable and importable from here as before (bench/from_tests.py)."""
import sys

from from_tests import reexport

_module = reexport("gen_big_snapshot", globals())

if __name__ == "__main__":
    sys.exit(_module.main())

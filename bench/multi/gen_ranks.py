"""Moved to tests/gen_ranks.py; runnable and importable from here as before (bench/from_tests.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from from_tests import reexport  # noqa: E402

_module = reexport("gen_ranks", globals())

if __name__ == "__main__":
    sys.exit(_module.main())

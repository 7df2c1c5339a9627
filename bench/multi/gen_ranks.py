"""Moved to tests/gen_ranks.py (the tests use it, and tests never import bench/); this keeps
`python bench/multi/gen_ranks.py ...` and `import gen_ranks` working for the bench scripts and device runs."""
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_tests_gen_ranks", Path(__file__).resolve().parents[2] / "tests" / "gen_ranks.py")
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module  # dataclasses and pickle look their module up
_spec.loader.exec_module(_module)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})

if __name__ == "__main__":
    sys.exit(_module.main())

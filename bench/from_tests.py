"""A generator that moved to tests/ (the tests use it, and tests never import bench/) kept runnable from bench/:
`python bench/gen_big_trace.py ...` and `import gen_big_trace` in the bench scripts and device runs."""
import importlib.util
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def reexport(name: str, into: dict):
    """tests/<name>.py loaded as the module `_tests_<name>`, its public names copied into `into` (the wrapper's
    globals); returns the module (its `main` runs the command line)."""
    spec = importlib.util.spec_from_file_location(f"_tests_{name}", TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickle look their module up
    spec.loader.exec_module(module)
    into.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return module

"""What a run bundle says about its DataLoader (the workers are other processes: not in the trace).

The runner's `loader_schedule` notice in events.jsonl carries `workers` (num_workers of the deepest
DataLoader); run.json `environment.cpus` the CPUs the script may run on. Read by the unprofiled step
(core/analysis/unprofiled.py) and the DataLoader what-if (core/rules/whatif_data.py).
"""
from __future__ import annotations

import json
from pathlib import Path


def bundle_loader_facts(path: str | None) -> tuple[int | None, int | None]:
    """(num_workers of the run's DataLoader, CPUs of the run) from a bundle's events.jsonl / run.json."""
    workers = cpus = None
    if not path:
        return None, None
    root = Path(path)
    if root.is_file():
        root = root.parent.parent if root.parent.name == "traces" else root.parent
    try:
        from core.analysis.health import valid
        from core.runner.protocol import read_events
        ev_path = root / "events.jsonl"
        if ev_path.is_file():
            for ev in read_events(str(ev_path)):
                if not valid(ev):
                    continue
                if ev.get("type") == "notice" and ev.get("code") == "loader_schedule" \
                        and isinstance(ev.get("workers"), int) and 0 < ev["workers"] < 4096:
                    workers = ev["workers"]
                elif ev.get("type") == "start" and isinstance(ev.get("cpus"), int) and 0 < ev["cpus"] < 1 << 16:
                    cpus = ev["cpus"]
    except (OSError, ValueError, ImportError):
        pass
    if cpus is None:
        try:
            env = json.loads((root / "run.json").read_text()).get("environment") or {}
            c = env.get("cpus") if isinstance(env, dict) else None
            cpus = c if isinstance(c, int) and 0 < c < 1 << 16 else None
        except (OSError, ValueError, AttributeError):
            pass
    return workers, cpus

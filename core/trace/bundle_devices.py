"""Device facts for a run bundle's traces that lack Kineto's deviceProperties (CPU-side traces of a GPU
run, some torch builds, partial flushes): taken from run.json, where the runner records them.

- `environment.device_properties`: the child's torch.cuda.get_device_properties per visible device, in
  Kineto's keys (id, name, totalGlobalMem, computeMajor/Minor, numSms, ...; core/runner/child.py);
- `gpu.facts`: NVML in the launcher: total memory and peak SM / memory clocks per GPU of the run, numbered
  as the run numbers them (core/gpu/backend.py device_facts).
Each filled entry says `"source": "run.json"`, so a reader can tell it from the trace's own.
"""
from __future__ import annotations


def device_properties(run: dict | None) -> tuple[dict, ...]:
    if not isinstance(run, dict):
        return ()
    env = run.get("environment") if isinstance(run.get("environment"), dict) else {}
    gpu = run.get("gpu") if isinstance(run.get("gpu"), dict) else {}
    torch_props = [d for d in env.get("device_properties") or () if isinstance(d, dict) and isinstance(d.get("id"), int)]
    facts = {f["index"]: f for f in gpu.get("facts") or () if isinstance(f, dict) and isinstance(f.get("index"), int)}
    out: dict[int, dict] = {}
    for d in torch_props:
        out[d["id"]] = dict(d)
    for index, f in facts.items():
        d = out.setdefault(index, {"id": index})
        if f.get("name") and "name" not in d:
            d["name"] = f["name"]
        if isinstance(f.get("total_memory_bytes"), int) and "totalGlobalMem" not in d:
            d["totalGlobalMem"] = f["total_memory_bytes"]
        for key, name in (("max_sm_clock_mhz", "maxSmClockMHz"), ("max_mem_clock_mhz", "maxMemClockMHz")):
            if isinstance(f.get(key), (int, float)):
                d[name] = f[key]
    from core.trace.devprops import device_props  # run.json is the user's file: the same checks as a trace's
    return device_props([{**d, "source": "run.json"} for _, d in sorted(out.items())])

def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=9223372036854775807,
                           device=None):
    return None


def _snapshot(device=None):
    return {"segments": [], "device_traces": []}

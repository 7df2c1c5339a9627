"""torch._C: the C extension; nothing of it is faked (its optional hooks, e.g. the OOM observer, are absent)."""

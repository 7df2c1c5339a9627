from torch._logging import _internal  # noqa: F401


def set_logs(graph_breaks=False, recompiles=False, **kwargs):
    _internal.enabled.update(graph_breaks=graph_breaks, recompiles=recompiles)

"""`ptprof mcp`: a Model Context Protocol server on stdio over the same analysis (core/mcp_tools.py).

Needs the official MCP Python SDK (`pip install "ptprof-gui[mcp]"`, mcp >= 2); without it one line, exit 2.
stdout belongs to the protocol: nothing else is printed there (logging goes to stderr). Each tool runs in a
worker thread so a long load never stalls the session; a bad argument or input answers a tool error with one
line (never a traceback on the wire), an unexpected failure the same with its type named.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

INSTRUCTIONS = (
    "ptprof reads PyTorch profiler traces (Kineto JSON, TensorBoard log dirs, multi-rank dirs, ptprof run "
    "bundles). Start with open_trace(path) for the summary, then findings(path) for ranked problems with cost, "
    "saving per step, source line and fix; step_breakdown / top_kernels / top_ops / memory_summary / slices "
    "for detail; diff(a, b) to compare two runs; record(...) to profile a script into a new bundle. Times in "
    "answers are ms unless a key says _ns or _us; every list says in 'cut' when it was shortened.")


def add_arguments(p) -> None:
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   help="server log level (stderr)")


def build_server():
    """The MCPServer with every tool registered (tests list and call them through a real client)."""
    import anyio.to_thread
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from core import mcp_tools as tools

    server = MCPServer(name="ptprof", instructions=INSTRUCTIONS, version=_version())

    async def call(fn, *args) -> dict[str, Any]:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except tools.ToolInputError as exc:
            raise ToolError(str(exc)) from None
        except (OSError, ValueError, MemoryError, RecursionError) as exc:
            raise ToolError(f"{fn.__name__}: {type(exc).__name__}: {tools._text(exc, 300)}") from None

    @server.tool(description="Summary of a trace, TensorBoard dir, multi-rank dir or run bundle: steps, "
                             "effective step time, what bounds it, GPUs, findings count, health checks.")
    async def open_trace(path: str) -> dict[str, Any]:
        return await call(tools.open_trace, path)

    @server.tool(description="Ranked findings (problems) with severity, title, time lost, saving per step if "
                             "fixed, the user's source line, the fix, its summary facts (counts, totals, sync sites) "
                             "and evidence slice rows. top <= 200.")
    async def findings(path: str, top: int = 10) -> dict[str, Any]:
        return await call(tools.findings, path, top)

    @server.tool(description="Per-rank mean time per step in each category (compute, communication, memcpy, "
                             "DataLoader, compile, sync/host/kernel waits, idle) and the per-step table.")
    async def step_breakdown(path: str) -> dict[str, Any]:
        return await call(tools.step_breakdown, path)

    @server.tool(description="GPU kernels, memcpy and memset by total time: calls, total/mean/p95 us, share. "
                             "n <= 200.")
    async def top_kernels(path: str, n: int = 20) -> dict[str, Any]:
        return await call(tools.top_kernels, path, n)

    @server.tool(description="CPU operators by inclusive host time with self time and the GPU time they "
                             "launched; by_shape groups by input shapes too. n <= 200.")
    async def top_ops(path: str, n: int = 20, by_shape: bool = False) -> dict[str, Any]:
        return await call(tools.top_ops, path, n, by_shape)

    @server.tool(description="Peak allocated / reserved memory per device and rank, against device memory.")
    async def memory_summary(path: str) -> dict[str, Any]:
        return await call(tools.memory_summary, path)

    @server.tool(description="Timeline slices overlapping [t0_ns, t1_ns) (ns from the trace start), longest "
                             "first; track: substring of a track label ('stream 7', 'thread'); limit <= 500.")
    async def slices(path: str, t0_ns: int, t1_ns: int, track: str | None = None, limit: int = 100,
                     rank: int | None = None) -> dict[str, Any]:
        return await call(tools.slices, path, t0_ns, t1_ns, track, limit, rank)

    @server.tool(description="Compare run A (baseline) with run B: step time change with significance, "
                             "breakdown, largest kernel/op changes, findings new/gone, memory.")
    async def diff(a: str, b: str) -> dict[str, Any]:
        return await call(tools.diff, a, b)

    @server.tool(description="Profile a training script with ptprof record into the bundle folder `out` "
                             "(new, empty or an old bundle); returns the bundle path. host: an SSH host.")
    async def record(script: str, out: str, args: list[str] | None = None, python: str | None = None,
                     cwd: str | None = None, host: str | None = None, wait: int = 1, warmup: int = 1,
                     active: int = 3, stop_after_window: bool = True, timeout_s: float = 900) -> dict[str, Any]:
        return await call(tools.record, script, out, args, python, cwd, host, wait, warmup, active,
                          stop_after_window, timeout_s)

    return server


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("ptprof-gui")
    except Exception:  # noqa: BLE001 - not installed (a checkout on PYTHONPATH)
        return "0"


def run(args) -> int:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        print('ptprof: the MCP server needs the MCP SDK: pip install "mcp>=2"  (or the [mcp] extra)',
              file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level, stream=sys.stderr, force=True)
    build_server().run("stdio")
    return 0

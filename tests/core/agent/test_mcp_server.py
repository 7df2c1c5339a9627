"""`ptprof mcp` driven through the official MCP client over stdio (a real client and a real server process,
not calls into our functions): the tool list, every tool on the test traces, the size bounds, hostile arguments
answered as tool errors (never a crash or a hang)."""
from __future__ import annotations

import json
import os
import sys

import pytest
from helpers import REPO, shared_trace

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra (installed by the test extra)")
anyio = pytest.importorskip("anyio")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from core.mcp_tools import MAX_ANSWER_BYTES  # noqa: E402

TOOLS = {"open_trace", "findings", "step_breakdown", "top_kernels", "top_ops", "memory_summary", "slices",
         "diff", "record"}


def with_session(body, env_extra: dict | None = None):
    """Start `python -m core.cli mcp` as the client does, run `body(session)` in one session."""
    env = {"PYTHONPATH": str(REPO), "PTPROF_CACHE_DIR": os.environ.get("PTPROF_CACHE_DIR", ""),
           "HOME": os.environ.get("HOME", "/tmp"), "PATH": os.environ.get("PATH", "")}
    env.update(env_extra or {})
    params = StdioServerParameters(command=sys.executable, args=["-m", "core.cli", "mcp"], env=env, cwd=str(REPO))

    async def main():
        with anyio.fail_after(180):
            async with stdio_client(params) as streams, ClientSession(*streams) as session:
                await session.initialize()
                return await body(session)
    return anyio.run(main)


def answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert len(text.encode()) <= MAX_ANSWER_BYTES + 1024, len(text)
    return json.loads(text)


def test_tools_answer_on_real_traces():
    issues = str(shared_trace("gpu_issues.pt.trace.json.gz"))
    clean = str(shared_trace("gpu_clean.pt.trace.json.gz"))

    async def body(s):
        listed = {t.name for t in (await s.list_tools()).tools}
        out = {"tools": listed}
        out["open"] = answer(await s.call_tool("open_trace", {"path": issues}))
        out["findings"] = answer(await s.call_tool("findings", {"path": issues, "top": 3}))
        out["breakdown"] = answer(await s.call_tool("step_breakdown", {"path": issues}))
        out["kernels"] = answer(await s.call_tool("top_kernels", {"path": issues, "n": 5}))
        out["ops"] = answer(await s.call_tool("top_ops", {"path": issues, "n": 5, "by_shape": True}))
        out["memory"] = answer(await s.call_tool("memory_summary", {"path": issues}))
        out["slices"] = answer(await s.call_tool("slices", {"path": issues, "t0_ns": 0, "t1_ns": 10**12,
                                                            "track": "stream", "limit": 7}))
        out["big"] = answer(await s.call_tool("slices", {"path": issues, "t0_ns": 0, "t1_ns": 10**12,
                                                         "limit": 10**9}))
        out["diff"] = answer(await s.call_tool("diff", {"a": issues, "b": clean}))
        return out

    out = with_session(body)
    assert out["tools"] >= TOOLS
    o = out["open"]
    assert o["steps"] == 5 and o["bound"] in ("cpu", "gpu", "sync", "data") and o["gpus"] == [0]
    assert o["device_names"] == ["NVIDIA H200"] and o["effective_step_ms"] > 0
    f = out["findings"]
    assert f["total"] == o["findings"] and len(f["findings"]) == 3 and f["cut"]["findings"]["total"] == f["total"]
    top = f["findings"][0]
    assert top["rule"] and top["fix"] and top["evidence_rows"] and top["severity"] in ("error", "warning", "info")
    assert out["breakdown"]["ranks"][0]["steps"] == 5 and len(out["breakdown"]["steps"]) == 5
    assert len(out["kernels"]["kernels"]) == 5 and out["kernels"]["total"] > 5
    assert all(k["total_us"] >= out["kernels"]["kernels"][-1]["total_us"] for k in out["kernels"]["kernels"])
    assert out["ops"]["by_shape"] and "input_dims" in out["ops"]["ops"][0]
    assert out["memory"]["devices"][0]["peak_allocated_mb"] > 0
    sl = out["slices"]["slices"]
    assert len(sl) == 7 and all("stream" in x["track"] for x in sl)
    assert [x["dur_ns"] for x in sl] == sorted((x["dur_ns"] for x in sl), reverse=True)
    big = out["big"]
    assert big["cut"]["slices"]["total"] == big["total"] > len(big["slices"])  # clamped and bounded, and says so
    d = out["diff"]
    assert d["a"]["steps"] == 5 and "delta_ns" in d["step"] and d["verdict"]


def test_hostile_arguments_are_tool_errors(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(1000):
        (many / f"f{i}.txt").write_text("x")
    issues = str(shared_trace("gpu_issues.pt.trace.json.gz"))

    async def body(s):
        calls = [("open_trace", {"path": str(tmp_path / "missing.json")}),
                 ("open_trace", {"path": str(fifo)}),
                 ("findings", {"path": str(many)}),
                 ("open_trace", {"path": ""}),
                 ("top_kernels", {"path": issues, "n": -3}),
                 ("slices", {"path": issues, "t0_ns": 5, "t1_ns": 1}),
                 ("slices", {"path": issues, "t0_ns": 0, "t1_ns": "soon"}),
                 ("findings", {"path": 12}),
                 ("record", {"script": str(tmp_path / "nope.py"), "out": str(tmp_path / "b")}),
                 ("record", {"script": "x.py", "out": "", "wait": -1})]
        results = [await s.call_tool(name, args) for name, args in calls]
        # the server is still alive and answers after all of that
        results.append(await s.call_tool("top_kernels", {"path": issues, "n": 1}))
        return results

    results = with_session(body)
    *bad, good = results
    for r in bad:
        assert r.is_error
        text = r.content[0].text
        assert "Traceback (most recent call last)" not in text and len(text) < 1000, text
        if "validation error" not in text:  # the SDK's own argument check (wrong JSON types) says more
            assert len(text.splitlines()) == 1, text
    assert "FIFO" in bad[1].content[0].text
    assert not (tmp_path / "b").exists()  # a script that does not exist: refused before anything is written
    assert answer(good)["kernels"]


@pytest.mark.needs_torch
def test_record_tool_writes_only_its_bundle(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("import torch\nm = torch.nn.Linear(8, 8)\nopt = torch.optim.SGD(m.parameters(), 0.1)\n"
                      "for _ in range(8):\n    opt.zero_grad()\n    m(torch.randn(4, 8)).sum().backward()\n"
                      "    opt.step()\n")
    out = tmp_path / "bundle"
    before = set(os.listdir(tmp_path))

    async def body(s):
        return await s.call_tool("record", {"script": str(script), "out": str(out), "wait": 1, "warmup": 1,
                                            "active": 2, "timeout_s": 150})

    got = answer(with_session(body))
    assert got["bundle"] == str(out.resolve()) and got["exit_code"] == 0
    assert (out / "run.json").is_file() and got["run"]["steps"] >= 2
    assert set(os.listdir(tmp_path)) - before == {"bundle"}
